#pragma once

#include <string>

namespace kbench::worker {

// The trusted side: reference programs, seeded inputs, reference outputs, comparisons and
// baseline timings. It never runs candidate code. Serves requests on fd until told to exit.
int judge_main(int fd, const std::string& device_kind);

}  // namespace kbench::worker
