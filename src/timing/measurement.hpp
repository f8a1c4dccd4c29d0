#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/config.hpp"
#include "timing/timing_device.hpp"

namespace kbench::timing {

// Runs the timed function once; the argument counts calls, so that inputs can rotate.
using TimedCall = std::function<void(std::size_t call)>;
// Runs before each call of kbench's protocol, outside the timed window (fresh inputs, say).
using PrepareCall = std::function<void(std::size_t call)>;

struct Measurement {
    std::vector<double> samples_us;
    bool converged = false;
    int warmup_calls = 0;
    std::size_t calls = 0;
    // Samples whose host time, across the device-wide synchronisation, exceeded the launch
    // stream's clock: work that the stream's events did not see (another stream, the host).
    int outside_stream_samples = 0;
    double host_overhead_us = 0;
    std::string statistic = "median";

    json to_json() const;
};

// One sample of kbench's protocol at a time, for whoever interleaves samples with other work:
// flush the cache, synchronise, mark the stream around the call, synchronise the whole device,
// and keep the larger of the stream clock and the host clock (less its measured overhead).
class ColdSampler {
  public:
    explicit ColdSampler(TimingDevice& device);  // measures the host clock's overhead
    // outside: set when the host clock was kept (work the stream's events missed).
    double sample(const TimedCall& call, std::size_t index, bool* outside = nullptr);
    double host_overhead_us() const { return host_overhead_us_; }

  private:
    TimingDevice& device_;
    double host_overhead_us_ = 0;
};

// kbench's protocol: warm up until steady; per sample flush the cache, synchronise, mark the
// stream around the call, synchronise the whole device, and keep the larger of the stream clock
// and the host clock (less its measured overhead); stop on the configured criterion.
Measurement measure_cold(TimingDevice& device, const TimedCall& call, const TimingConfig& config,
                         const PrepareCall& prepare = {});

// The reference harness's protocol: fixed warm-ups, a fixed sample count with the first dropped,
// events on the current stream only, the mean as headline.
Measurement measure_kernelbench(TimingDevice& device, const TimedCall& call,
                                const TimingConfig& config);

// prepare applies to kbench's protocol only; the reference harness's has no such step.
Measurement measure(TimingDevice& device, const TimedCall& call, const TimingConfig& config,
                    const PrepareCall& prepare = {});

}  // namespace kbench::timing
