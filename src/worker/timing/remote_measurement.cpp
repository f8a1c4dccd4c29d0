#include "worker/timing/remote_measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "worker/timing/median_ci_criterion.hpp"
#include "worker/timing/statistics.hpp"
#include "worker/timing/steady_warmup.hpp"

namespace kbench::timing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

class Requests {
  public:
    Requests(RemoteCalls& calls, const RequestOverhead& overhead, bool events_only)
        : calls_(calls), overhead_(overhead), events_only_(events_only) {}

    // One request of k calls; its samples, corrected by the clock where it must. A request the
    // clock does not allow is asked again, with new inputs, up to kClockRetries times: a request
    // that waited for a CPU is the machine's doing and rarely twice in a row, a forged claim every
    // time.
    const std::vector<CallSample>& run(std::size_t& next_call, int k) {
        RequestCheck check;
        for (int attempt = 0;; ++attempt) {
            check = once(next_call, k);
            check.retries = attempt;
            if (check.covered || attempt == kClockRetries) break;
        }
        if (!check.covered)
            for (auto& s : samples_) s = {check.floor_us / k, false};
        checks_.push_back(check);
        return samples_;
    }

    const std::vector<RequestCheck>& checks() const { return checks_; }

  private:
    RequestCheck once(std::size_t& next_call, int k) {
        RequestRecord r = calls_.run(next_call, k);
        next_call += std::size_t(k);
        samples_.clear();
        bool stream_clock = calls_.has_stream_clock() && !events_only_;
        for (int i = 0; i < k; ++i) {
            double event = i < int(r.event_us.size()) ? r.event_us[std::size_t(i)] : 0.0;
            double host = i < int(r.host_us.size()) ? r.host_us[std::size_t(i)] : 0.0;
            samples_.push_back(call_sample(event, host, stream_clock));
        }
        RequestCheck check = check_request(samples_, r.wall_us, overhead_);
        if (debug_)
            std::fprintf(stderr, "request k=%d wall %.1f claimed %.1f floor %.1f allowed %.1f %s\n",
                         k, r.wall_us, check.claimed_us, check.floor_us, check.allowed_us,
                         check.covered ? "" : "UNCOVERED");
        return check;
    }

    RemoteCalls& calls_;
    RequestOverhead overhead_;
    bool events_only_;
    bool debug_ = std::getenv("KBENCH_DEBUG_CLOCK") != nullptr;
    std::vector<CallSample> samples_;
    std::vector<RequestCheck> checks_;
};

}  // namespace

RemoteMeasurement measure_remote(RemoteCalls& calls, const TimingConfig& config,
                                 const RequestOverhead& overhead, int max_batch,
                                 double target_request_us) {
    RemoteMeasurement out;
    Measurement& m = out.measurement;
    const bool kernelbench = config.protocol == Mode::kernelbench;
    Requests requests(calls, overhead, kernelbench);
    std::size_t next = 0;
    if (kernelbench) {
        m.statistic = "mean";
        for (int i = 0; i < config.kb_warmup; ++i) requests.run(next, 1);
        m.warmup_calls = config.kb_warmup;
        for (int i = 0; i < config.kb_trials; ++i) {
            double us = requests.run(next, 1).front().us;
            if (i >= config.kb_discard_first) m.samples_us.push_back(us);
        }
        m.converged = true;
    } else {
        SteadyWarmup warmup(config.warmup_min, config.warmup_max, config.warmup_max_seconds,
                            config.warmup_tolerance);
        std::vector<double> warm;
        auto warmup_start = Clock::now();
        while (!warmup.is_finished(seconds_since(warmup_start))) {
            double us = requests.run(next, 1).front().us;
            warmup.add_call(us);
            warm.push_back(us);
        }
        m.warmup_calls = warmup.calls();
        std::vector<double> last(warm.end() - std::min<std::ptrdiff_t>(3, warm.size()), warm.end());
        double typical = last.empty() ? target_request_us : median(last);
        int batch = int(std::ceil(target_request_us / std::max(typical, 0.1)));
        out.batch = std::clamp(batch, 1, std::max(1, max_batch));
        MedianCiCriterion criterion(config.min_samples, config.max_samples, config.max_seconds,
                                    config.target_rel_halfwidth);
        auto sampling_start = Clock::now();
        // At least three requests, so that the clock sees more than one.
        for (int request = 0; request < 3 || !criterion.is_finished(seconds_since(sampling_start));
             ++request) {
            for (const CallSample& s : requests.run(next, out.batch)) {
                criterion.add_sample(s.us);
                m.samples_us.push_back(s.us);
                if (s.outside_stream) ++m.outside_stream_samples;
            }
        }
        m.converged = criterion.converged();
    }
    m.calls = next;
    out.clock = judge_clock(requests.checks());
    return out;
}

}  // namespace kbench::timing
