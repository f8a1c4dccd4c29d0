#pragma once

namespace kbench::worker {

// The candidate's process, one per candidate: loads it and runs it on what the judge hands over
// through the socket on fd. Nothing it reports is trusted.
int sandbox_main(int fd);

// Imports a candidate with the GPU hidden, so that its extensions compile ahead of time.
int builder_main(int fd);

}  // namespace kbench::worker
