// The command layer's pure parts: resume planning, the configuration's one serialisation and
// store key, the store's version and attempts, KernelBench's result names and its view.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/memory_plan.hpp"
#include "orchestrator/run/run_plan.hpp"
#include "report/kernelbench_results.hpp"
#include "report/progress.hpp"
#include "report/reporter.hpp"
#include "score/kernelbench_view.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"

namespace kbench {
namespace {

using orchestrator::ItemRecord;

TEST(RunLock, OneHolderAtATime) {
    fs::path dir = make_temp_dir("kbench-test-lock-");
    {
        store::RunLock first(dir);
        try {
            store::RunLock second(dir);  // another open file description: refused
            FAIL() << "two holders";
        } catch (const UsageError& e) {
            EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid())),
                      std::string::npos)
                << e.what();
        }
    }
    store::RunLock again(dir);  // released with its holder
    fs::remove_all(dir);
}

}  // namespace
}  // namespace kbench
