#pragma once

#include <cstddef>

#include "core/config.hpp"
#include "worker/timing/measurement.hpp"
#include "worker/timing/trusted_clock.hpp"

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

// The judge's own calls of the reference, timed in blocks between the candidate's requests.
class LocalCalls {
  public:
    virtual ~LocalCalls() = default;
    // Runs `count` calls, a sample each (kbench's protocol: flushed, synchronised, the stream's
    // clock unless the host saw clearly more).
    virtual std::vector<double> run(int count) = 0;
};

struct RemoteMeasurement {
    Measurement measurement;  // samples after the clock's corrections
    ClockVerdict clock;
    int batch = 1;  // calls a request while sampling
    // With a baseline to alternate with: its samples, and each round's ratio (the baseline
    // block's median over the candidate block's).
    std::vector<double> baseline_us;
    std::vector<double> round_ratios;
};

// Rounds of kbench's protocol with a baseline: at least kMinRounds; each holds kRoundRequests
// requests of the candidate's and a block of the baseline's calls about as long.
constexpr int kMinRounds = 5;
constexpr int kRoundRequests = 3;

// kbench's protocol: requests of one call until three calls agree within the warm-up tolerance,
// then requests of as many calls as make one span about target_request_us (at most max_batch)
// until the median's interval is narrow enough or a cap is reached. The reference harness's
// protocol (config.protocol kernelbench): kb_warmup calls, then kb_trials calls with the first
// kb_discard_first dropped, device events only, the mean. Either way every request is checked
// against the judge's clock, and a request whose claims it does not cover gets its samples from
// the clock instead.
// With a baseline (kbench's protocol only), sampling goes in alternating rounds, a block of the
// baseline's calls then the candidate's requests, until the ratio's interval over rounds
// (score::speedup_over_rounds) is within the target relative half-width, or a cap (samples,
// seconds) is reached.
RemoteMeasurement measure_remote(RemoteCalls& calls, const TimingConfig& config,
                                 const RequestOverhead& overhead, int max_batch,
                                 double target_request_us, LocalCalls* baseline = nullptr);

}  // namespace kbench::timing
