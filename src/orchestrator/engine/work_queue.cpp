#include "orchestrator/engine/work_queue.hpp"

#include <algorithm>
#include <condition_variable>
#include <stdexcept>
#include <thread>

namespace kbench::orchestrator {

WorkQueue::WorkQueue(std::vector<std::string> problems, std::size_t devices)
    : problems_(std::move(problems)), current_(devices) {
    for (std::size_t i = 0; i < problems_.size(); ++i) pending_.push_back(i);
}

std::size_t WorkQueue::take(std::deque<std::size_t>::iterator it, std::size_t device) {
    std::size_t item = *it;
    pending_.erase(it);
    current_[device] = problems_[item];
    return item;
}

std::deque<std::size_t>::iterator WorkQueue::pick(
    std::size_t device, const std::function<bool(std::size_t)>& eligible) {
    if (const auto& mine = current_[device]) {
        auto it = std::find_if(pending_.begin(), pending_.end(),
                               [&](std::size_t i) { return problems_[i] == *mine && eligible(i); });
        if (it != pending_.end()) return it;
    }
    auto taken_by_other = [&](std::size_t i) {
        for (std::size_t d = 0; d < current_.size(); ++d)
            if (d != device && current_[d] == problems_[i]) return true;
        return false;
    };
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](std::size_t i) { return eligible(i) && !taken_by_other(i); });
    if (it != pending_.end()) return it;
    return std::find_if(pending_.begin(), pending_.end(), eligible);
}

std::optional<std::size_t> WorkQueue::next(std::size_t device, const Ready& ready) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (device >= current_.size()) throw std::out_of_range("WorkQueue: no such device");
    if (pending_.empty()) return std::nullopt;
    if (ready) {
        auto it = pick(device, ready);
        if (it != pending_.end()) return take(it, device);
    }
    return take(pick(device, [](std::size_t) { return true; }), device);
}

std::optional<std::size_t> WorkQueue::next_ready(std::size_t device, const Ready& ready) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (device >= current_.size()) throw std::out_of_range("WorkQueue: no such device");
    auto it = pick(device, ready);
    if (it == pending_.end()) return std::nullopt;
    return take(it, device);
}

bool WorkQueue::any_ready(const Ready& ready) const {
    std::lock_guard<std::mutex> guard(mutex_);
    return std::any_of(pending_.begin(), pending_.end(), ready);
}

void WorkQueue::give_back(std::size_t device, std::size_t item) {
    std::lock_guard<std::mutex> guard(mutex_);
    pending_.push_front(item);
    if (device < current_.size()) current_[device].reset();
}

std::size_t WorkQueue::pending() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return pending_.size();
}

void run_in_waves(std::size_t count, int width, int first,
                  const std::function<bool(std::size_t)>& work, const std::atomic<bool>& stop) {
    std::size_t next = 0;
    bool one_done = false;
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::thread> threads;
    for (int t = 0; t < width; ++t)
        threads.emplace_back([&, t] {
            if (t >= first) {
                std::unique_lock<std::mutex> lock(mutex);
                changed.wait(lock, [&] { return one_done || next >= count || stop; });
            }
            for (;;) {
                std::size_t item;
                {
                    std::lock_guard<std::mutex> guard(mutex);
                    if (next >= count || stop) break;
                    item = next++;
                }
                bool done = work(item);
                std::lock_guard<std::mutex> guard(mutex);
                if (done && !one_done) {
                    one_done = true;
                    changed.notify_all();
                }
            }
            // Threads still waiting see that nothing is left.
            std::lock_guard<std::mutex> guard(mutex);
            changed.notify_all();
        });
    for (auto& t : threads) t.join();
}

}  // namespace kbench::orchestrator
