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

TEST(KernelBenchResults, ErrorNamesAreKernelBenchs) {
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  File \"x\", line 1\n"
                                        "RuntimeError: boom\n"),
              "builtins.RuntimeError");
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  File \"x\"\n"
                                        "torch.OutOfMemoryError: CUDA out of memory\n"),
              "torch.OutOfMemoryError");
    EXPECT_EQ(report::python_error_name("Traceback (most recent call last):\n  ...\n"
                                        "KeyError: 'w'\n\nDuring handling of the above exception, "
                                        "another exception occurred:\n\nTraceback (most recent "
                                        "call last):\n  ...\nValueError\n"),
              "builtins.ValueError");
    EXPECT_EQ(report::python_error_name("error: identifier \"x\" is undefined"), "");
}

// tests/fixtures/analysis: KernelBench's analysis gives (on the real level-1 list) compiled 7,
// correct 6, 11 aligned, geomean 6.25 ** (1/5), fast_p 5, 5, 4, 3, 2, 1 of 11 for p = 0, 0.5,
// 0.8, 1, 1.5, 2 (tests/python/test_kernelbench_analysis.py works them out by hand).

}  // namespace
}  // namespace kbench
