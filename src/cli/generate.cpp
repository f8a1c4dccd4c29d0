// kbench generate: ask a language model for candidates, written in KernelBench's run layout.
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"
#include "llm/generator.hpp"
#include "orchestrator/run/interruption.hpp"
#include "process/process.hpp"
#include "store/model_records.hpp"
#include "store/run_lock.hpp"

namespace kbench::cli {
namespace {

struct GenerateOptions {
    SelectionOptions selection;
    ModelOptions model;
    std::string backend = "cuda";
    int samples = 1;
    std::string run_name;
    std::string runs_dir = "runs";
    std::optional<std::string> python;
    bool quiet = false;
    bool dry_run = false;
};

struct Task {
    dataset::Problem problem;
    int sample = 0;
};

// What became of the samples, counted as they finish.
struct Tally {
    std::atomic<int> written{0}, kept{0}, no_code{0}, failed{0}, not_asked{0};
};

// The sample already has its candidate from an earlier run of the command, asked with these
// settings (the same request: call_key).
bool already_written(const std::vector<store::TurnRecord>& turns, const Task& t,
                     const fs::path& path, const std::string& call_key) {
    for (const auto& r : turns)
        if (r.level == t.problem.level && r.problem_id == t.problem.id && r.sample_id == t.sample &&
            r.turn == 0 && !r.candidate_path.empty() && r.call_key == call_key) {
            std::error_code error;
            if (!fs::exists(path, error)) return false;
            try {
                return sha256_hex(read_file(path)) == r.candidate_sha256;
            } catch (const Error&) {
                return false;
            }
        }
    return false;
}

// What the requests would send, and what that costs, without sending anything.
int dry_run(const std::vector<dataset::Problem>& problems, const GenerateOptions& o,
            const llm::GenerationSettings& settings, Backend backend,
            const llm::ClientOptions& client) {
    std::size_t characters = 0;
    for (const auto& p : problems)
        for (const auto& m : llm::first_messages(settings, p, backend))
            characters += m.content.size();
    characters += o.model.system.size() * problems.size();
    characters *= std::size_t(o.samples);
    double tokens = double(characters) / 4;  // about 4 characters a token for English and code
    std::size_t requests = problems.size() * std::size_t(o.samples);
    std::cout << "kbench generate --dry-run: " << requests << " request(s), prompts of "
              << characters << " characters in all, about " << long(tokens)
              << " input tokens (4 characters a token)\n";
    auto price = client.prices.find(client.provider, o.model.model);
    if (!price) {
        std::cout << "  no price for " << o.model.model << ": add one with --prices FILE\n";
        return 0;
    }
    char line[256];
    std::snprintf(line, sizeof(line),
                  "  input about $%.2f at $%.2f a million tokens; each 1,000 answer tokens a "
                  "request add $%.2f in all (reasoning included)\n",
                  tokens * price->input / 1e6, price->input,
                  double(requests) * 1000 * price->output / 1e6);
    std::cout << line;
    return 0;
}

int run_generate(const GenerateOptions& o, const std::string& command_line) {
    Backend backend = parse_backend(o.backend);
    std::string python = build::find_python(o.python);
    RunOptions quiet_options;
    quiet_options.quiet = o.quiet;
    auto log = make_logger(quiet_options);
    auto problems = selected_problems(o.selection, python);
    auto settings = make_generation_settings(o.model, backend);
    if (o.dry_run) {
        llm::ClientOptions client;
        client.provider =
            llm::find_provider(o.model.provider, o.model.base_url, o.model.api_key_env);
        for (const auto& file : o.model.prices) client.prices.add_file(file);
        return dry_run(problems, o, settings, backend, client);
    }
    auto client_options = make_client_options(o.model, log);
    std::string run_name = o.run_name.empty() ? run_slug(o.model.provider + "-" + o.model.model +
                                                         "-" + std::string(to_string(backend)))
                                              : o.run_name;
    fs::path run_dir = fs::absolute(fs::path(o.runs_dir) / run_name);
    try {
        fs::create_directories(run_dir);
    } catch (const fs::filesystem_error& e) {
        throw UsageError(
            "cannot write the run folder " + run_dir.string() + ": " + e.code().message(),
            "pass --runs-dir somewhere writable");
    }
    store::RunLock lock(run_dir);
    store::ModelRecords records(run_dir / "kbench.db");
    records.claim("generate", run_dir);
    client_options.cache = [&records](const std::string& key) -> std::optional<llm::ChatAnswer> {
        auto call = records.answered(key);
        if (!call) return std::nullopt;
        return llm::ChatAnswer::from_json(call->answer);
    };
    llm::ModelClient client(client_options);
    llm::Generator generator(client, records, settings);

    std::vector<Task> tasks;
    for (const auto& p : problems)
        for (int s = 0; s < o.samples; ++s) tasks.push_back({p, s});
    auto turns = records.turns();
    if (log)
        log(std::to_string(tasks.size()) + " sample(s) of " + std::to_string(problems.size()) +
            " problem(s) from " + client.provider().name + " " + o.model.model + " into " +
            run_dir.string());

    Tally tally;
    orchestrator::InterruptGuard guard([&](int signal, orchestrator::Origin) {
        std::cerr << "kbench: interrupted (" << sandbox::describe_signal(signal)
                  << "): " << tally.written + tally.kept << " of " << tasks.size()
                  << " candidate(s) are in " << run_dir.string()
                  << "; every answer received is kept.\n  to go on: " << command_line << "\n";
    });
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < std::min<int>(o.model.concurrency, int(tasks.size())); ++w)
        workers.emplace_back([&] {
            for (;;) {
                std::size_t i = next++;
                if (i >= tasks.size() || orchestrator::InterruptGuard::interrupted() ||
                    !client.unreachable().empty())
                    return;
                const Task& t = tasks[i];
                fs::path path =
                    run_dir / llm::candidate_file_name(t.problem.level, t.problem.id, t.sample);
                std::string label = llm::sample_label(t.problem.level, t.problem.id, t.sample);
                try {
                    auto first = generator.first_messages(t.problem, backend);
                    if (already_written(turns, t, path, generator.cache_key(first, t.sample))) {
                        ++tally.kept;
                        continue;
                    }
                    auto result = generator.ask(t.problem, t.sample, 0, first, path);
                    std::string line;
                    if (result.exchange.over_budget) {
                        ++tally.not_asked;
                        continue;
                    } else if (!result.exchange.ok && !client.unreachable().empty()) {
                        return;  // said once, below
                    } else if (!result.exchange.ok) {
                        ++tally.failed;
                        line = "request failed: " + result.exchange.error;
                    } else if (result.candidate_path.empty()) {
                        ++tally.no_code;
                        line = "no candidate in the answer: " + result.extraction.error;
                    } else {
                        ++tally.written;
                        line = "wrote " + result.candidate_path.filename().string() +
                               (result.exchange.cached ? " (answer from this run's records)" : "");
                    }
                    if (result.exchange.ok)
                        records.put_turn(llm::turn_record(t.problem, t.sample, 0, result));
                    if (log) log(label + ": " + line);
                } catch (const std::exception& e) {
                    // The sample fails (a file that cannot be written, a full disk); the others go
                    // on.
                    ++tally.failed;
                    if (log) log(label + ": failed in kbench: " + e.what());
                }
            }
        });
    for (auto& t : workers) t.join();
    if (orchestrator::InterruptGuard::interrupted()) return 130;
    if (std::string why = client.unreachable(); !why.empty())
        throw UsageError(why, "nothing was asked; run the same command again once it answers");

    auto spend = client.spend();
    std::cout << "kbench generate: " << tally.written + tally.kept << " of " << tasks.size()
              << " sample(s) have a candidate in " << run_dir.string() << "\n"
              << "  written now: " << tally.written << ", kept from before: " << tally.kept
              << ", answers without code: " << tally.no_code
              << ", failed requests: " << tally.failed;
    if (tally.not_asked) std::cout << ", not asked (spending cap): " << tally.not_asked;
    std::cout << "\n  requests answered by the provider: " << spend.requests
              << "; answers taken from this run's records: " << spend.cached
              << "; tokens: " << spend.input_tokens << " in, " << spend.output_tokens
              << " out; cost: " << describe_spend(client, o.model.model) << "\n";
    if (tally.not_asked)
        std::cout << "  stopped at the spending cap ($" << *o.model.max_cost
                  << "): raise --max-cost and run the same command to go on\n";
    if (tally.failed)
        std::cout << "  run the same command again to ask for the failed samples again\n";
    std::cout << "  next: kbench eval --dataset " << dataset_spec(o.selection) << " --candidates "
              << run_dir.string() << " --run " << run_name << "\n";
    return tally.written + tally.kept == int(tasks.size()) ? 0 : 1;
}

}  // namespace

Command add_generate_command(CLI::App& app, const std::string& command_line) {
    auto o = std::make_shared<GenerateOptions>();
    CLI::App* cmd = app.add_subcommand(
        "generate", "Ask a language model for candidates, in KernelBench's run layout");
    add_selection_options(cmd, o->selection);
    add_model_options(cmd, o->model);
    cmd->add_option("--backend", o->backend,
                    "What the candidates are written in: cuda, triton or cpu")
        ->capture_default_str()
        ->check(CLI::IsMember({"cuda", "triton", "cpu"}));
    cmd->add_option("--samples", o->samples, "Candidates a problem")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_option("--run", o->run_name,
                    "Run name (default: provider, model and backend); its folder is "
                    "RUNS_DIR/RUN");
    cmd->add_option("--runs-dir", o->runs_dir, "Where runs live")->capture_default_str();
    cmd->add_option("--python", o->python, "The Python that reads Parquet problem sets");
    add_quiet_flag(cmd, o->quiet);
    cmd->add_flag("--dry-run", o->dry_run,
                  "Send nothing: say how many requests, how many prompt tokens and what they "
                  "would cost");
    return [o, &command_line] { return run_generate(*o, command_line); };
}

}  // namespace kbench::cli
