#include "timing/trusted_clock.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "timing/statistics.hpp"

namespace kbench::timing {
namespace {

// Median absolute deviation scaled to a normal distribution's standard deviation.
double robust_spread(const std::vector<double>& values) {
    if (values.size() < 2) return 0;
    double m = median(values);
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::abs(v - m));
    return 1.4826 * median(deviations);
}

std::string figure(double us) {
    char text[32];
    if (us >= 1000)
        std::snprintf(text, sizeof text, "%.3f ms", us / 1000);
    else
        std::snprintf(text, sizeof text, "%.1f us", us);
    return text;
}

}  // namespace

RequestOverhead fit_overhead(const std::vector<double>& one_call_us,
                             const std::vector<double>& many_calls_us, int many) {
    RequestOverhead o;
    double one = one_call_us.empty() ? 0 : median(one_call_us);
    o.spread_us = robust_spread(one_call_us);
    if (many > 1 && !many_calls_us.empty()) {
        double more = median(many_calls_us);
        o.per_call_us = std::max(0.0, (more - one) / double(many - 1));
        o.spread_us = std::max(o.spread_us, robust_spread(many_calls_us) / std::sqrt(double(many)));
    } else {
        o.per_call_us = one;  // without a batch measured, a call costs what a request does
    }
    o.fixed_us = std::max(0.0, one - o.per_call_us);
    return o;
}

CallSample call_sample(double event_us, double host_us, bool has_stream_clock) {
    if (!has_stream_clock) return {event_us, false};
    // The host's time includes launching and synchronising: only clearly more is outside work.
    if (host_us > event_us * 1.10 + 20.0) return {host_us, true};
    return {event_us, false};
}

RequestCheck check_request(const std::vector<CallSample>& samples, const RequestRecord& record,
                           const RequestOverhead& overhead) {
    RequestCheck c;
    c.calls = int(samples.size());
    for (const auto& s : samples) c.claimed_us += s.us;
    c.overhead_us = overhead.at(c.calls);
    c.sandbox_waited_us = record.sandbox_waited_us;
    c.floor_us = std::max(0.0, record.wall_us - record.judge_work_us - c.overhead_us);
    c.allowed_us = std::max(0.10 * c.floor_us, 10.0);
    c.covered = c.claimed_us >= c.floor_us - c.allowed_us;
    double machine_us =
        c.overhead_us + 3 * overhead.spread_us + record.sandbox_waited_us + record.judge_waited_us;
    c.explained = c.covered || c.claimed_us >= c.floor_us - c.allowed_us - machine_us ||
                  c.claimed_us >= 0.5 * c.floor_us;
    return c;
}

ClockVerdict judge_clock(const std::vector<RequestCheck>& checks) {
    ClockVerdict v;
    v.requests = int(checks.size());
    std::vector<double> claimed, floors;
    int calls = 0, unexplained_calls = 0;
    for (const auto& c : checks) {
        calls += c.calls;
        if (c.retries > 0) ++v.retried;
        if (!c.covered) {
            ++v.uncovered;
            v.sandbox_waited_us += c.sandbox_waited_us;
        }
        if (!c.explained) {
            ++v.unexplained;
            unexplained_calls += c.calls;
        }
        if (c.calls == 0) continue;
        claimed.push_back(c.claimed_us / c.calls);
        floors.push_back(c.floor_us / c.calls);
    }
    if (claimed.empty()) return v;
    v.claimed_per_call_us = median(claimed);
    v.floor_per_call_us = median(floors);
    // Claims are replaced where the clock does not allow them, so a forger gains nothing by the
    // requests it forges; what it earns is a rejection once claims that the machine cannot
    // explain are most of its calls. Shortfalls within what a busy machine does to the protocol
    // are the machine's doing as often as not: their samples come from the clock, no more.
    v.refuted = unexplained_calls * 2 > calls;
    v.detail = std::to_string(v.unexplained) + " of " + std::to_string(v.requests) +
               " timed requests took longer on the judge's clock than the candidate's process "
               "claimed, by more than the protocol's own cost could explain, each asked " +
               std::to_string(1 + kClockRetries) + " times (" + std::to_string(v.uncovered) +
               " fell short at all): it claimed " + figure(v.claimed_per_call_us) +
               " a call (median), the judge's clock allows no "
               "less than " +
               figure(v.floor_per_call_us) +
               " (its wall time less its own reading of the outputs and the protocol's own cost, "
               "measured before the candidate was loaded)";
    if (v.sandbox_waited_us > 0)
        v.detail += "; the sandbox's main thread waited " + figure(v.sandbox_waited_us) +
                    " for a CPU in those requests";
    return v;
}

}  // namespace kbench::timing
