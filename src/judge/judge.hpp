#pragma once

#include <string>

#include "core/config.hpp"

namespace kbench::worker {

// The trusted side: reference programs, seeded inputs, reference outputs, comparisons and
// baseline timings. It never runs candidate code. Serves requests on fd until told to exit.
int judge_main(int fd, DeviceKind device_kind);

}  // namespace kbench::worker
