#include "worker/timing/remote_measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "score/speedup.hpp"
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
                         check.covered     ? ""
                         : check.explained ? "UNCOVERED"
                                           : "UNCOVERED UNEXPLAINED");
        return check;
    }

    RemoteCalls& calls_;
    RequestOverhead overhead_;
    bool events_only_;
    bool debug_ = std::getenv("KBENCH_DEBUG_CLOCK") != nullptr;
    std::vector<CallSample> samples_;
    std::vector<RequestCheck> checks_;
};

double relative_halfwidth(const std::vector<double>& ratios) {
    if (ratios.size() < 2) return 1e9;
    score::SpeedupEstimate e = score::speedup_over_rounds(ratios);
    return std::max(e.ci_hi / e.speedup - 1, 1 - e.ci_lo / e.speedup);
}

// Alternating rounds: the baseline's block, then kRoundRequests of the candidate's requests.
void sample_in_rounds(Requests& requests, std::size_t& next, LocalCalls& baseline,
                      const TimingConfig& config, RemoteMeasurement& out, double candidate_us) {
    Measurement& m = out.measurement;
    // The reference warmed up too, and its typical call, so that its block spans about as long
    // as the candidate's requests.
    std::vector<double> warm = baseline.run(std::max(3, config.warmup_min));
    double reference_us = std::max(median(warm), 0.1);
    double block_us = kRoundRequests * out.batch * std::max(candidate_us, 0.1);
    int block = std::clamp(int(std::lround(block_us / reference_us)), 3, 64);
    auto start = Clock::now();
    for (;;) {
        std::vector<double> base = baseline.run(block);
        std::vector<double> mine;
        for (int r = 0; r < kRoundRequests; ++r)
            for (const CallSample& s : requests.run(next, out.batch)) {
                mine.push_back(s.us);
                m.samples_us.push_back(s.us);
                if (s.outside_stream) ++m.outside_stream_samples;
            }
        out.baseline_us.insert(out.baseline_us.end(), base.begin(), base.end());
        double b = median(base), c = median(mine);
        if (b > 0 && c > 0) out.round_ratios.push_back(b / c);
        bool enough = int(out.round_ratios.size()) >= kMinRounds &&
                      int(m.samples_us.size()) >= config.min_samples;
        m.converged = enough && relative_halfwidth(out.round_ratios) <= config.target_rel_halfwidth;
        if (m.converged) return;
        double spent = seconds_since(start);
        if (enough &&
            (int(m.samples_us.size()) >= config.max_samples || spent >= config.max_seconds))
            return;
        // Rounds without a ratio (a clock that read zero) must not keep it going for ever.
        if (spent >= 3 * config.max_seconds) return;
    }
}

}  // namespace

RemoteMeasurement measure_remote(RemoteCalls& calls, const TimingConfig& config,
                                 const RequestOverhead& overhead, int max_batch,
                                 double target_request_us, LocalCalls* baseline) {
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
        if (baseline) {
            sample_in_rounds(requests, next, *baseline, config, out, typical);
            m.calls = next;
            out.clock = judge_clock(requests.checks());
            return out;
        }
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
