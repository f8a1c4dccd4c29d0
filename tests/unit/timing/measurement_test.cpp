#include "timing/measurement.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "timing/cpu_timing_device.hpp"
#include "timing/statistics.hpp"

namespace kbench::timing {
namespace {

void spin_for(std::chrono::microseconds duration) {
    auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

// A device whose launch stream sees only part of the work, as with a side-stream kernel: its
// stream clock reports a fixed small time while the host clock sees the whole call.
class PartialStreamDevice final : public TimingDevice {
  public:
    void flush_cache() override {}
    void synchronize() override {}
    void start() override { start_ = std::chrono::steady_clock::now(); }
    void stop() override {}
    double stream_elapsed_us() override { return 1.0; }
    bool has_stream_clock() const override { return true; }

  private:
    std::chrono::steady_clock::time_point start_;
};

}  // namespace

TEST(Measurement, ColdProtocolMeasuresRealWork) {
    CpuTimingDevice device(1 << 20);
    TimingConfig config;
    config.max_seconds = 2.0;
    std::vector<std::size_t> calls;
    Measurement m = measure_cold(
        device,
        [&](std::size_t i) {
            calls.push_back(i);
            spin_for(std::chrono::microseconds(2000));
        },
        config);
    ASSERT_GE(m.samples_us.size(), 10u);
    EXPECT_GE(m.warmup_calls, 3);
    EXPECT_EQ(calls.size(), m.calls);
    EXPECT_EQ(calls.back(), m.calls - 1);  // the call counter rotates inputs
    double mid = median(m.samples_us);
    EXPECT_GT(mid, 1900.0);
    EXPECT_LT(mid, 4000.0);
}

TEST(Measurement, PrepareRunsBeforeEveryCallOutsideTheTimedWindow) {
    CpuTimingDevice device(1 << 16);
    TimingConfig config;
    config.max_seconds = 1.0;
    std::vector<std::size_t> prepared, called;
    Measurement m = measure_cold(
        device,
        [&](std::size_t i) {
            ASSERT_FALSE(prepared.empty());
            EXPECT_EQ(prepared.back(), i) << "each call gets its own preparation";
            called.push_back(i);
            spin_for(std::chrono::microseconds(300));
        },
        config,
        [&](std::size_t i) {
            prepared.push_back(i);
            spin_for(std::chrono::microseconds(3000));  // ten times the call: must not count
        });
    EXPECT_EQ(prepared, called);
    EXPECT_LT(median(m.samples_us), 2000.0) << "preparation time leaked into the samples";
}

TEST(Measurement, HostClockCatchesWorkTheStreamMissed) {
    PartialStreamDevice device;
    TimingConfig config;
    config.max_samples = 12;
    Measurement m = measure_cold(
        device, [](std::size_t) { spin_for(std::chrono::microseconds(3000)); }, config);
    EXPECT_EQ(m.outside_stream_samples, int(m.samples_us.size()));
    EXPECT_GT(median(m.samples_us), 2500.0) << "timed at a fraction of its cost";
}

TEST(Measurement, KernelBenchProtocolIsFixed) {
    CpuTimingDevice device(1 << 16);
    TimingConfig config;
    config.protocol = Mode::kernelbench;
    config.kb_trials = 20;
    std::size_t calls = 0;
    Measurement m = measure(
        device, [&](std::size_t) { ++calls; }, config);
    EXPECT_EQ(m.samples_us.size(), 20u);
    EXPECT_EQ(calls, std::size_t(config.kb_warmup + 20 + config.kb_discard_first));
    EXPECT_EQ(m.statistic, "mean");
    EXPECT_TRUE(m.converged);
}

TEST(Measurement, JsonCarriesSummaryAndSamples) {
    Measurement m;
    m.samples_us = {3, 1, 2};
    json j = m.to_json();
    EXPECT_EQ(j["n"], 3);
    EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), 2.0);
    EXPECT_EQ(j["samples_us"].size(), 3u);
}

}  // namespace kbench::timing
