#include "orchestrator/engine/work_queue.hpp"

#include "orchestrator/builds/builder_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace kbench::orchestrator {
namespace {

TEST(WorkQueue, OneDeviceTakesItemsInOrderButFinishesItsProblemFirst) {
    WorkQueue q({"a", "b", "a", "c", "b"}, 1);
    std::vector<std::size_t> order;
    while (auto i = q.next(0)) order.push_back(*i);
    EXPECT_EQ(order, (std::vector<std::size_t>{0, 2, 1, 4, 3}));
    EXPECT_EQ(q.pending(), 0u);
    EXPECT_FALSE(q.next(0).has_value());
}

TEST(WorkQueue, DevicesPreferProblemsNoOtherDeviceIsOn) {
    // Two problems, two candidates each: each device should get a problem of its own, so each
    // reference is computed by one judge only.
    WorkQueue q({"a", "a", "b", "b"}, 2);
    EXPECT_EQ(q.next(0), 0u);  // device 0 on a
    EXPECT_EQ(q.next(1), 2u);  // device 1 skips a's second item, takes b
    EXPECT_EQ(q.next(1), 3u);  // and stays on b
    EXPECT_EQ(q.next(0), 1u);  // device 0 stays on a
    EXPECT_FALSE(q.next(0).has_value());
}

TEST(WorkQueue, SharesAProblemRatherThanLeaveADeviceIdle) {
    WorkQueue q({"a", "a", "a"}, 2);
    EXPECT_EQ(q.next(0), 0u);
    EXPECT_EQ(q.next(1), 1u);  // only a is left: device 1 joins it
    EXPECT_EQ(q.next(0), 2u);
}

TEST(WorkQueue, ReadyItemsComeFirstByTheSameRules) {
    WorkQueue q({"a", "b", "a", "c", "b"}, 2);
    std::vector<bool> ready = {false, false, false, true, true};
    auto is_ready = [&](std::size_t i) { return bool(ready[i]); };
    EXPECT_TRUE(q.any_ready(is_ready));
    EXPECT_EQ(q.next(0, is_ready), 3u);  // c, the first ready item
    EXPECT_EQ(q.next(1, is_ready), 4u);  // b's second item, ready
    ready[2] = ready[1] = true;
    EXPECT_EQ(q.next(1, is_ready), 1u);  // device 1 stays on b while b has a ready item
    EXPECT_EQ(q.next(0, is_ready), 2u);  // device 0 takes a ready item of a (no device on a)
    EXPECT_FALSE(q.any_ready(is_ready));
    EXPECT_EQ(q.next(0, is_ready), 0u);  // nothing ready: the usual rules
    EXPECT_FALSE(q.next(0, is_ready).has_value());
}

TEST(WorkQueue, NextReadyTakesOnlyAReadyItem) {
    WorkQueue q({"a", "b", "a"}, 1);
    std::vector<bool> ready = {false, false, false};
    auto is_ready = [&](std::size_t i) { return bool(ready[i]); };
    EXPECT_FALSE(q.next_ready(0, is_ready).has_value());  // nothing ready: nothing taken
    EXPECT_EQ(q.pending(), 3u);
    ready[1] = ready[2] = true;
    EXPECT_EQ(q.next_ready(0, is_ready), 1u);  // the first ready item
    EXPECT_EQ(q.next_ready(0, is_ready), 2u);
    EXPECT_FALSE(q.next_ready(0, is_ready).has_value());
    EXPECT_EQ(q.next(0, is_ready), 0u);  // the one left, by the usual rules
}

TEST(WorkQueue, GivenBackItemGoesFirstToAnyDevice) {
    WorkQueue q({"a", "b", "c"}, 2);
    EXPECT_EQ(q.next(0), 0u);
    q.give_back(0, 0);  // device 0 is lost
    EXPECT_EQ(q.next(1), 0u);
    EXPECT_EQ(q.next(1), 1u);
    EXPECT_EQ(q.next(1), 2u);
    EXPECT_FALSE(q.next(1).has_value());
}

TEST(WorkQueue, UnknownDeviceIsRefused) {
    WorkQueue q({"a"}, 1);
    EXPECT_THROW(q.next(1), std::out_of_range);
}

TEST(WorkQueue, ConcurrentDevicesGetEveryItemExactlyOnce) {
    std::vector<std::string> problems;
    for (int i = 0; i < 2000; ++i) problems.push_back("p" + std::to_string(i % 37));
    WorkQueue q(problems, 4);
    std::vector<std::vector<std::size_t>> got(4);
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < 4; ++d)
        threads.emplace_back([&, d] {
            while (auto i = q.next(d)) got[d].push_back(*i);
        });
    for (auto& t : threads) t.join();
    std::vector<std::size_t> all;
    for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), problems.size());
    for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], i);
}

}  // namespace
}  // namespace kbench::orchestrator

namespace {

// Items that take a while each, with how many ran at once before and after the first was done.
struct Concurrency {
    std::mutex mutex;
    int running = 0;
    int most_before_first_done = 0;
    int most = 0;
    bool first_done = false;
    std::vector<std::size_t> started;

    std::condition_variable changed;
    int gather = 0;  // items from 2 on wait (5 s at most) until this many run at once

    bool run(std::size_t item, bool counts) {
        std::unique_lock<std::mutex> lock(mutex);
        started.push_back(item);
        ++running;
        most = std::max(most, running);
        if (!first_done) most_before_first_done = std::max(most_before_first_done, running);
        changed.notify_all();
        if (item >= 2 && item < 2 + std::size_t(gather))
            changed.wait_for(lock, std::chrono::seconds(5), [&] { return running >= gather; });
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        lock.lock();
        --running;
        if (counts) first_done = true;
        return counts;
    }
};

}  // namespace

// On GPUs a build compiles its host and device code side by side: builds for half the cores
// keep them busy (on the H200, 16 at once took twice as long each as 8, for 12% more a second).
TEST(DefaultBuilders, OneACoreOnCpusOneForEveryTwoOnGpus) {
    EXPECT_EQ(kbench::orchestrator::default_builders(kbench::DeviceKind::cpu, 16), 16);
    EXPECT_EQ(kbench::orchestrator::default_builders(kbench::DeviceKind::cuda, 16), 8);
    EXPECT_EQ(kbench::orchestrator::default_builders(kbench::DeviceKind::cuda, 128), 64);
    EXPECT_EQ(kbench::orchestrator::default_builders(kbench::DeviceKind::cuda, 1), 1);
    EXPECT_EQ(kbench::orchestrator::default_builders(kbench::DeviceKind::cpu, 0), 1);
}

TEST(RunInWaves, OnlyTheFirstWaveRunsUntilAnItemIsDoneThenEveryThread) {
    Concurrency c;
    c.gather = 4;  // once the first is done, the four threads meet
    std::atomic<bool> stop{false};
    kbench::orchestrator::run_in_waves(
        12, 4, 2, [&](std::size_t i) { return c.run(i, true); }, stop);
    EXPECT_EQ(c.started.size(), 12u);
    EXPECT_LE(c.most_before_first_done, 2);
    EXPECT_EQ(c.most, 4);
    std::vector<std::size_t> sorted = c.started;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);  // each once
}

TEST(RunInWaves, ItemsThatAreNotDoneKeepTheRestWaiting) {
    // The first six items do not count (a static rule rejected them): two threads run them; the
    // others join after the seventh.
    Concurrency c;
    std::atomic<bool> stop{false};
    kbench::orchestrator::run_in_waves(
        10, 4, 2, [&](std::size_t i) { return c.run(i, i >= 6); }, stop);
    EXPECT_EQ(c.started.size(), 10u);
    EXPECT_LE(c.most_before_first_done, 2);
}

TEST(RunInWaves, NothingCountsAndEveryItemStillRuns) {
    Concurrency c;
    std::atomic<bool> stop{false};
    kbench::orchestrator::run_in_waves(
        5, 3, 1, [&](std::size_t i) { return c.run(i, false); }, stop);
    EXPECT_EQ(c.started.size(), 5u);
    EXPECT_EQ(c.most, 1);
}

TEST(RunInWaves, StopStartsNoMoreItems) {
    std::atomic<bool> stop{false};
    std::atomic<int> ran{0};
    kbench::orchestrator::run_in_waves(
        100, 4, 2,
        [&](std::size_t) {
            if (++ran == 3) stop = true;
            return true;
        },
        stop);
    EXPECT_LE(ran.load(), 4 + 2);  // those under way when it was set finish
    EXPECT_LT(ran.load(), 100);
}
