#include "timing/measurement.hpp"

#include <chrono>

#include "timing/fixed_count_criterion.hpp"
#include "timing/median_ci_criterion.hpp"
#include "timing/statistics.hpp"
#include "timing/steady_warmup.hpp"

namespace kbench::timing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double micros_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

// Host time that start/stop/synchronise cost around nothing at all.
double measure_host_overhead_us(TimingDevice& device) {
    if (!device.has_stream_clock()) return 0;
    std::vector<double> gaps;
    for (int i = 0; i < 15; ++i) {
        device.synchronize();
        auto h0 = Clock::now();
        device.start();
        device.stop();
        device.synchronize();
        auto h1 = Clock::now();
        gaps.push_back(micros_between(h0, h1) - device.stream_elapsed_us());
    }
    return std::max(0.0, median(gaps));
}

// Whether the host saw clearly more time than the launch stream did.
bool outside_stream(double stream_us, double host_us) {
    return host_us > stream_us * 1.10 + 2.0;
}

}  // namespace

json Measurement::to_json() const {
    Summary s = summarize(samples_us);
    return json{{"samples_us", samples_us},
                {"converged", converged},
                {"warmup_calls", warmup_calls},
                {"calls", calls},
                {"outside_stream_samples", outside_stream_samples},
                {"host_overhead_us", host_overhead_us},
                {"statistic", statistic},
                {"median_us", s.median},
                {"mean_us", s.mean},
                {"min_us", s.min},
                {"p10_us", s.p10},
                {"p90_us", s.p90},
                {"n", s.n}};
}

ColdSampler::ColdSampler(TimingDevice& device)
    : device_(device), host_overhead_us_(measure_host_overhead_us(device)) {}

double ColdSampler::sample(const TimedCall& call, std::size_t index, bool* outside) {
    device_.flush_cache();
    device_.synchronize();
    auto h0 = Clock::now();
    device_.start();
    call(index);
    device_.stop();
    device_.synchronize();
    double host_us = micros_between(h0, Clock::now()) - host_overhead_us_;
    double sample = device_.stream_elapsed_us();
    bool missed = device_.has_stream_clock() && outside_stream(sample, host_us);
    if (outside) *outside = missed;
    return missed ? host_us : sample;
}

Measurement measure_cold(TimingDevice& device, const TimedCall& call, const TimingConfig& config,
                         const PrepareCall& prepare) {
    Measurement m;
    ColdSampler sampler(device);
    m.host_overhead_us = sampler.host_overhead_us();

    SteadyWarmup warmup(config.warmup_min, config.warmup_max, config.warmup_max_seconds,
                        config.warmup_tolerance);
    auto warmup_start = Clock::now();
    while (!warmup.is_finished(seconds_since(warmup_start))) {
        if (prepare) prepare(m.calls);
        device.flush_cache();
        device.synchronize();
        auto h0 = Clock::now();
        call(m.calls++);
        device.synchronize();
        warmup.add_call(micros_between(h0, Clock::now()));
    }
    m.warmup_calls = warmup.calls();

    MedianCiCriterion criterion(config.min_samples, config.max_samples, config.max_seconds,
                                config.target_rel_halfwidth);
    auto sampling_start = Clock::now();
    while (!criterion.is_finished(seconds_since(sampling_start))) {
        if (prepare) prepare(m.calls);
        bool outside = false;
        double sample = sampler.sample(call, m.calls++, &outside);
        if (outside) ++m.outside_stream_samples;
        criterion.add_sample(sample);
        m.samples_us.push_back(sample);
    }
    m.converged = criterion.converged();
    return m;
}

Measurement measure_kernelbench(TimingDevice& device, const TimedCall& call,
                                const TimingConfig& config) {
    Measurement m;
    m.statistic = "mean";
    for (int i = 0; i < config.kb_warmup; ++i) {
        call(m.calls++);
        device.synchronize();
    }
    m.warmup_calls = config.kb_warmup;
    FixedCountCriterion criterion(config.kb_trials, config.kb_discard_first);
    std::size_t taken = 0;
    while (!criterion.is_finished(0)) {
        device.synchronize();
        device.flush_cache();
        device.start();
        call(m.calls++);
        device.stop();
        device.synchronize();
        double sample = device.stream_elapsed_us();
        criterion.add_sample(sample);
        if (taken++ >= criterion.discard_first()) m.samples_us.push_back(sample);
    }
    m.converged = true;
    return m;
}

Measurement measure(TimingDevice& device, const TimedCall& call, const TimingConfig& config,
                    const PrepareCall& prepare) {
    return config.protocol == Mode::kernelbench ? measure_kernelbench(device, call, config)
                                                : measure_cold(device, call, config, prepare);
}

}  // namespace kbench::timing
