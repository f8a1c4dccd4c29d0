// kbench refine: generate, evaluate and feed back what the evaluation found, turn after turn.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "llm/feedback.hpp"
#include "llm/generator.hpp"
#include "orchestrator/engine/eval_engine.hpp"
#include "orchestrator/engine/evaluator.hpp"
#include "orchestrator/run/interruption.hpp"
#include "orchestrator/run/run_plan.hpp"
#include "process/process.hpp"
#include "store/model_records.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"

namespace kbench::cli {
namespace {

struct RefineOptions {
    SelectionOptions selection;
    ModelOptions model;
    RunOptions run;
    std::string device = "auto";
    std::string gpus = "all";
    int cpu_judges = 1;
    int turns = 3;
    int samples = 1;
    std::optional<double> until_speedup;
    std::string run_name;
    std::string runs_dir = "runs";
};

// One turn's result, as the summary counts it.
struct TurnOutcome {
    int turn = 0;
    std::string status;  // a verdict's status, "no_code" or "request_failed"
    std::optional<double> speedup;
    std::string file;
};

// One sample of one problem, turn after turn.
struct Chain {
    dataset::Problem problem;
    int sample = 0;
    int turn = 0;
    std::vector<llm::Message> conversation;
    std::vector<TurnOutcome> outcomes;
    store::TurnRecord record;         // the current turn's, completed by its verdict
    std::optional<std::size_t> best;  // index into outcomes of the best correct turn
    std::string stopped;              // why it ended early, if it did
    bool finished = false;
};

// Indices of chains waiting for the model.
class ChainQueue {
  public:
    void push(std::size_t chain) {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            if (stopped_) return;
            waiting_.push_back(chain);
        }
        changed_.notify_one();
    }
    void close(bool drop_waiting = false) {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            closed_ = true;
            if (drop_waiting) {
                stopped_ = true;  // nothing more is asked, queued now or later
                waiting_.clear();
            }
        }
        changed_.notify_all();
    }
    std::optional<std::size_t> next() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (waiting_.empty() && !closed_ && !orchestrator::InterruptGuard::interrupted())
            changed_.wait_for(lock, std::chrono::milliseconds(100));
        if (waiting_.empty() || orchestrator::InterruptGuard::interrupted()) return std::nullopt;
        std::size_t chain = waiting_.front();
        waiting_.pop_front();
        return chain;
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::size_t> waiting_;
    bool closed_ = false;
    bool stopped_ = false;
};

bool better(const TurnOutcome& a, const TurnOutcome& b) {
    if (a.speedup && b.speedup) return *a.speedup > *b.speedup;
    return a.speedup.has_value() && !b.speedup.has_value();
}

std::string percent(int count, std::size_t total) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << (total ? 100.0 * count / double(total) : 0.0)
         << "%";
    return text.str();
}

class Refinement {
  public:
    Refinement(const RefineOptions& o, const std::string& command_line)
        : o_(o), command_line_(command_line) {}
    int run();

  private:
    void generate_turns();
    // The engine on the run's devices, fed with candidates as the model gives them.
    void evaluate(const std::string& python, const std::vector<std::string>& gpus,
                  fs::path& scratch);
    void ask(std::size_t c);
    void submit(std::size_t c, const llm::TurnResult& result);
    void on_verdict(std::size_t c, const orchestrator::EvalItem& item, const Verdict& verdict);
    // Records the turn's outcome and queues the next turn with the feedback, or ends the chain.
    void advance(std::size_t c, TurnOutcome outcome, const std::string& feedback, bool enough);
    void finish(std::size_t c, const std::string& why);
    void write_best(const Chain& chain);
    json summary() const;
    void print_summary(const json& s) const;

    const RefineOptions& o_;
    std::string command_line_;
    std::function<void(const std::string&)> log_;
    fs::path run_dir_;
    std::string run_name_;
    DeviceKind device_kind_ = DeviceKind::cpu;
    std::string device_name_;  // "cpu" or "cuda", as the user writes it
    Backend backend_ = Backend::cuda;
    CheckConfig config_;
    std::vector<dataset::Problem> problems_;
    std::unique_ptr<store::VerdictStore> verdicts_;
    std::unique_ptr<store::ModelRecords> records_;
    std::unique_ptr<llm::ModelClient> client_;
    std::unique_ptr<llm::Generator> generator_;
    std::vector<Chain> chains_;
    mutable std::mutex mutex_;  // chains_ and what follows
    std::size_t unfinished_ = 0;
    std::atomic<bool> engine_wanted_{false};
    std::vector<std::string> in_flight_;  // keys of the evaluations under way
    ChainQueue asks_;
    orchestrator::ItemFeed feed_;
};

int Refinement::run() {
    std::string python = build::find_python(o_.run.python);
    auto devices = select_devices(o_.device, o_.gpus, o_.cpu_judges);
    device_kind_ = devices.kind;
    device_name_ = to_string(device_kind_);
    config_ = make_config(o_.run, device_name_);
    backend_ = o_.run.backend == "auto"
                   ? (device_kind_ == DeviceKind::cpu ? Backend::cpu : Backend::cuda)
                   : parse_backend(o_.run.backend);
    log_ = make_logger(o_.run);
    problems_ = selected_problems(o_.selection, python);
    auto client_options = make_client_options(o_.model, log_);
    ModelOptions model = o_.model;
    model.gpu_peaks = o_.run.gpu_peaks;  // --hardware reads the run's GPU table
    auto settings = make_generation_settings(model, backend_);
    run_name_ = o_.run_name.empty()
                    ? run_slug("refine-" + o_.model.provider + "-" + o_.model.model + "-" +
                               std::string(to_string(backend_)) + "-" + device_name_)
                    : o_.run_name;
    run_dir_ = fs::absolute(fs::path(o_.runs_dir) / run_name_);
    try {
        fs::create_directories(run_dir_ / "turns");
    } catch (const fs::filesystem_error& e) {
        throw UsageError(
            "cannot write the run folder " + run_dir_.string() + ": " + e.code().message(),
            "pass --runs-dir somewhere writable");
    }
    store::RunLock lock(run_dir_);
    verdicts_ = store::open_sqlite_store(run_dir_ / "kbench.db");
    records_ = std::make_unique<store::ModelRecords>(run_dir_ / "kbench.db");
    records_->claim("refine", run_dir_);
    // A request that goes to the provider means work this run has not done yet: the engine starts.
    client_options.on_send = [this] { engine_wanted_ = true; };
    client_options.cache = [this](const std::string& key) -> std::optional<llm::ChatAnswer> {
        auto call = records_->answered(key);
        if (!call) return std::nullopt;
        return llm::ChatAnswer::from_json(call->answer);
    };
    client_ = std::make_unique<llm::ModelClient>(client_options);
    generator_ = std::make_unique<llm::Generator>(*client_, *records_, settings);

    for (const auto& p : problems_)
        for (int s = 0; s < o_.samples; ++s) chains_.push_back({p, s});
    unfinished_ = chains_.size();
    if (log_)
        log_(std::to_string(chains_.size()) + " sample(s) of " + std::to_string(problems_.size()) +
             " problem(s), up to " + std::to_string(o_.turns) + " turn(s) each, from " +
             client_->provider().name + " " + o_.model.model + ", evaluated on " + device_name_ +
             "; run folder " + run_dir_.string());

    orchestrator::InterruptGuard guard([&](int signal, orchestrator::Origin origin) {
        std::lock_guard<std::mutex> hold(mutex_);
        // As in eval: an interruption kbench can vouch for is no attempt of the candidates it
        // stopped; any other keeps their attempts (two such ends make a crash verdict).
        if (origin == orchestrator::Origin::outside)
            for (const auto& key : in_flight_) verdicts_->cancel_attempt(key);
        std::cerr << "kbench: interrupted (" << sandbox::describe_signal(signal)
                  << "): every answer and verdict so far is kept in " << run_dir_.string()
                  << "\n  to go on (nothing is asked or evaluated twice): " << command_line_
                  << std::endl;
    });
    for (std::size_t c = 0; c < chains_.size(); ++c) asks_.push(c);
    std::vector<std::thread> askers;
    for (int w = 0; w < std::min<int>(o_.model.concurrency, int(chains_.size())); ++w)
        askers.emplace_back([this] { generate_turns(); });

    // The engine (judges importing torch, a minute on a cold GPU machine) starts as soon as the
    // run asks the model anything new, while the model answers; a run whose every turn is in
    // its records starts it only if a candidate still needs a verdict.
    fs::path scratch;
    while (!engine_wanted_ && !feed_.has_items() && !feed_.closed() &&
           !orchestrator::InterruptGuard::interrupted())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
        if (!orchestrator::InterruptGuard::interrupted() && client_->unreachable().empty() &&
            (feed_.has_items() || engine_wanted_))
            evaluate(python, devices.gpus, scratch);
    } catch (...) {
        // No engine, no verdicts: ask the model nothing more, and let the requests under way end.
        asks_.close(true);
        feed_.close();
        for (auto& t : askers) t.join();
        throw;
    }
    for (auto& t : askers) t.join();
    if (!scratch.empty()) {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
    }
    if (orchestrator::InterruptGuard::interrupted()) return 130;
    if (std::string why = client_->unreachable(); !why.empty())
        throw UsageError(why, "nothing was asked; run the same command again once it answers");
    json s = summary();
    write_file_atomic(run_dir_ / "refine.json", s.dump(2) + "\n");
    print_summary(s);
    for (const auto& chain : chains_)
        if (!chain.best) return 1;
    return 0;
}

void Refinement::evaluate(const std::string& python, const std::vector<std::string>& gpus,
                          fs::path& scratch) {
    auto options = make_engine_options(o_.run, config_, python, device_kind_, gpus, o_.cpu_judges,
                                       "kbench-refine-", run_dir_ / "logs", scratch, log_);
    orchestrator::EvalEngine engine(options);
    engine.run(
        feed_,
        [this](const orchestrator::EvalItem& item, const Verdict& v, const std::string&) {
            std::size_t c = std::size_t(item.candidate.sample_id);
            {
                // Stored and no longer under way at once: an interruption sees one or the other.
                std::lock_guard<std::mutex> guard(mutex_);
                if (orchestrator::InterruptGuard::interrupted()) return;
                auto it = std::find(in_flight_.begin(), in_flight_.end(), item.key);
                if (it != in_flight_.end())
                    in_flight_.erase(it);  // one: the same code may run twice
                verdicts_->put({item.key, item.problem.level, item.problem.id, chains_[c].sample,
                                std::string(to_string(v.status)), v.to_json()});
            }
            on_verdict(c, item, v);
        },
        [this](const orchestrator::EvalItem& item) {
            std::lock_guard<std::mutex> guard(mutex_);
            verdicts_->begin_attempt(item.key);
            in_flight_.push_back(item.key);
        });
}

void Refinement::generate_turns() {
    while (auto c = asks_.next()) {
        try {
            ask(*c);
        } catch (const std::exception& e) {
            // This sample ends (a file that cannot be written, a full disk); the others go on.
            if (log_)
                log_("level " + std::to_string(chains_[*c].problem.level) + " problem " +
                     std::to_string(chains_[*c].problem.id) + ": failed in kbench: " + e.what());
            finish(*c, std::string("failed in kbench: ") + e.what());
        }
    }
}

void Refinement::ask(std::size_t c) {
    Chain chain;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        chain = chains_[c];
    }
    if (chain.turn == 0) chain.conversation = generator_->first_messages(chain.problem, backend_);
    fs::path path =
        run_dir_ / "turns" /
        llm::turn_file_name(chain.problem.level, chain.problem.id, chain.sample, chain.turn);
    auto result =
        generator_->ask(chain.problem, chain.sample, chain.turn, chain.conversation, path);
    std::string label =
        llm::sample_label(chain.problem.level, chain.problem.id, chain.sample, chain.turn);
    if (result.exchange.over_budget) return finish(c, "the spending cap was reached");
    if (!result.exchange.ok && !client_->unreachable().empty()) {
        // Nothing listens at the provider's address: the run ends, asking nothing more.
        asks_.close(true);
        feed_.close();
        return;
    }
    if (!result.exchange.ok) {
        if (log_) log_(label + ": request failed: " + result.exchange.error);
        return finish(c, "request failed: " + result.exchange.error);
    }
    store::TurnRecord record = llm::turn_record(chain.problem, chain.sample, chain.turn, result);
    {
        std::lock_guard<std::mutex> guard(mutex_);
        chains_[c].conversation = result.conversation;
        chains_[c].record = record;
    }
    if (result.candidate_path.empty()) {
        record.status = "no_code";
        records_->put_turn(record);
        if (log_) log_(label + ": no candidate in the answer: " + result.extraction.error);
        return advance(c, {chain.turn, "no_code", std::nullopt, ""},
                       llm::extraction_feedback(result.extraction), false);
    }
    records_->put_turn(record);
    submit(c, result);
}

void Refinement::submit(std::size_t c, const llm::TurnResult& result) {
    const Chain& chain = chains_[c];  // problem and sample never change
    orchestrator::EvalItem item;
    item.problem = chain.problem;
    // The chain's index travels as the sample id: the sink finds its chain with it.
    item.candidate =
        dataset::make_candidate(chain.problem.level, chain.problem.id, int(c),
                                *result.extraction.code, result.candidate_path.string());
    item.backend = detect_backend(o_.run.backend, item.candidate.code, device_kind_);
    item.key = orchestrator::item_key(item.problem, item.candidate, item.backend, config_);
    // eval's resume rule (orchestrator::plan_run) for this one item.
    std::optional<store::StoredVerdict> stored = verdicts_->find(item.key);
    orchestrator::ItemRecord record;
    if (stored) record.status = stored->status;
    record.attempts = verdicts_->attempts(item.key);
    orchestrator::RunPlan plan = orchestrator::plan_run({record}, false);
    if (!plan.done.empty()) return on_verdict(c, item, Verdict::from_json(stored->verdict));
    if (!plan.condemned.empty()) {
        int attempts = plan.condemned.front().second;
        // It stopped kbench twice already: a crash, not a third try.
        Verdict v = orchestrator::make_verdict(config_, orchestrator::problem_spec(item.problem),
                                               orchestrator::candidate_spec(item), "");
        decide(v, orchestrator::condemned(attempts, false));
        verdicts_->put(
            {item.key, item.problem.level, item.problem.id, chain.sample, "crash", v.to_json()});
        return on_verdict(c, item, v);
    }
    feed_.push(std::move(item));
}

void Refinement::on_verdict(std::size_t c, const orchestrator::EvalItem& item, const Verdict& v) {
    // Feedback from the verdict as stored, so that a rerun asks exactly the same next question.
    Verdict stored = Verdict::from_json(json::parse(dump_text(v.to_json())));
    int turn = chains_[c].turn;
    TurnOutcome outcome{turn, std::string(to_string(stored.status)), stored.speedup,
                        item.candidate.source};
    store::TurnRecord record = chains_[c].record;  // the chain is this turn's until advance()
    record.verdict_key = item.key;
    record.status = outcome.status;
    record.speedup = stored.speedup;
    records_->put_turn(record);
    std::string label =
        llm::sample_label(item.problem.level, item.problem.id, chains_[c].sample, turn);
    if (log_) {
        std::ostringstream text;
        text << label << ": " << outcome.status;
        if (stored.speedup)
            text << ", " << std::fixed << std::setprecision(2) << *stored.speedup << "x";
        if (stored.status != Status::correct && !stored.reason.empty())
            text << " (" << last_line(stored.reason).substr(0, 160) << ")";
        log_(text.str());
    }
    bool enough = stored.status == Status::correct && o_.until_speedup && stored.speedup &&
                  *stored.speedup >= *o_.until_speedup;
    advance(c, outcome, llm::feedback_text(stored), enough);
}

void Refinement::advance(std::size_t c, TurnOutcome outcome, const std::string& feedback,
                         bool enough) {
    bool next = false;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        Chain& chain = chains_[c];
        chain.outcomes.push_back(outcome);
        if (outcome.status == "correct" &&
            (!chain.best || better(outcome, chain.outcomes[*chain.best])))
            chain.best = chain.outcomes.size() - 1;
        write_best(chain);
        if (!enough && chain.turn + 1 < o_.turns) {
            chain.conversation =
                generator_->with_feedback(chain.conversation, chain.turn, feedback);
            ++chain.turn;
            next = true;
        }
    }
    if (next)
        asks_.push(c);
    else
        finish(c, enough ? "fast enough" : "");
}

void Refinement::finish(std::size_t c, const std::string& why) {
    std::lock_guard<std::mutex> guard(mutex_);
    Chain& chain = chains_[c];
    if (chain.finished) return;
    chain.finished = true;
    chain.stopped = why;
    if (--unfinished_ == 0) {
        asks_.close();
        feed_.close();
    }
}

// The sample's candidate in KernelBench's layout: its best correct turn, else its last.
void Refinement::write_best(const Chain& chain) {
    const TurnOutcome* pick = chain.best ? &chain.outcomes[*chain.best] : nullptr;
    if (!pick)
        for (const auto& o : chain.outcomes)
            if (!o.file.empty()) pick = &o;
    if (!pick) return;
    write_file_atomic(
        run_dir_ / llm::candidate_file_name(chain.problem.level, chain.problem.id, chain.sample),
        read_file(pick->file));
}

json Refinement::summary() const {
    std::lock_guard<std::mutex> guard(mutex_);
    const double ps[] = {0.0, 1.0, 1.5, 2.0};
    json per_turn = json::array();
    for (int t = 0; t < o_.turns; ++t) {
        json row = {{"turn", t}};
        for (double p : ps) {
            int count = 0;
            for (const auto& problem : problems_) {
                bool fast = false;
                for (const auto& chain : chains_) {
                    if (chain.problem.level != problem.level || chain.problem.id != problem.id)
                        continue;
                    for (const auto& o : chain.outcomes)
                        if (o.turn <= t && o.status == "correct" &&
                            (p == 0 || (o.speedup && *o.speedup >= p)))
                            fast = true;
                }
                count += fast;
            }
            std::ostringstream name;
            name << "fast_" << p;
            row[name.str()] = problems_.empty() ? 0.0 : double(count) / double(problems_.size());
        }
        per_turn.push_back(row);
    }
    json samples = json::array();
    for (const auto& chain : chains_) {
        json turns = json::array();
        for (const auto& o : chain.outcomes)
            turns.push_back({{"turn", o.turn},
                             {"status", o.status},
                             {"speedup", o.speedup ? json(*o.speedup) : json()},
                             {"file", o.file}});
        json row = {{"level", chain.problem.level},
                    {"problem_id", chain.problem.id},
                    {"name", chain.problem.name},
                    {"sample_id", chain.sample},
                    {"turns", turns},
                    {"stopped", chain.stopped},
                    {"file", (run_dir_ / llm::candidate_file_name(chain.problem.level,
                                                                  chain.problem.id, chain.sample))
                                 .string()}};
        if (chain.best) {
            const auto& best = chain.outcomes[*chain.best];
            row["best"] = {{"turn", best.turn},
                           {"speedup", best.speedup ? json(*best.speedup) : json()}};
        }
        samples.push_back(row);
    }
    auto spend = client_->spend();
    return {{"run", run_dir_.string()},
            {"provider", client_->provider().name},
            {"model", o_.model.model},
            {"backend", std::string(to_string(backend_))},
            {"device", device_name_},
            {"turns", o_.turns},
            {"problems", problems_.size()},
            {"timed", config_.measure},
            {"per_turn", per_turn},
            {"samples", samples},
            {"spend",
             {{"usd", spend.usd},
              {"cost_known", spend.cost_known},
              {"input_tokens", spend.input_tokens},
              {"output_tokens", spend.output_tokens},
              {"requests", spend.requests},
              {"from_records", spend.cached}}}};
}

void Refinement::print_summary(const json& s) const {
    std::ostream& out = std::cout;
    out << "kbench refine: " << s["problems"].get<int>() << " problem(s), " << o_.samples
        << " sample(s) each, up to " << o_.turns << " turn(s), " << s["provider"].get<std::string>()
        << " " << s["model"].get<std::string>() << "\n\n";
    out << "  after turn   fast_0   fast_1   fast_1.5   fast_2\n";
    for (const auto& row : s["per_turn"]) {
        auto cell = [&](const char* key, int width, bool needs_timing) {
            std::ostringstream text;
            if (needs_timing && !config_.measure)
                text << "n/a";
            else
                text << std::fixed << std::setprecision(1) << 100.0 * row[key].get<double>() << "%";
            out << std::setw(width) << text.str();
        };
        out << "  " << std::setw(10) << row["turn"].get<int>();
        cell("fast_0", 9, false);
        cell("fast_1", 9, true);
        cell("fast_1.5", 11, true);
        cell("fast_2", 9, true);
        out << "\n";
    }
    out << "\n  best correct candidate a sample:\n";
    for (const auto& row : s["samples"]) {
        out << "    level " << row["level"].get<int>() << " problem "
            << row["problem_id"].get<int>() << " sample " << row["sample_id"].get<int>() << " ("
            << row["name"].get<std::string>() << "): ";
        if (row.contains("best")) {
            out << "turn " << row["best"]["turn"].get<int>();
            if (row["best"]["speedup"].is_number())
                out << ", " << std::fixed << std::setprecision(2)
                    << row["best"]["speedup"].get<double>() << "x";
        } else {
            std::string statuses;
            for (const auto& t : row["turns"])
                statuses += (statuses.empty() ? "" : ", ") + t["status"].get<std::string>();
            out << "none correct (" << (statuses.empty() ? "no turn" : statuses) << ")";
        }
        if (!row["stopped"].get<std::string>().empty())
            out << "; stopped: " << row["stopped"].get<std::string>();
        out << "\n";
    }
    int correct = 0;
    for (const auto& row : s["samples"]) correct += row.contains("best");
    const auto& spend = s["spend"];
    out << "\n  samples with a correct candidate: " << correct << " of " << s["samples"].size()
        << " (" << percent(correct, s["samples"].size()) << ")\n"
        << "  requests answered by the provider: " << spend["requests"].get<int>()
        << "; answers taken from this run's records: " << spend["from_records"].get<int>()
        << "; tokens: " << spend["input_tokens"].get<long>() << " in, "
        << spend["output_tokens"].get<long>()
        << " out; cost: " << describe_spend(*client_, o_.model.model) << "\n"
        << "  files: " << (run_dir_ / "refine.json").string() << ", every turn in "
        << (run_dir_ / "turns").string() << ", the best a sample in KernelBench's layout in "
        << run_dir_.string() << "\n"
        << "  KernelBench's results files: kbench eval --candidates " << run_dir_.string()
        << " --run " << run_name_ << " --device " << device_name_ << "\n";
}

}  // namespace

Command add_refine_command(CLI::App& app, const std::string& command_line) {
    auto o = std::make_shared<RefineOptions>();
    CLI::App* cmd = app.add_subcommand(
        "refine",
        "Generate candidates with a language model, evaluate them, and feed back what the "
        "evaluation found, for several turns");
    add_selection_options(cmd, o->selection);
    add_model_options(cmd, o->model, false);
    cmd->add_option("--turns", o->turns, "Turns a sample gets (the first answer is turn 0)")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_option("--samples", o->samples, "Independent samples a problem")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_option("--until-speedup", o->until_speedup,
                    "Stop a sample once it is correct and at least this many times faster")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
    cmd->add_option("--gpus", o->gpus, "GPUs to use: all, or ordinals like 0,1")
        ->capture_default_str();
    cmd->add_option("--cpu-judges", o->cpu_judges, "On the CPU: judges evaluating side by side")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_option("--run", o->run_name,
                    "Run name (default: from provider, model, backend and device)");
    cmd->add_option("--runs-dir", o->runs_dir, "Where runs live")->capture_default_str();
    add_run_options(cmd, o->run);
    return [o, &command_line] {
        Refinement refinement(*o, command_line);
        return refinement.run();
    };
}

}  // namespace kbench::cli
