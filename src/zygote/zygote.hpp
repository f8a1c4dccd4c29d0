#pragma once

#include <string>

#include "core/config.hpp"

namespace kbench::worker {

// Holds an imported torch with CUDA not yet initialised, and forks sandboxes and builders from
// it on request, so that each starts in milliseconds with a fresh CUDA context of its own.
int zygote_main(int fd, DeviceKind device_kind);

}  // namespace kbench::worker
