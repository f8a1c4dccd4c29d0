#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/sandbox_messages.hpp"

namespace kbench::worker {

// The kernels that ran on the GPU in a sandbox, from CUPTI's activity records: a subscriber
// kbench installs before the candidate is imported. Each record is placed by its start time in
// one of the windows the sandbox marks (a model call, the candidate's load, kbench's own work)
// or outside all of them. CUPTI is loaded at run time (the copy PyTorch loaded, when it did);
// where it cannot be, or kbench was built without its headers, start() says why and the
// report says that nothing was collected.
namespace kernel_activity {

enum class Window { call, load, kbench };

// Subscribes and enables kernel records; "" or why not (then every report says so).
std::string start();

// CUPTI's clock (the records' clock), or 0 when nothing is collected.
std::uint64_t now();

// A span of the sandbox's time, in CUPTI's clock.
void mark(Window window, std::uint64_t begin, std::uint64_t end);

// Flushes CUPTI's buffers and returns what ran since the last report, one row per kernel name,
// stream and window ("call", "load", "kbench", "outside").
protocol::KernelsReported report();

// The decoy check: while a Knockout lives, every launch of a kernel of these names (as the
// records give them) runs an empty kernel instead, one thread, no arguments, on the same stream
// (CUPTI's launch callbacks, driver and runtime). Nothing else changes.
class Knockout {
  public:
    explicit Knockout(const std::vector<std::string>& names);
    ~Knockout();
    Knockout(const Knockout&) = delete;
    Knockout& operator=(const Knockout&) = delete;

    // {"replaced": launches, "failed": replaced launches that returned an error, "why": why
    // nothing could be replaced, or ""}; ends the replacing.
    nlohmann::json finish();

  private:
    std::string why_;
    bool finished_ = false;
};

}  // namespace kernel_activity
}  // namespace kbench::worker
