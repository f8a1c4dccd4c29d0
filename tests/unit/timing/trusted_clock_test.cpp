// The judge's clock against a sandbox's claimed times: an honest candidate keeps its samples,
// one that claims less than the clock allows is refuted, work off the launch stream is counted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "timing/remote_measurement.hpp"
#include "timing/run_delay.hpp"
#include "timing/speedup.hpp"
#include "timing/statistics.hpp"

namespace kbench::timing {
namespace {

// A sandbox simulated against a real clock model: each call truly takes true_us, the protocol
// costs overhead (with noise), and the sandbox claims claim(true_us) per call on the requests
// it picks (forge_fraction of them).
class FakeSandbox : public RemoteCalls {
  public:
    FakeSandbox(double true_us, RequestOverhead overhead, double claim_factor,
                bool side_stream = false, double forge_fraction = 1.0)
        : true_us_(true_us),
          overhead_(overhead),
          claim_factor_(claim_factor),
          side_stream_(side_stream),
          forge_fraction_(forge_fraction) {}

    RequestRecord run(std::size_t, int count) override {
        RequestRecord r;
        std::normal_distribution<double> noise(0, overhead_.spread_us);
        std::uniform_real_distribution<double> coin(0, 1);
        bool forge = coin(rng_) < forge_fraction_;
        r.wall_us = overhead_.at(count) + std::abs(noise(rng_)) + (forge ? delay_forged_us_ : 0);
        for (int i = 0; i < count; ++i) {
            double t = true_us_ * (1 + 0.01 * noise(rng_) / std::max(1.0, overhead_.spread_us));
            r.wall_us += t;
            double claimed = forge ? t * claim_factor_ : t;
            r.event_us.push_back(side_stream_ ? t * 0.02 : claimed);
            r.host_us.push_back(side_stream_ ? t + 15 : claimed + 15);
        }
        ++requests_;
        calls_ += count;
        return r;
    }
    bool has_stream_clock() const override { return true; }

    int requests_ = 0, calls_ = 0;
    double delay_forged_us_ = 0;  // added to the wall time of the requests it picks

  private:
    double true_us_;
    RequestOverhead overhead_;
    double claim_factor_;
    bool side_stream_;
    double forge_fraction_;
    std::mt19937 rng_{7};
};

TimingConfig quick() {
    TimingConfig c;
    c.max_seconds = 2;
    c.max_samples = 400;
    return c;
}

const RequestOverhead kOverhead{60, 15, 8};

TEST(TrustedClock, AnHonestCandidateKeepsItsSamples) {
    FakeSandbox honest(500, kOverhead, 1.0);
    RemoteMeasurement r = measure_remote(honest, quick(), kOverhead, 64, 1000);
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    EXPECT_LE(r.clock.uncovered, r.clock.requests / 10);
    EXPECT_NEAR(median(r.measurement.samples_us), 500, 25);
    EXPECT_EQ(r.measurement.outside_stream_samples, 0);
}

TEST(TrustedClock, ForgedTimesAreRefutedWithTheFigures) {
    FakeSandbox forger(500, kOverhead, 0.01);  // claims 100 times faster
    RemoteMeasurement r = measure_remote(forger, quick(), kOverhead, 64, 1000);
    EXPECT_TRUE(r.clock.refuted);
    EXPECT_EQ(r.clock.uncovered, r.clock.requests);
    EXPECT_NEAR(r.clock.floor_per_call_us, 500, 60);
    EXPECT_NE(r.clock.detail.find("claimed 5.0 us a call"), std::string::npos) << r.clock.detail;
    // The samples themselves come from the clock, so nothing forged survives either way.
    EXPECT_GT(median(r.measurement.samples_us), 400);
}

TEST(TrustedClock, ForgingSomeRequestsGainsNothing) {
    FakeSandbox sly(500, kOverhead, 0.01, false, 0.2);  // forges one request in five
    RemoteMeasurement r = measure_remote(sly, quick(), kOverhead, 64, 1000);
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    EXPECT_GT(r.clock.retried, 0);  // each forged request was asked again
    EXPECT_NEAR(median(r.measurement.samples_us), 500, 30);
}

TEST(TrustedClock, ForgingMostRequestsIsRefuted) {
    // Nine requests in ten, so that most stay forged when asked again.
    FakeSandbox sly(500, kOverhead, 0.01, false, 0.9);
    RemoteMeasurement r = measure_remote(sly, quick(), kOverhead, 64, 1000);
    EXPECT_TRUE(r.clock.refuted) << r.clock.detail;
    EXPECT_GT(median(r.measurement.samples_us), 450);
}

TEST(TrustedClock, ABusyMachineDelayingSomeRequestsIsNoAttack) {
    // Three requests in five wait for a CPU on the sandbox's side (the judge's own waiting is
    // taken out of its wall time before this): asked again, most are covered; the rest get their
    // samples from the clock, and nothing is refuted.
    FakeSandbox honest(500, kOverhead, 1.0, false, 0.6);
    honest.delay_forged_us_ = 400;
    RemoteMeasurement r = measure_remote(honest, quick(), kOverhead, 64, 1000);
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    EXPECT_GT(r.clock.retried, r.clock.requests / 3);
    EXPECT_LT(r.clock.uncovered, r.clock.requests / 3);
    EXPECT_NEAR(median(r.measurement.samples_us), 500, 30);
}

TEST(TrustedClock, AProtocolTwiceAsSlowAsMeasuredIsTheMachinesDoing) {
    // A CPU's requests: one short call each, the protocol three times the call. Real requests
    // cost the protocol more than the null ones that measured it, and a loaded machine doubles
    // that: every request falls short, but by no more than the protocol's cost explains.
    const RequestOverhead measured{0, 300, 25};
    FakeSandbox honest(100, {0, 600, 25}, 1.0);
    RemoteMeasurement r = measure_remote(honest, quick(), measured, 1, 2000);
    EXPECT_GT(r.clock.uncovered, r.clock.requests / 2);  // their samples come from the clock
    EXPECT_EQ(r.clock.unexplained, 0) << r.clock.detail;
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    // A forger on that machine, of calls of a millisecond, claims a hundredth: refuted.
    FakeSandbox forger(1000, {0, 600, 25}, 0.01);
    RemoteMeasurement f = measure_remote(forger, quick(), measured, 1, 2000);
    EXPECT_TRUE(f.clock.refuted) << f.clock.detail;
    EXPECT_GT(median(f.measurement.samples_us), 1000);
}

TEST(TrustedClock, ClaimsMoreThanTenPercentShortAreNotBelieved) {
    // A sandbox whose own clock lags (claims 12% short) on calls of 100 us and of 2 ms: the
    // samples are the judge's clock's, within a few percent of the truth.
    for (double true_us : {100.0, 2000.0}) {
        FakeSandbox lagging(true_us, kOverhead, 0.88);
        RemoteMeasurement r = measure_remote(lagging, quick(), kOverhead, 64, 1000);
        EXPECT_GT(r.clock.uncovered, r.clock.requests * 9 / 10)
            << true_us << " us: " << r.clock.detail;
        EXPECT_GT(median(r.measurement.samples_us), 0.97 * true_us) << true_us;
    }
}

TEST(TrustedClock, TheJudgesReadingAndTheSandboxsWaitsAreTheMachines) {
    const RequestOverhead o{50, 0, 5};
    std::vector<CallSample> samples{{1000, false}};
    // The judge read the outputs for 800 us within the span: not the call's.
    RequestRecord read{{1000}, {1000}, 1850, 800, 0, 0};
    EXPECT_TRUE(check_request(samples, read, o).covered);
    // A claim of half the floor on a machine where the sandbox waited 2 ms for a CPU meanwhile:
    // not believed (the samples are the clock's), but explained, so never a rejection.
    std::vector<CallSample> half{{1000, false}};
    RequestRecord busy{{1000}, {1000}, 3100, 0, 2000, 0};
    RequestCheck c = check_request(half, busy, o);
    EXPECT_FALSE(c.covered);
    EXPECT_TRUE(c.explained);
    // The same claim with no wait to explain it: unexplained.
    RequestRecord quiet{{1000}, {1000}, 3100, 0, 0, 0};
    EXPECT_FALSE(check_request(half, quiet, o).explained);
}

TEST(TrustedClock, WorkOffTheLaunchStreamIsCountedAtFullCost) {
    FakeSandbox side(500, kOverhead, 1.0, true);
    RemoteMeasurement r = measure_remote(side, quick(), kOverhead, 64, 1000);
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    EXPECT_GT(median(r.measurement.samples_us), 490);
    EXPECT_EQ(r.measurement.outside_stream_samples, int(r.measurement.samples_us.size()));
}

TEST(TrustedClock, ShortCallsAreBatchedSoARequestSpansAMillisecond) {
    FakeSandbox quick_calls(20, kOverhead, 1.0);
    RemoteMeasurement r = measure_remote(quick_calls, quick(), kOverhead, 64, 1000);
    EXPECT_NEAR(r.batch, 50, 3);
    EXPECT_FALSE(r.clock.refuted) << r.clock.detail;
    // Batched, a forger of short calls falls short per request: its samples are the clock's.
    // Its lie is within what the protocol of 50 calls could cost on a busy machine, so it is
    // not refuted; with calls of 100 us it is.
    FakeSandbox quick_forger(20, kOverhead, 0.1);
    RemoteMeasurement f = measure_remote(quick_forger, quick(), kOverhead, 64, 1000);
    EXPECT_GT(f.clock.uncovered, 0);
    EXPECT_GT(median(f.measurement.samples_us), 18);
    FakeSandbox forger(100, kOverhead, 0.1);
    RemoteMeasurement g = measure_remote(forger, quick(), kOverhead, 64, 1000);
    EXPECT_TRUE(g.clock.refuted) << g.clock.detail;
}

TEST(TrustedClock, TheReferenceHarnessProtocolIsCheckedToo) {
    TimingConfig kb = quick();
    kb.protocol = Mode::kernelbench;
    FakeSandbox forger(500, kOverhead, 0.01);
    RemoteMeasurement r = measure_remote(forger, kb, kOverhead, 64, 1000);
    EXPECT_EQ(r.measurement.samples_us.size(), std::size_t(kb.kb_trials - kb.kb_discard_first));
    EXPECT_EQ(r.measurement.statistic, "mean");
    EXPECT_TRUE(r.clock.refuted);
    EXPECT_GT(mean(r.measurement.samples_us), 400);
}

TEST(TrustedClock, OverheadFitsFixedAndPerCallCosts) {
    RequestOverhead o = fit_overhead({100, 102, 98, 101, 99}, {160, 161, 159}, 5);
    EXPECT_NEAR(o.per_call_us, 15, 1);
    EXPECT_NEAR(o.fixed_us, 85, 1);
    EXPECT_GT(o.spread_us, 0);
    EXPECT_NEAR(o.at(5), 160, 1);
}

TEST(RunDelay, ReadsTheSecondSchedstatField) {
    std::string line = "39389266 9557111 25\n";
    EXPECT_EQ(parse_run_delay(line.data(), long(line.size())), 9557111u);
    std::string broken = "39389266";
    EXPECT_EQ(parse_run_delay(broken.data(), long(broken.size())), 0u);
    EXPECT_EQ(parse_run_delay("", 0), 0u);
}

TEST(RunDelay, CountsTimeSpentWaitingForACpu) {
    RunDelay delay;
    if (!delay.available()) GTEST_SKIP() << "this kernel does not count run delays";
    // More busy threads than cores, and this one busy too: it must wait for a CPU at times.
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (unsigned i = 0; i < std::thread::hardware_concurrency() + 1; ++i)
        busy.emplace_back([&] {
            while (!stop.load()) {
            }
        });
    std::uint64_t before = delay.now_ns();
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
    }
    std::uint64_t after = delay.now_ns();
    stop = true;
    for (auto& t : busy) t.join();
    EXPECT_GT(after, before);
}

// Clocks that drift: every call, the candidate's (through a FakeSandbox whose true time is
// scaled) and the reference's, runs slower as a shared factor grows, as a GPU's clocks and
// temperature change during a run.
struct Drift {
    double factor = 1.0;
    double rate = 1.001;  // a call's
    void step() { factor *= rate; }
};

class DriftingSandbox : public RemoteCalls {
  public:
    DriftingSandbox(double true_us, Drift& drift) : true_us_(true_us), drift_(drift) {}
    RequestRecord run(std::size_t, int count) override {
        RequestRecord r;
        r.wall_us = kOverhead.at(count);
        for (int i = 0; i < count; ++i) {
            double t = true_us_ * drift_.factor;
            drift_.step();
            r.wall_us += t;
            r.event_us.push_back(t);
            r.host_us.push_back(t + 15);
        }
        return r;
    }
    bool has_stream_clock() const override { return true; }

  private:
    double true_us_;
    Drift& drift_;
};

// The reference's own sandbox: the same protocol as the candidate's, its requests logged in the
// order they came.
class LoggedSandbox : public DriftingSandbox {
  public:
    LoggedSandbox(double true_us, Drift& drift, std::string& log, char name)
        : DriftingSandbox(true_us, drift), log_(log), name_(name) {}
    RequestRecord run(std::size_t first, int count) override {
        log_ += name_;
        return DriftingSandbox::run(first, count);
    }

  private:
    std::string& log_;
    char name_;
};

TEST(TrustedClock, AlternatingRoundsKeepTheRatioThroughDrift) {
    Drift drift;
    DriftingSandbox candidate(200, drift);
    DriftingSandbox reference(400, drift);  // true speedup 2
    RemoteBaseline baseline{reference, kOverhead, 64};
    TimingConfig config = quick();
    RemoteMeasurement r = measure_remote(candidate, config, kOverhead, 64, 1000, &baseline);
    ASSERT_GE(int(r.round_ratios.size()), kMinRounds);
    EXPECT_TRUE(r.measurement.converged);
    EXPECT_FALSE(r.baseline_us.empty());
    // The clocks drifted by far more than 1% over the run; each round's ratio did not.
    EXPECT_GT(drift.factor, 1.1);
    for (double ratio : r.round_ratios) EXPECT_NEAR(ratio, 2.0, 0.04);
    // Timed apart, the baseline first and the candidate after it, the drift shows in the ratio.
    Drift apart;
    DriftingSandbox first(400, apart);
    std::vector<double> base;
    while (base.size() < r.baseline_us.size())
        for (double us : first.run(base.size(), 1).event_us) base.push_back(us);
    DriftingSandbox then(200, apart);
    RemoteMeasurement separate = measure_remote(then, config, kOverhead, 64, 1000);
    double apart_error = std::abs(median(base) / median(separate.measurement.samples_us) - 2.0);
    double rounds_error = std::abs(timing::speedup_over_rounds(r.round_ratios).speedup - 2.0);
    EXPECT_GT(apart_error, 0.05);
    EXPECT_LT(rounds_error, 0.03);
    EXPECT_GT(apart_error, 2 * rounds_error);
}

TEST(TrustedClock, RoundsGoOnUntilTheRatioIsNarrowOrACapIsReached) {
    Drift still;
    DriftingSandbox candidate(500, still);
    DriftingSandbox reference(500, still);
    RemoteBaseline baseline{reference, kOverhead, 64};
    TimingConfig config = quick();
    config.target_rel_halfwidth = -1;  // never narrow enough
    config.max_samples = 60;
    RemoteMeasurement r = measure_remote(candidate, config, kOverhead, 64, 1000, &baseline);
    EXPECT_FALSE(r.measurement.converged);
    EXPECT_GE(int(r.round_ratios.size()), kMinRounds);
    EXPECT_GE(int(r.measurement.samples_us.size()), 60);
}

// A candidate far slower than the baseline pays its own calls in every round: once the whole
// interval lies below stop_below, more rounds change nothing a fast_p at that speed could use.
TEST(TrustedClock, RoundsStopOnceTheWholeIntervalIsBelowStopBelow) {
    Drift still;
    TimingConfig config = quick();
    config.target_rel_halfwidth = -1;  // never narrow enough
    config.max_samples = 60;
    config.stop_below = 0.25;
    auto rounds_for = [&](double candidate_us, double stop_below) {
        DriftingSandbox candidate(candidate_us, still);
        DriftingSandbox reference(100, still);
        RemoteBaseline baseline{reference, kOverhead, 64};
        config.stop_below = stop_below;
        return measure_remote(candidate, config, kOverhead, 64, 1000, &baseline);
    };
    RemoteMeasurement slow = rounds_for(1000, 0.25);  // speedup 0.1
    EXPECT_TRUE(slow.measurement.converged);
    EXPECT_EQ(int(slow.round_ratios.size()), kMinRounds) << "stopped at the rounds' minimum";
    EXPECT_LT(slow.measurement.samples_us.size(), 60u);
    RemoteMeasurement always = rounds_for(1000, 0);  // 0: never
    EXPECT_FALSE(always.measurement.converged);
    EXPECT_GE(int(always.measurement.samples_us.size()), 60);
    RemoteMeasurement half = rounds_for(200, 0.25);  // speedup 0.5: sampled to the cap
    EXPECT_FALSE(half.measurement.converged);
    EXPECT_GE(int(half.measurement.samples_us.size()), 60);
}

TEST(TrustedClock, ForgedTimesAreRefutedInRoundsToo) {
    Drift still;
    FakeSandbox forger(500, kOverhead, 0.01);
    DriftingSandbox reference(500, still);
    RemoteBaseline baseline{reference, kOverhead, 64};
    RemoteMeasurement r = measure_remote(forger, quick(), kOverhead, 64, 1000, &baseline);
    EXPECT_TRUE(r.clock.refuted) << r.clock.detail;
    for (double ratio : r.round_ratios)
        EXPECT_LT(ratio, 1.5);  // the clock's samples, not the claims
}

TEST(TrustedClock, RoundsAlternateOneToOneAndSwapWhoGoesFirst) {
    Drift still{1.0, 1.0};
    std::string log;
    LoggedSandbox candidate(300, still, log, 'c');
    LoggedSandbox reference(300, still, log, 'b');
    RemoteBaseline baseline{reference, kOverhead, 64};
    TimingConfig config = quick();
    config.target_rel_halfwidth = -1;
    config.max_samples = 1;
    RemoteMeasurement r = measure_remote(candidate, config, kOverhead, 64, 1000, &baseline);
    ASSERT_EQ(int(r.round_ratios.size()), kMinRounds);
    // Each side warms up on its own (requests of one call), the candidate first; then rounds.
    std::size_t warm = std::size_t(r.measurement.warmup_calls + r.baseline_warmup_calls);
    ASSERT_GT(log.size(), warm);
    EXPECT_EQ(log.substr(0, warm), std::string(std::size_t(r.measurement.warmup_calls), 'c') +
                                       std::string(std::size_t(r.baseline_warmup_calls), 'b'));
    EXPECT_EQ(log.substr(warm),
              "bcbcbc"
              "cbcbcb"
              "bcbcbc"
              "cbcbcb"
              "bcbcbc");
    // Both sides' requests hold as many calls (the same time a call), and the ratio is theirs.
    EXPECT_EQ(r.batch, r.baseline_batch);
    EXPECT_EQ(r.baseline_us.size(), r.measurement.samples_us.size());
    for (double ratio : r.round_ratios) EXPECT_NEAR(ratio, 1.0, 1e-9);
}

}  // namespace
}  // namespace kbench::timing
