#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"
#include "report/progress.hpp"
#include "score/kernelbench_view.hpp"

namespace kbench::report {

// A selected problem that no verdict speaks for, and why: no candidate file, a dangling link,
// an unreadable file, ...
struct Unanswered {
    int level = 0;
    int id = 0;
    std::string name;
    std::string why;
};

// What a command ends with, for the reporters' finish: every verdict of its items (stored
// before or new), the selection, and what the writers wrote.
struct RunOutcome {
    std::string run_dir;  // empty: no run folder (kbench check)
    std::vector<Verdict> verdicts;
    std::vector<score::ProblemEntry> problems;
    std::vector<Unanswered> unanswered;
    std::vector<std::pair<std::string, std::string>> files;  // what, path: the writers add
    int signal = 0;                 // the SIGINT/SIGTERM that interrupted it, or 0
    std::size_t not_evaluated = 0;  // items without a verdict when it stopped
    bool exclude_flagged = false;
    bool timed = true;                // --no-timing: false
    double target_rel_halfwidth = 0;  // for the unconverged timings' warning
    nlohmann::json baseline;          // KernelBench's baseline file for its view, or null
    std::string baseline_source;      // its path
    std::string resume;               // the command that resumes the run
};

// Writes verdicts as they come, and what a command ends with; one implementation per output.
class Reporter {
  public:
    virtual ~Reporter() = default;
    virtual void verdict(const Verdict& verdict) = 0;  // a new verdict
    virtual void stored(const Verdict&) {}             // a verdict the store already held
    virtual void finish(RunOutcome&) {}
};

// Every output of a command behind one reporter: each call goes to each, in the order added.
class Multiplexer final : public Reporter {
  public:
    void add(std::unique_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
    void verdict(const Verdict& verdict) override;
    void stored(const Verdict& verdict) override;
    void finish(RunOutcome& outcome) override;

  private:
    std::vector<std::unique_ptr<Reporter>> reporters_;
};

// A block of aligned lines a person reads.
class TextReporter final : public Reporter {
  public:
    explicit TextReporter(std::ostream& out) : out_(out) {}
    void verdict(const Verdict& verdict) override;

  private:
    std::ostream& out_;
};

// One JSON object a line, in the verdict schema; stored verdicts too (a finished run's --json
// prints them all).
class JsonLinesReporter final : public Reporter {
  public:
    explicit JsonLinesReporter(std::ostream& out) : out_(out) {}
    void verdict(const Verdict& verdict) override;
    void stored(const Verdict& verdict) override { JsonLinesReporter::verdict(verdict); }

  private:
    std::ostream& out_;
};

// A line a verdict naming its problem and candidate, and the status line (progress.hpp).
class ProgressReporter final : public Reporter {
  public:
    ProgressReporter(std::size_t total, std::ostream& out, bool terminal)
        : progress_(total, out, terminal) {}
    void verdict(const Verdict& verdict) override;
    void finish(RunOutcome&) override { progress_.finish(); }

  private:
    Progress progress_;
};

// RUN/verdicts.jsonl: every verdict of the run, one a line.
class VerdictsFileWriter final : public Reporter {
  public:
    void verdict(const Verdict&) override {}
    void finish(RunOutcome& outcome) override;
};

// KernelBench's eval_results.json files (kernelbench_results.hpp).
class KernelBenchWriter final : public Reporter {
  public:
    void verdict(const Verdict&) override {}
    void finish(RunOutcome& outcome) override;
};

// The summary a person reads at the end of a run: the score (every selected problem counted),
// KernelBench's sample-0 view, a table a problem, warnings, and where every file is.
class SummaryReporter final : public Reporter {
  public:
    explicit SummaryReporter(std::ostream& out) : out_(out) {}
    void verdict(const Verdict&) override {}
    void finish(RunOutcome& outcome) override;

  private:
    std::ostream& out_;
};

std::string format_verdict(const Verdict& verdict);

// "level 1 problem 19 (19_ReLU), sample 0 (level_1_problem_19_sample_0_kernel.py)".
std::string describe_item(const Verdict& verdict);

// "correct, 1.23x" / "incorrect: max abs 0.5" / "compile_error: ...": a verdict in a few words.
std::string verdict_brief(const Verdict& verdict);

}  // namespace kbench::report
