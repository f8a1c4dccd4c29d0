#pragma once

#include <string>

namespace kbench::worker {

// The untrusted side, one process per candidate: loads it, runs it on inputs the judge shares,
// copies its outputs into the judge's buffers and runs the timing protocol.
int sandbox_main(int fd, const std::string& device_kind);

// Imports a candidate with the GPU hidden, so that its extensions compile into the cache.
int builder_main(int fd);

}  // namespace kbench::worker
