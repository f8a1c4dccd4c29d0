#pragma once

#include <string>

#include "core/config.hpp"

namespace kbench::worker {

// The candidate's process, one per candidate: loads it and runs it on what the judge hands over
// through the socket on fd. Nothing it reports is trusted. On a GPU (device_kind "cuda") it
// starts CUDA before it says hello, before any code of the candidate's exists.
int sandbox_main(int fd, DeviceKind device_kind);

// Imports a candidate with the GPU hidden, so that its extensions compile ahead of time.
int builder_main(int fd);

}  // namespace kbench::worker
