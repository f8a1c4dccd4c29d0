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

struct RemoteMeasurement {
    Measurement measurement;  // samples after the clock's corrections
    ClockVerdict clock;
    int batch = 1;  // calls a request while sampling
};

// kbench's protocol: requests of one call until three calls agree within the warm-up tolerance,
// then requests of as many calls as make one span about target_request_us (at most max_batch)
// until the median's interval is narrow enough or a cap is reached. The reference harness's
// protocol (config.protocol kernelbench): kb_warmup calls, then kb_trials calls with the first
// kb_discard_first dropped, device events only, the mean. Either way every request is checked
// against the judge's clock, and a request whose claims it does not cover gets its samples from
// the clock instead.
RemoteMeasurement measure_remote(RemoteCalls& calls, const TimingConfig& config,
                                 const RequestOverhead& overhead, int max_batch,
                                 double target_request_us);

}  // namespace kbench::timing
