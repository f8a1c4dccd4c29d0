#include "orchestrator/workers/worker_process.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "core/error.hpp"

namespace kbench::orchestrator {

TEST(WorkerProcess, AWorkerThatDiedAtStartIsAnInfraErrorAndCleansUp) {
    // Another child of this process that outlives the test: nothing may wait on it.
    pid_t bystander = sandbox::spawn_process({{"sleep", "30"}});
    fs::path logs = make_temp_dir("kbench-test-worker-");
    WorkerEnvironment env;
    env.python = "true";  // exits at once, as a Python without torch would fail
    env.log_dir = logs;
    env.verify_package = false;
    auto start = std::chrono::steady_clock::now();
    {
        WorkerProcess worker(env, "judge");
        EXPECT_THROW(worker.hello(10), InfraError);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_FALSE(sandbox::try_wait_process(bystander).has_value()) << "the bystander was reaped";
    sandbox::kill_process_tree(bystander);
    sandbox::wait_process(bystander);
    fs::remove_all(logs);
}

}  // namespace kbench::orchestrator
