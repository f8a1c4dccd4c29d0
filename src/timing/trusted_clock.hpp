#pragma once

#include <string>
#include <vector>

namespace kbench::timing {

// One request of k calls, as the judge saw it. The sandbox claims a time per call; the judge's
// own clock ran from before the inputs were handed over until the outputs were taken.
struct RequestRecord {
    std::vector<double> event_us;  // claimed: device events around each call (host clock on CPU)
    std::vector<double> host_us;   // claimed: the sandbox's host clock across each call and a
                                   // device-wide synchronisation
    double wall_us = 0;            // the judge's clock
    // Within wall_us, measured each time: the judge's own reading of the outputs (on a CPU;
    // else 0, and it is part of the protocol's cost), and the time the sandbox's main thread
    // waited for a CPU (the kernel's count: a busy machine's doing, or the sandbox's own threads').
    double judge_work_us = 0;
    double sandbox_waited_us = 0;
    double judge_waited_us = 0;  // the judge's own waits for a CPU in the whole span
};

// What a request costs besides its calls, measured with null requests (the same path with the
// model call left out) before the candidate was loaded: fixed_us + k * per_call_us, give or
// take spread_us.
struct RequestOverhead {
    double fixed_us = 0;
    double per_call_us = 0;
    double spread_us = 0;

    double at(int calls) const { return fixed_us + calls * per_call_us; }
};

// Fits the overhead from null requests of one call and of `many` calls each: each value is a
// request's wall time less what its (empty) calls claimed.
RequestOverhead fit_overhead(const std::vector<double>& one_call_us,
                             const std::vector<double>& many_calls_us, int many);

// A call's sample: the device's time, unless the host saw clearly more across a device-wide
// synchronisation, which is work the launch stream's events missed (then the host's time).
struct CallSample {
    double us = 0;
    bool outside_stream = false;
};
CallSample call_sample(double event_us, double host_us, bool has_stream_clock);

// A request against the judge's clock. The claimed total may fall short of what the clock
// allows (floor = wall - the judge's own reading - overhead(k)) by at most
//     allowed = max(10% of floor, 10 us);
// a request that falls shorter is not covered by its claims: a call of 100 us or more whose
// claim is over 10% short of the clock is not believed.
// Times a request the clock does not allow is asked again, with new inputs, before it counts as
// not covered.
constexpr int kClockRetries = 2;

// A request that is not covered may still be explained by the machine: a real call leaves
// caches, TLBs and PyTorch's threads in another state than the null calls that measured the
// protocol, and a busy machine slows the protocol as a whole. A shortfall is explained while it
// is within allowed + overhead(k) + 3 x the overhead's spread (the protocol costing twice what it
// was measured at) + the time the sandbox and the judge waited for a CPU (the kernel's counts),
// or while the claims are at least half
// of the floor; a request short of all of that is a claim the machine cannot explain. Either way
// its samples are the clock's: an explained request costs the candidate its claims, never a
// rejection.
struct RequestCheck {
    int calls = 0;
    double claimed_us = 0;  // sum of the call samples
    double floor_us = 0;    // wall - overhead(calls), at least 0
    double allowed_us = 0;
    double overhead_us = 0;  // overhead(calls)
    double sandbox_waited_us = 0;
    bool covered = true;
    bool explained = true;
    int retries = 0;  // times the request was asked again before this answer
};
RequestCheck check_request(const std::vector<CallSample>& samples, const RequestRecord& record,
                           const RequestOverhead& overhead);

// The clock's verdict on a measurement: requests whose claims it does not allow (after being
// asked again) have their samples replaced by its own (floor / calls); when requests that the
// machine cannot explain either hold more than half of all calls, the claims as a whole are not
// to be believed.
struct ClockVerdict {
    int requests = 0;
    int uncovered = 0;
    int unexplained = 0;
    int retried = 0;                 // requests asked again at least once
    double sandbox_waited_us = 0;    // over the uncovered requests
    double claimed_per_call_us = 0;  // medians over requests
    double floor_per_call_us = 0;
    bool refuted = false;
    std::string detail;  // the figures, for a verdict's reason
};
ClockVerdict judge_clock(const std::vector<RequestCheck>& checks);

}  // namespace kbench::timing
