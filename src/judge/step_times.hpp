#pragma once

#include <chrono>
#include <string>

#include "protocol/judge_messages.hpp"

namespace kbench::worker {

// Seconds spent in each step of one request to the judge (inputs, the sandbox's requests,
// checks, ...), added up over the request: what `-v` shows of where an evaluation's time goes.
class StepTimes {
  public:
    using Clock = std::chrono::steady_clock;

    class Scope {
      public:
        Scope(StepTimes& times, const char* name) : times_(times), name_(name) {}
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;
        ~Scope() {
            times_.add(name_, std::chrono::duration<double>(Clock::now() - start_).count());
        }

      private:
        StepTimes& times_;
        const char* name_;
        Clock::time_point start_ = Clock::now();
    };

    void add(const std::string& name, double seconds) { seconds_[name] += seconds; }
    // Another's steps, each name prefixed.
    void add_all(const StepTimes& other, const std::string& prefix) {
        for (const auto& [name, s] : other.seconds_) seconds_[prefix + name] += s;
    }
    void clear() { seconds_.clear(); }
    const protocol::StepSeconds& seconds() const { return seconds_; }

  private:
    protocol::StepSeconds seconds_;
};

}  // namespace kbench::worker
