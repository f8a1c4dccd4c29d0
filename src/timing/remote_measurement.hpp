#pragma once

#include <cstddef>

#include "core/config.hpp"
#include "timing/measurement.hpp"
#include "timing/trusted_clock.hpp"

namespace kbench::timing {

// The judge's side of timed requests to a sandbox: each request hands over fresh inputs for
// `count` calls and takes their outputs, on the judge's clock.
class RemoteCalls {
  public:
    virtual ~RemoteCalls() = default;
    // Runs calls first_call .. first_call + count - 1 in one request.
    virtual RequestRecord run(std::size_t first_call, int count) = 0;
    // True when the sandbox's event times are a device clock distinct from its host clock.
    virtual bool has_stream_clock() const = 0;
};

// The baseline's side of alternating rounds: the reference, served by a sandbox of its own over
// the same protocol as the candidate's (the same requests, buffers and clock), so that whatever
// the path costs, it costs both sides alike.
struct RemoteBaseline {
    RemoteCalls& calls;
    RequestOverhead overhead;  // the protocol's cost as measured with the reference's sandbox
    int max_batch = 1;
};

struct RemoteMeasurement {
    Measurement measurement;  // samples after the clock's corrections
    ClockVerdict clock;
    int batch = 1;  // calls a request while sampling
    // With a baseline to alternate with: its samples, and each round's ratio (the median of the
    // baseline's samples in the round over the candidate's).
    std::vector<double> baseline_us;
    std::vector<double> round_ratios;
    int baseline_batch = 1;
    int baseline_warmup_calls = 0;
    std::size_t baseline_calls = 0;
    int baseline_outside_stream_samples = 0;
    // Seconds each step took: the candidate's warm-up, the baseline's, sampling (rounds).
    double warmup_s = 0;
    double baseline_warmup_s = 0;
    double sampling_s = 0;
};

// Rounds of kbench's protocol with a baseline: at least kMinRounds; each holds kRoundRequests
// requests of each side, one of the baseline's then one of the candidate's (the other way round
// in every other round).
constexpr int kMinRounds = 5;
constexpr int kRoundRequests = 3;

// kbench's protocol: requests of one call until three calls agree within the warm-up tolerance,
// then requests of as many calls as make one span about target_request_us (at most max_batch)
// until the median's interval is narrow enough or a cap is reached. The reference harness's
// protocol (config.protocol kernelbench): kb_warmup calls, then kb_trials calls with the first
// kb_discard_first dropped, device events only, the mean. Either way every request is checked
// against the judge's clock, and a request whose claims it does not cover gets its samples from
// the clock instead.
// With a baseline (kbench's protocol only), both sides warm up the same way, then sampling goes
// in rounds of requests alternating one to one, until the ratio's interval over rounds
// (timing::speedup_over_rounds) is within the target relative half-width, or a cap (samples,
// seconds) is reached.
RemoteMeasurement measure_remote(RemoteCalls& calls, const TimingConfig& config,
                                 const RequestOverhead& overhead, int max_batch,
                                 double target_request_us, RemoteBaseline* baseline = nullptr);

}  // namespace kbench::timing
