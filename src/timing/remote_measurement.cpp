#include "timing/remote_measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/settings.hpp"
#include "timing/median_ci_criterion.hpp"
#include "timing/speedup.hpp"
#include "timing/statistics.hpp"
#include "timing/steady_warmup.hpp"

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
        RequestCheck check = check_request(samples_, r, overhead_);
        if (debug_)
            std::fprintf(stderr,
                         "request k=%d wall %.1f (judge waited %.1f) judge's reading %.1f sandbox "
                         "waited %.1f claimed "
                         "%.1f floor %.1f allowed %.1f %s\n",
                         k, r.wall_us, r.judge_waited_us, r.judge_work_us, r.sandbox_waited_us,
                         check.claimed_us, check.floor_us, check.allowed_us,
                         check.covered     ? ""
                         : check.explained ? "UNCOVERED"
                                           : "UNCOVERED UNEXPLAINED");
        return check;
    }

    RemoteCalls& calls_;
    RequestOverhead overhead_;
    bool events_only_;
    bool debug_ = setting("KBENCH_DEBUG_CLOCK").has_value();
    std::vector<CallSample> samples_;
    std::vector<RequestCheck> checks_;
};

double relative_halfwidth(const std::vector<double>& ratios) {
    if (ratios.size() < 2) return 1e9;
    timing::SpeedupEstimate e = timing::speedup_over_rounds(ratios);
    return std::max(e.ci_hi / e.speedup - 1, 1 - e.ci_lo / e.speedup);
}

// Whether the speedup's whole interval over these rounds (the verdict's) lies below the config's
// stop_below (never for 0).
bool wholly_below(const std::vector<double>& ratios, const TimingConfig& config) {
    if (config.stop_below <= 0 || ratios.size() < 2) return false;
    return timing::speedup_over_rounds(ratios, config.rounds_systematic).ci_hi < config.stop_below;
}

// One side's warm-up (kbench's protocol): requests of one call until three agree within the
// tolerance; then the batch that makes a request span about target_us.
struct Warm {
    int calls = 0;
    int batch = 1;
};

Warm warm_up(Requests& requests, std::size_t& next, const TimingConfig& config, double target_us,
             int max_batch) {
    SteadyWarmup warmup(config.warmup_min, config.warmup_max, config.warmup_max_seconds,
                        config.warmup_tolerance);
    std::vector<double> warm;
    auto start = Clock::now();
    while (!warmup.is_finished(seconds_since(start))) {
        double us = requests.run(next, 1).front().us;
        warmup.add_call(us);
        warm.push_back(us);
    }
    std::vector<double> last(warm.end() - std::min<std::ptrdiff_t>(3, warm.size()), warm.end());
    double typical = last.empty() ? target_us : median(last);
    int batch = int(std::ceil(target_us / std::max(typical, 0.1)));
    return {warmup.calls(), std::clamp(batch, 1, std::max(1, max_batch))};
}

// Alternating rounds: kRoundRequests requests of each side, one to one, the baseline's first in
// even rounds and the candidate's first in odd ones.
void sample_in_rounds(Requests& requests, std::size_t& next, Requests& base_requests,
                      std::size_t& base_next, const TimingConfig& config, RemoteMeasurement& out) {
    Measurement& m = out.measurement;
    auto start = Clock::now();
    for (int round = 0;; ++round) {
        std::vector<double> base, mine;
        auto baseline_request = [&] {
            for (const CallSample& s : base_requests.run(base_next, out.baseline_batch)) {
                base.push_back(s.us);
                if (s.outside_stream) ++out.baseline_outside_stream_samples;
            }
        };
        auto candidate_request = [&] {
            for (const CallSample& s : requests.run(next, out.batch)) {
                mine.push_back(s.us);
                m.samples_us.push_back(s.us);
                if (s.outside_stream) ++m.outside_stream_samples;
            }
        };
        for (int r = 0; r < kRoundRequests; ++r) {
            if (round % 2 == 0) {
                baseline_request();
                candidate_request();
            } else {
                candidate_request();
                baseline_request();
            }
        }
        out.baseline_us.insert(out.baseline_us.end(), base.begin(), base.end());
        double b = median(base), c = median(mine);
        if (b > 0 && c > 0) out.round_ratios.push_back(b / c);
        bool enough = int(out.round_ratios.size()) >= kMinRounds &&
                      int(m.samples_us.size()) >= config.min_samples;
        m.converged =
            enough && (relative_halfwidth(out.round_ratios) <= config.target_rel_halfwidth ||
                       wholly_below(out.round_ratios, config));
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
                                 double target_request_us, RemoteBaseline* baseline) {
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
        auto warm_start = Clock::now();
        Warm warm = warm_up(requests, next, config, target_request_us, max_batch);
        out.warmup_s = seconds_since(warm_start);
        m.warmup_calls = warm.calls;
        out.batch = warm.batch;
        if (baseline) {
            // The baseline's own warm-up, on its own clock check and batch.
            Requests base_requests(baseline->calls, baseline->overhead, false);
            std::size_t base_next = 0;
            auto base_start = Clock::now();
            Warm base_warm =
                warm_up(base_requests, base_next, config, target_request_us, baseline->max_batch);
            out.baseline_warmup_s = seconds_since(base_start);
            out.baseline_warmup_calls = base_warm.calls;
            out.baseline_batch = base_warm.batch;
            auto rounds_start = Clock::now();
            sample_in_rounds(requests, next, base_requests, base_next, config, out);
            out.sampling_s = seconds_since(rounds_start);
            out.baseline_calls = base_next;
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
        out.sampling_s = seconds_since(sampling_start);
    }
    m.calls = next;
    out.clock = judge_clock(requests.checks());
    return out;
}

}  // namespace kbench::timing
