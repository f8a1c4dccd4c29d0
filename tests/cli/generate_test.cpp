// kbench generate and kbench refine against a scripted model server on loopback
// (tests/llm/fake_llm_server.py): KernelBench's run layout, resuming without paying twice,
// failures kept apart, the spending cap, interruption, and a refinement whose feedback the
// server receives.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "support/command.hpp"
#include "support/fake_llm.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using kbench::test::FakeLlmServer;
using kbench::test::quote;

const char* kRelu =
    "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "    def forward(self, x):\n        return torch.relu(x)\n"
    "def get_inputs():\n    return [torch.randn(64, 256)]\ndef get_init_inputs():\n    return []\n";

fs::path scratch(const std::string& name) {
    static fs::path root = kbench::make_temp_dir("kbench-generate-test-");
    fs::path dir = root / name;
    fs::create_directories(dir);
    return dir;
}

// n ReLU problems, level 1, ids 1..n.
fs::path write_problems(const fs::path& dir, int n) {
    fs::path file = dir / "problems.jsonl";
    std::ofstream out(file);
    for (int id = 1; id <= n; ++id)
        out << json{{"code", kRelu},
                    {"level", 1},
                    {"name", std::to_string(id) + "_relu"},
                    {"problem_id", id}}
                   .dump()
            << "\n";
    return file;
}

std::string right_candidate() {
    return kbench::read_file(fs::path(KBENCH_SOURCE_DIR) /
                             "suite/candidates/cpu/level_1_problem_1_sample_0_kernel.py");
}

// The same kernel with a leaky slope: wrong for every negative input.
std::string wrong_candidate() {
    std::string code = right_candidate();
    std::string from = "src[i] > 0.f ? src[i] : 0.f";
    code.replace(code.find(from), from.size(), "src[i] > 0.f ? src[i] : src[i] * 0.01f");
    std::string name = "suite_l1_p1_relu_cpu";
    code.replace(code.find(name), name.size(), "leaky_relu_cpu");
    return code;
}

std::string answer(const std::string& code) {
    return "Here is the program.\n\n```python\n" + code + "```\n\nIt fuses the work into one pass.";
}

std::string kbench_command(const std::vector<std::string>& args) {
    std::string line = quote(KBENCH_BINARY);
    for (const auto& a : args) line += " " + quote(a);
    return line;
}

std::vector<std::string> model_args(const FakeLlmServer& server) {
    return {"--provider", "vllm",         "--model", "coder",          "--base-url",
            server.url(), "--retry-base", "0.05",    "--max-attempts", "2"};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Every byte of the run's database, to look for what must not be there.
std::string database_bytes(const fs::path& run) {
    std::string all;
    for (const char* name : {"kbench.db", "kbench.db-wal"})
        if (fs::exists(run / name)) all += kbench::read_file(run / name);
    return all;
}

int count_rows(const fs::path& db, const std::string& sql) {
    sqlite3* handle = nullptr;
    sqlite3_open(db.c_str(), &handle);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr);
    int n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    sqlite3_close(handle);
    return n;
}

TEST(Generate, WritesKernelBenchsLayoutKeepsFailuresApartAndResumesWithoutPayingTwice) {
    fs::path dir = scratch("layout");
    fs::path problems = write_problems(dir, 2);
    std::vector<std::string> common = {"generate",
                                       "--dataset",
                                       problems.string(),
                                       "--backend",
                                       "cpu",
                                       "--samples",
                                       "2",
                                       "--concurrency",
                                       "1",
                                       "--run",
                                       "g",
                                       "--runs-dir",
                                       (dir / "runs").string(),
                                       "--api-key-env",
                                       "KBENCH_TEST_KEY"};
    ::setenv("KBENCH_TEST_KEY", "sk-secret-never-stored-42", 1);
    fs::path run = dir / "runs" / "g";
    {
        // Three answers, one without code; then the server fails for good.
        FakeLlmServer server({{"rules",
                               {{{"times", 2}, {"text", answer(right_candidate())}},
                                {{"times", 1}, {"text", "I would need more time to write it."}},
                                {{"status", 500}}}}},
                             dir / "server1");
        auto r = kbench::test::run_command(kbench_command(common + model_args(server)));
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_NE(r.out.find("2 of 4 sample(s) have a candidate"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("answers without code: 1, failed requests: 1"), std::string::npos)
            << r.out;
        EXPECT_NE(r.err.find("no candidate in the answer"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("HTTP 500"), std::string::npos) << r.err;
        EXPECT_TRUE(fs::exists(run / "level_1_problem_1_sample_0_kernel.py"));
        EXPECT_TRUE(fs::exists(run / "level_1_problem_1_sample_1_kernel.py"));
        EXPECT_EQ(kbench::read_file(run / "level_1_problem_1_sample_0_kernel.py"),
                  right_candidate());
        EXPECT_EQ(server.requests().size(), 5u);  // 2 + 1 + the failure asked twice
        // The key went to the server, and nowhere into the run.
        EXPECT_EQ(server.requests()[0]["headers"]["authorization"],
                  "Bearer sk-secret-never-stored-42");
        EXPECT_EQ(database_bytes(run).find("sk-secret"), std::string::npos);
        EXPECT_EQ(count_rows(run / "kbench.db", "SELECT count(*) FROM model_calls"), 4);
        EXPECT_EQ(count_rows(run / "kbench.db",
                             "SELECT count(*) FROM model_calls WHERE status = 'error'"),
                  1);
    }
    {
        // Run again: only the failed sample is asked again; the answer without code is kept.
        FakeLlmServer server({{"rules", {{{"text", answer(right_candidate())}}}}}, dir / "server2");
        auto r = kbench::test::run_command(kbench_command(common + model_args(server)));
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_EQ(server.requests().size(), 1u);
        EXPECT_NE(r.out.find("3 of 4 sample(s) have a candidate"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("kept from before: 2"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("answers taken from this run's records: 1"), std::string::npos)
            << r.out;
        EXPECT_TRUE(fs::exists(run / "level_1_problem_2_sample_1_kernel.py"));
    }
    // kbench eval reads the folder as any KernelBench run.
    auto scan = kbench::test::run_command(
        kbench_command({"eval", "--dataset", problems.string(), "--candidates", run.string(),
                        "--device", "cpu", "--run", "g", "--runs-dir", (dir / "runs").string(),
                        "--no-timing", "--trials", "1", "--quiet"}));
    EXPECT_NE(scan.out.find("correct"), std::string::npos) << scan.out << scan.err;
}

// A sample is kept only when it was asked with the settings of this command; an answer cut
// inside a character is an error, not a crash; another command's run is refused.
TEST(Generate, SettingsCutAnswersAndOtherCommandsRuns) {
    fs::path dir = scratch("settings");
    fs::path problems = write_problems(dir, 1);
    FakeLlmServer server({{"rules", {{{"text", answer(right_candidate())}}}}}, dir / "server");
    std::vector<std::string> args = {"generate",  "--dataset",  problems.string(),
                                     "--backend", "cpu",        "--run",
                                     "s",         "--runs-dir", (dir / "runs").string()};
    auto first = kbench::test::run_command(kbench_command(
        args + model_args(server) + std::vector<std::string>{"--temperature", "0.1"}));
    EXPECT_EQ(first.exit_code, 0) << first.err;
    auto same = kbench::test::run_command(kbench_command(
        args + model_args(server) + std::vector<std::string>{"--temperature", "0.1"}));
    EXPECT_EQ(server.requests().size(), 1u);
    EXPECT_NE(same.out.find("kept from before: 1"), std::string::npos) << same.out;
    auto other = kbench::test::run_command(kbench_command(
        args + model_args(server) + std::vector<std::string>{"--temperature", "0.9"}));
    EXPECT_EQ(other.exit_code, 0) << other.err;
    EXPECT_EQ(server.requests().size(), 2u);  // another request: asked again
    EXPECT_NE(other.out.find("written now: 1"), std::string::npos) << other.out;

    // Non-ASCII text cut by the response size limit inside a character.
    std::string big;
    for (int i = 0; i < 2000; ++i) big += "\xc3\xa9";  // é
    FakeLlmServer cut({{"rules", {{{"text", big}}}}}, dir / "cut");
    auto r = kbench::test::run_command(
        kbench_command(std::vector<std::string>{"generate", "--dataset", problems.string(), "--run",
                                                "cut", "--runs-dir", (dir / "runs").string(),
                                                "--no-stream", "--max-response-bytes", "1001"} +
                       model_args(cut)));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("passed 1001 bytes"), std::string::npos) << r.err;

    // refine on a run generate made would mix their turns.
    auto mixed = kbench::test::run_command(kbench_command(
        std::vector<std::string>{"refine", "--dataset", problems.string(), "--device", "cpu",
                                 "--run", "s", "--runs-dir", (dir / "runs").string()} +
        model_args(server)));
    EXPECT_EQ(mixed.exit_code, 2) << mixed.out << mixed.err;
    EXPECT_NE(mixed.err.find("was made by kbench generate"), std::string::npos) << mixed.err;
}

// A sample that kbench itself cannot finish (its file cannot be written) fails alone.
TEST(Generate, ASampleFailingInKbenchLeavesTheOthers) {
    fs::path dir = scratch("blocked");
    fs::path problems = write_problems(dir, 2);
    fs::create_directories(dir / "runs" / "b" / "level_1_problem_1_sample_0_kernel.py");
    FakeLlmServer server({{"rules", {{{"text", answer(right_candidate())}}}}}, dir / "server");
    auto r = kbench::test::run_command(kbench_command(
        std::vector<std::string>{"generate", "--dataset", problems.string(), "--run", "b",
                                 "--runs-dir", (dir / "runs").string(), "--concurrency", "1"} +
        model_args(server)));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("failed in kbench"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_regular_file(dir / "runs" / "b" / "level_1_problem_2_sample_0_kernel.py"));
}

TEST(Generate, StopsCleanlyAtTheSpendingCap) {
    fs::path dir = scratch("cap");
    fs::path problems = write_problems(dir, 3);
    fs::path prices = dir / "prices.json";
    std::ofstream(prices)
        << R"({"prices": [{"provider": "vllm", "model": "coder", "input": 1.0, "output": 1.0}]})";
    FakeLlmServer server(
        {{"rules",
          {{{"text", answer(right_candidate())}, {"usage", {{"input", 600000}, {"output", 0}}}}}}},
        dir / "server");
    auto r = kbench::test::run_command(
        kbench_command(std::vector<std::string>{"generate", "--dataset", problems.string(),
                                                "--backend", "cpu", "--concurrency", "1", "--run",
                                                "cap", "--runs-dir", (dir / "runs").string(),
                                                "--max-cost", "1.0", "--prices", prices.string()} +
                       model_args(server)));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(server.requests().size(), 2u);  // $0.60 each: the third is not sent
    EXPECT_NE(r.out.find("not asked (spending cap): 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cost: $1.2000"), std::string::npos) << r.out;
}

TEST(Generate, DryRunSaysWhatItWouldSendAndCost) {
    fs::path dir = scratch("dry");
    fs::path problems = write_problems(dir, 2);
    auto r = kbench::test::run_command(
        kbench_command({"generate", "--dry-run", "--dataset", problems.string(), "--provider",
                        "openai", "--model", "gpt-4.1", "--samples", "3"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("6 request(s)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("at $2.00 a million tokens"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists("runs/openai-gpt-4.1-cuda"));
    // kbench prompt shows a template as it is, and a problem's prompt as it would be sent.
    auto raw = kbench::test::run_command(kbench_command({"prompt", "--template", "refine"}));
    EXPECT_NE(raw.out.find("{{feedback}}"), std::string::npos) << raw.out;
    auto rendered = kbench::test::run_command(kbench_command(
        {"prompt", "--dataset", problems.string(), "--problems", "1", "--backend", "cpu"}));
    EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
    EXPECT_NE(rendered.out.find("return torch.relu(x)"), std::string::npos) << rendered.out;
    EXPECT_EQ(rendered.out.find("{{"), std::string::npos) << rendered.out;
}

TEST(Generate, ErrorsSayWhatToDo) {
    fs::path dir = scratch("errors");
    fs::path problems = write_problems(dir, 1);
    ::unsetenv("KBENCH_TEST_ABSENT_KEY");
    auto r = kbench::test::run_command(kbench_command(
        {"generate", "--dataset", problems.string(), "--provider", "openai", "--model", "gpt-4o",
         "--api-key-env", "KBENCH_TEST_ABSENT_KEY", "--runs-dir", (dir / "runs").string()}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("KBENCH_TEST_ABSENT_KEY is not set"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("export KBENCH_TEST_ABSENT_KEY"), std::string::npos) << r.err;
    auto unknown = kbench::test::run_command(kbench_command(
        {"generate", "--dataset", problems.string(), "--provider", "nope", "--model", "m"}));
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("unknown provider 'nope'"), std::string::npos) << unknown.err;
    auto cap = kbench::test::run_command(kbench_command(
        {"generate", "--dataset", problems.string(), "--provider", "openai", "--model",
         "no-such-model", "--api-key-env", "KBENCH_TEST_KEY", "--max-cost", "5"}));
    EXPECT_EQ(cap.exit_code, 2);
    EXPECT_NE(cap.err.find("--max-cost needs a price for no-such-model"), std::string::npos)
        << cap.err;
    // Nothing listening at the provider's address: said at once, with the URL tried, for
    // generate and refine alike (no retries, no engine started).
    for (const char* command : {"generate", "refine"}) {
        auto start = std::chrono::steady_clock::now();
        std::vector<std::string> args = {command,
                                         "--dataset",
                                         problems.string(),
                                         "--provider",
                                         "vllm",
                                         "--model",
                                         "m",
                                         "--base-url",
                                         "http://127.0.0.1:9/v1",
                                         "--runs-dir",
                                         (dir / "runs").string()};
        if (std::string(command) == "refine")
            args = args + std::vector<std::string>{"--device", "cpu"};
        auto none = kbench::test::run_command(kbench_command(args));
        double took =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(none.exit_code, 2) << command << ": " << none.err;
        EXPECT_NE(none.err.find("nothing answers at http://127.0.0.1:9/v1/chat/completions"),
                  std::string::npos)
            << command << ": " << none.err;
        EXPECT_LT(took, 10) << command;
    }
}

TEST(Generate, InterruptedKeepsWhatItHasAndResumes) {
    fs::path dir = scratch("interrupt");
    fs::path problems = write_problems(dir, 2);
    std::vector<std::string> args = {"generate",
                                     "--dataset",
                                     problems.string(),
                                     "--backend",
                                     "cpu",
                                     "--concurrency",
                                     "1",
                                     "--run",
                                     "i",
                                     "--runs-dir",
                                     (dir / "runs").string()};
    fs::path run = dir / "runs" / "i";
    {
        FakeLlmServer server({{"rules",
                               {{{"times", 1}, {"text", answer(right_candidate())}},
                                {{"delay_s", 60}, {"text", answer(right_candidate())}}}}},
                             dir / "server1");
        std::string line = kbench_command(args + model_args(server)) + " >" +
                           quote((dir / "out.txt").string()) + " 2>" +
                           quote((dir / "err.txt").string()) + " & echo $!";
        auto started = kbench::test::run_command(line);
        pid_t pid = std::stoi(started.out);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (server.requests().size() < 2 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ASSERT_EQ(server.requests().size(), 2u);
        ::kill(pid, SIGINT);
        int waited = 0;
        while (::kill(pid, 0) == 0 && waited++ < 200)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::string err = kbench::read_file(dir / "err.txt");
        EXPECT_NE(err.find("interrupted (signal 2 (SIGINT"), std::string::npos) << err;
        EXPECT_NE(err.find("to go on"), std::string::npos) << err;
        EXPECT_TRUE(fs::exists(run / "level_1_problem_1_sample_0_kernel.py"));
        EXPECT_FALSE(fs::exists(run / "level_1_problem_2_sample_0_kernel.py"));
    }
    FakeLlmServer server({{"rules", {{{"text", answer(right_candidate())}}}}}, dir / "server2");
    auto r = kbench::test::run_command(kbench_command(args + model_args(server)));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(server.requests().size(), 1u);
    EXPECT_TRUE(fs::exists(run / "level_1_problem_2_sample_0_kernel.py"));
}

// The model answers without code, then with a wrong kernel, then, having seen what the
// evaluation found, with a right one. The test reads the feedback the server received.
TEST(Refine, FeedsBackWhatTheEvaluationFoundUntilTheCandidateIsRight) {
    fs::path dir = scratch("refine");
    fs::path problems = write_problems(dir, 1);
    std::vector<std::string> args = {
        "refine", "--dataset",  problems.string(),       "--device", "cpu", "--turns", "3", "--run",
        "r",      "--runs-dir", (dir / "runs").string(), "--trials", "2"};
    fs::path run = dir / "runs" / "r";
    std::vector<json> requests;
    {
        FakeLlmServer server({{"rules",
                               {{{"match", {{"contains", "attempt 2) was evaluated"}}},
                                 {"text", answer(right_candidate())}},
                                {{"match", {{"contains", "attempt 1) was evaluated"}}},
                                 {"text", answer(wrong_candidate())}},
                                {{"text", "Let me think about the memory layout first."}}}}},
                             dir / "server1");
        auto r = kbench::test::run_command(kbench_command(args + model_args(server)));
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        requests = server.requests();
        ASSERT_EQ(requests.size(), 3u) << r.err;
        EXPECT_NE(r.out.find("turn 2"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("samples with a correct candidate: 1 of 1"), std::string::npos)
            << r.out;
    }
    auto last_user = [](const json& request) {
        return request["body"]["messages"].back()["content"].get<std::string>();
    };
    // Turn 1 was told that no code could be taken from its answer.
    std::string first_feedback = last_user(requests[1]);
    EXPECT_NE(first_feedback.find("No program was evaluated"), std::string::npos) << first_feedback;
    EXPECT_NE(first_feedback.find("ModelNew"), std::string::npos) << first_feedback;
    // Turn 2 was told that its kernel was wrong, and where.
    std::string second_feedback = last_user(requests[2]);
    EXPECT_NE(second_feedback.find("incorrect"), std::string::npos) << second_feedback;
    EXPECT_NE(second_feedback.find("max_abs_diff"), std::string::npos) << second_feedback;
    EXPECT_NE(second_feedback.find("(at ["), std::string::npos) << second_feedback;
    // The whole conversation goes back: prompt, answer, feedback, answer, feedback.
    EXPECT_EQ(requests[2]["body"]["messages"].size(), 5u);
    EXPECT_NE(
        requests[2]["body"]["messages"][3]["content"].get<std::string>().find("leaky_relu_cpu"),
        std::string::npos);

    json summary = json::parse(kbench::read_file(run / "refine.json"));
    ASSERT_EQ(summary["per_turn"].size(), 3u);
    EXPECT_EQ(summary["per_turn"][0]["fast_0"], 0.0);
    EXPECT_EQ(summary["per_turn"][1]["fast_0"], 0.0);
    EXPECT_EQ(summary["per_turn"][2]["fast_0"], 1.0);
    const json& turns = summary["samples"][0]["turns"];
    EXPECT_EQ(turns[0]["status"], "no_code");
    EXPECT_EQ(turns[1]["status"], "incorrect");
    EXPECT_EQ(turns[2]["status"], "correct");
    EXPECT_EQ(summary["samples"][0]["best"]["turn"], 2);
    EXPECT_EQ(kbench::read_file(run / "level_1_problem_1_sample_0_kernel.py"), right_candidate());
    EXPECT_TRUE(fs::exists(run / "turns" / "level_1_problem_1_sample_0_turn_1_kernel.py"));
    EXPECT_EQ(count_rows(run / "kbench.db", "SELECT count(*) FROM turns"), 3);

    // Run again: nothing is asked or evaluated twice, and the summary is the same.
    FakeLlmServer again({{"rules", {{{"status", 500}}}}}, dir / "server2");
    auto start = std::chrono::steady_clock::now();
    auto r = kbench::test::run_command(kbench_command(args + model_args(again)));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(again.requests().size(), 0u);
    EXPECT_LT(took, 10);  // no judge started
    EXPECT_NE(r.out.find("answers taken from this run's records: 3"), std::string::npos) << r.out;
}

}  // namespace
