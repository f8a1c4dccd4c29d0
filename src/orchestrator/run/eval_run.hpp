#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/run/run_plan.hpp"
#include "report/reporter.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"

namespace kbench::orchestrator {

// One run of kbench eval over its folder: the folder held for writing (its lock), its store, the
// settings it was made with, and how it resumes (run_plan.hpp). Verdicts are stored as they
// come; an interruption (interruption.hpp) writes what is finished and takes back the attempts
// under way when kbench can vouch for the signal's origin.
class EvalRun {
  public:
    // Makes the folder if need be and takes its lock (UsageError naming the holder), opens the
    // store (its version checked) and checks settings against those the run was made with
    // (UsageError naming the fields that differ), recording them the first time.
    EvalRun(const fs::path& run_dir, const std::optional<fs::path>& db, const CheckConfig& settings,
            std::vector<EvalItem> items, bool force);
    ~EvalRun();

    const RunPlan& plan() const { return plan_; }

    // Keeps the selection in the store (its problems, the items and the problems without a
    // usable candidate), merged with what earlier commands on the run selected, so that a score
    // or a report needs the store alone (load_run_results).
    void record_selection(const std::vector<report::Unanswered>& unanswered);
    const fs::path& dir() const { return dir_; }
    // Whether any item is left to evaluate (an engine is needed).
    bool needs_engine() const { return !plan_.suspects.empty() || !plan_.rest.empty(); }

    // Reports the stored verdicts (out.stored), gives condemned items their crash verdicts,
    // evaluates the rest on one engine (suspects alone, first), and finishes out with every
    // verdict of the run in outcome (its run fields filled in): of every selection the run was
    // evaluated with, as kbench score reads it, not only this command's. engine: needed when
    // needs_engine().
    report::RunOutcome execute(const std::optional<EngineOptions>& engine, report::Reporter& out,
                               report::RunOutcome outcome,
                               const std::function<void(const std::string&)>& log);

  private:
    Verdict verdict_of(const store::StoredVerdict& stored, const EvalItem& item) const;
    void record(const EvalItem& item, const Verdict& v, report::Reporter& out);
    void fill(report::RunOutcome& outcome, int signal) const;

    fs::path dir_;
    std::unique_ptr<store::RunLock> lock_;
    std::unique_ptr<store::VerdictStore> store_;
    CheckConfig settings_;
    std::vector<EvalItem> items_;
    RunPlan plan_;
    std::vector<store::StoredVerdict> done_;  // the stored verdicts of plan_.done, in its order
    std::mutex record_mutex_;
    std::vector<std::string> in_flight_;
};

// A run's results as its store keeps them: every item's verdict under the item's own name,
// the problems selected and those without a usable candidate. Stores of runs made before kbench
// kept selections give their verdicts alone (problems without any verdict are then unknown).
struct RunResults {
    std::vector<Verdict> verdicts;
    std::vector<score::ProblemEntry> problems;
    std::vector<report::Unanswered> unanswered;
    std::size_t not_evaluated = 0;  // items the store has no verdict for yet
    json config;                    // the run's settings
    bool has_selection = false;
};
RunResults load_run_results(store::VerdictStore& store);

}  // namespace kbench::orchestrator
