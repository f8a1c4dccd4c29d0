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

TEST(Progress, OnATerminalLogLinesClearTheStatusLineAndItComesBackBelowThem) {
    std::ostringstream out;
    {
        report::Progress progress(2, out, true);
        progress.add("correct", "level 1 problem 1 (1_relu), sample 0 (a.py): correct, 1.20x");
        report::print_line(out, "kbench [1.0 s] a log line");
        progress.add("incorrect", "level 1 problem 2 (2_relu), sample 0 (b.py): incorrect");
    }
    std::string text = out.str();
    // Each line printed while the status line is drawn starts by clearing it, and the status
    // line is drawn again after it.
    EXPECT_NE(text.find("\r\033[Kkbench [1.0 s] a log line\n1/2 done"), std::string::npos) << text;
    EXPECT_NE(text.find("\r\033[Klevel 1 problem 2 (2_relu), sample 0 (b.py): incorrect\n2/2 done"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.back(), '\n');  // finished: the cursor on a fresh line
    // With nothing drawn (not a terminal) a log line is just a line.
    std::ostringstream plain;
    report::print_line(plain, "x");
    EXPECT_EQ(plain.str(), "x\n");
}

}  // namespace
}  // namespace kbench
