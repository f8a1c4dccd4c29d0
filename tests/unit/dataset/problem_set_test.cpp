#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "dataset/candidate_set.hpp"
#include "dataset/problem_set.hpp"
#include "dataset/selection.hpp"
#include "process/process.hpp"

namespace kbench::dataset {
namespace {

const char* kCode = "import torch\nclass Model(torch.nn.Module):\n    pass\n";

class Dataset : public ::testing::Test {
  protected:
    void SetUp() override { dir_ = make_temp_dir("kbench-test-dataset-"); }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path write(const fs::path& relative, const std::string& text) {
        fs::path path = dir_ / relative;
        fs::create_directories(path.parent_path());
        std::ofstream(path) << text;
        return path;
    }

    static std::string row(int level, int id, const std::string& name, const std::string& code) {
        return nlohmann::json{{"code", code}, {"level", level}, {"name", name}, {"problem_id", id}}
                   .dump() +
               "\n";
    }

    fs::path dir_;
};

TEST_F(Dataset, KernelBenchTree) {
    write("KernelBench/level1/19_ReLU.py", kCode);
    write("KernelBench/level1/2_Matmul.py", std::string(kCode) + "# two\n");
    write("KernelBench/level2/7_Conv.py", kCode);
    write("KernelBench/level1/helpers.py", "not a problem");
    write("KernelBench/notes/1_x.py", "not a level");
    auto problems = load_problems(dir_.string(), "python3");
    ASSERT_EQ(problems.size(), 3u);
    EXPECT_EQ(problems[0].name, "2_Matmul");  // sorted by level, then id
    EXPECT_EQ(problems[1].name, "19_ReLU");
    EXPECT_EQ(problems[1].level, 1);
    EXPECT_EQ(problems[1].id, 19);
    EXPECT_EQ(problems[2].level, 2);
    EXPECT_EQ(problems[1].sha256.size(), 64u);
    EXPECT_NE(problems[0].sha256, problems[1].sha256);
    // The KernelBench folder itself works too.
    EXPECT_EQ(load_problems((dir_ / "KernelBench").string(), "python3").size(), 3u);
}

TEST_F(Dataset, JsonLinesWithHuggingFaceColumns) {
    fs::path file =
        write("kb.jsonl", row(1, 19, "19_ReLU", kCode) + "\n" + row(3, 1, "1_MLP.py", kCode));
    auto problems = load_problems(file.string(), "python3");
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_EQ(problems[1].name, "1_MLP");  // a trailing .py is dropped
    EXPECT_EQ(problems[1].source, file.string() + ":3");
}

TEST_F(Dataset, BadRowsNameTheLineAndTheColumn) {
    fs::path broken = write("broken.jsonl", row(1, 1, "1_A", kCode) + "{not json\n");
    try {
        load_problems(broken.string(), "python3");
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("broken.jsonl:2"), std::string::npos) << e.what();
    }
    fs::path missing = write("missing.jsonl", R"({"code": "x", "level": 1, "name": "1_A"})"
                                              "\n");
    try {
        load_problems(missing.string(), "python3");
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("problem_id"), std::string::npos) << e.what();
    }
}

TEST_F(Dataset, DuplicateProblemsAreRefused) {
    fs::path file = write("dup.jsonl", row(1, 4, "4_A", kCode) + row(1, 4, "4_B", kCode));
    EXPECT_THROW(load_problems(file.string(), "python3"), UsageError);
}

TEST_F(Dataset, ParquetFileAndSnapshotFolder) {
    fs::path jsonl = write("src.jsonl", row(1, 5, "5_A", kCode) + row(2, 6, "6_B", kCode));
    fs::path parquet = dir_ / "snapshot" / "data" / "level_1-00000.parquet";
    fs::create_directories(parquet.parent_path());
    auto made =
        sandbox::run_to_completion({KBENCH_TEST_PYTHON, "-c",
                                    "import json, sys, pyarrow as pa, pyarrow.parquet as pq\n"
                                    "rows = [json.loads(l) for l in open(sys.argv[1])]\n"
                                    "pq.write_table(pa.Table.from_pylist(rows), sys.argv[2])\n",
                                    jsonl.string(), parquet.string()},
                                   120);
    if (!made.status.exited || made.status.code != 0)
        GTEST_SKIP() << "needs pyarrow in " << KBENCH_TEST_PYTHON << ": " << made.err;
    // The reader is the worker package's parquet.py, found through this variable here.
    ::setenv("KBENCH_WORKER_PATH", KBENCH_TEST_WORKER_PATH, 1);
    auto problems = load_problems(parquet.string(), KBENCH_TEST_PYTHON);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_EQ(problems[1].name, "6_B");
    EXPECT_EQ(problems[1].code, kCode);
    auto from_folder = load_problems((dir_ / "snapshot").string(), KBENCH_TEST_PYTHON);
    EXPECT_EQ(from_folder.size(), 2u);
}

// parquet.py's exit codes, which the dataset reader names: the same numbers under the same names.
TEST(ParquetExit, MatchesTheReadersOwn) {
    std::string reader = read_file(std::filesystem::path(KBENCH_TEST_SOURCE_DIR) /
                                   "src/worker/python/kbench_worker/parquet.py");
    for (auto [name, code] : {std::pair{"NO_READER", ParquetExit::no_reader},
                              std::pair{"UNREADABLE", ParquetExit::unreadable},
                              std::pair{"MISSING_COLUMNS", ParquetExit::missing_columns}})
        EXPECT_NE(reader.find("\n" + std::string(name) + " = " + std::to_string(int(code)) + "\n"),
                  std::string::npos)
            << name;
}

TEST(Selection, IdRangesAndFilters) {
    auto ranges = parse_id_ranges("1-10,19");
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0], std::make_pair(1, 10));
    EXPECT_EQ(ranges[1], std::make_pair(19, 19));
    EXPECT_THROW(parse_id_ranges("3-1"), UsageError);
    EXPECT_THROW(parse_id_ranges("a"), UsageError);
    std::vector<Problem> problems = {make_problem(1, 1, "1_A", "a", ""),
                                     make_problem(1, 19, "19_B", "b", ""),
                                     make_problem(2, 19, "19_C", "c", "")};
    Selection s;
    s.levels = {1};
    s.id_ranges = ranges;
    EXPECT_EQ(select(problems, s).size(), 2u);
    Selection by_name;
    by_name.names = {"19_C"};
    ASSERT_EQ(select(problems, by_name).size(), 1u);
    EXPECT_EQ(select(problems, by_name)[0].level, 2);
}

TEST_F(Dataset, CandidatesInEveryLayout) {
    std::vector<Problem> problems = {make_problem(1, 19, "19_ReLU", "r", ""),
                                     make_problem(2, 3, "3_Conv", "c", "")};
    // KernelBench's run layout; candidates of unselected problems are skipped.
    write("run/level_1_problem_19_sample_1_kernel.py", "b");
    write("run/level_1_problem_19_sample_0_kernel.py", "a");
    write("run/level_1_problem_7_sample_0_kernel.py", "other problem");
    auto run = load_candidates((dir_ / "run").string(), problems);
    ASSERT_EQ(run.size(), 2u);
    EXPECT_EQ(run[0].sample_id, 0);
    EXPECT_EQ(run[0].code, "a");
    // A folder a problem, samples in file-name order; a level folder when names repeat.
    write("byname/19_ReLU/b.py", "second");
    write("byname/19_ReLU/a.py", "first");
    write("byname/level2/3_Conv/x.py", "conv");
    auto by_name = load_candidates((dir_ / "byname").string(), problems);
    ASSERT_EQ(by_name.size(), 3u);
    EXPECT_EQ(by_name[0].code, "first");
    EXPECT_EQ(by_name[1].sample_id, 1);
    EXPECT_EQ(by_name[2].level, 2);
    // JSON lines.
    fs::path jsonl =
        write("cands.jsonl", R"({"level": 2, "problem_id": 3, "sample_id": 4, "code": "j"})"
                             "\n");
    auto rows = load_candidates(jsonl.string(), problems);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].sample_id, 4);
    EXPECT_EQ(rows[0].source, jsonl.string() + ":1");
}

TEST(BuiltinSuite, HasProblemsAndCandidatesForEachBackend) {
    auto problems = load_problems("builtin", "python3");
    EXPECT_GE(problems.size(), 12u);
    std::set<int> levels;
    for (const auto& p : problems) levels.insert(p.level);
    EXPECT_EQ(levels, (std::set<int>{1, 2, 3}));
    EXPECT_EQ(load_candidates("builtin:cpu", problems).size(), problems.size());
    EXPECT_EQ(load_candidates("builtin:cuda", problems).size(), problems.size());
    EXPECT_GE(load_candidates("builtin:triton", problems).size(), 3u);
    EXPECT_THROW(load_candidates("builtin:fortran", problems), UsageError);
}

}  // namespace
}  // namespace kbench::dataset
