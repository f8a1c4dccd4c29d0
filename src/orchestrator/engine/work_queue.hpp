#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kbench::orchestrator {

// Hands out work items to devices, one at a time and each once, in the given order except that
// a device stays on its current problem while it has items (its judge keeps that problem's
// reference outputs), and a device looking for a new problem prefers one no other device is on.
// Only when every pending item belongs to another device's problem does it share that problem:
// an idle GPU costs more than a second copy of the reference outputs. Given what is ready (a
// candidate whose build is done), ready items come first, by the same rules: a device that waits
// for one build while another is done idles for nothing.
class WorkQueue {
  public:
    using Ready = std::function<bool(std::size_t item)>;

    // problems[i]: the problem (any key, e.g. its code hash) of item i.
    WorkQueue(std::vector<std::string> problems, std::size_t devices);

    // The next item for this device, or nothing when all are handed out.
    std::optional<std::size_t> next(std::size_t device, const Ready& ready = {});
    // The next ready item for this device by the same rules, or nothing when none is ready.
    std::optional<std::size_t> next_ready(std::size_t device, const Ready& ready);
    // Whether a pending item is ready.
    bool any_ready(const Ready& ready) const;
    // An item the device could not finish goes back to the front, for any device.
    void give_back(std::size_t device, std::size_t item);
    std::size_t pending() const;

  private:
    std::size_t take(std::deque<std::size_t>::iterator it, std::size_t device);
    // The item the rules pick among those `eligible` allows; end() when none.
    std::deque<std::size_t>::iterator pick(std::size_t device,
                                           const std::function<bool(std::size_t)>& eligible);

    std::vector<std::string> problems_;
    std::vector<std::optional<std::string>> current_;  // each device's problem
    std::deque<std::size_t> pending_;
    mutable std::mutex mutex_;
};

// Runs work(i) for every i below `count`, in order, on `width` threads of which only `first`
// take items until one item's work returns true (a build done, say); then all of them do. Once
// `stop` is set no item is started. Returns when every thread is done.
void run_in_waves(std::size_t count, int width, int first,
                  const std::function<bool(std::size_t)>& work, const std::atomic<bool>& stop);

}  // namespace kbench::orchestrator
