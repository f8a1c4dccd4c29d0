// kbench serve: an evaluation service behind an HTTP API (docs/service.md).
#include <sys/stat.h>

#include <fstream>
#include <iostream>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "orchestrator/run/interruption.hpp"
#include "store/run_lock.hpp"
#include "store/verdict_store.hpp"
#ifdef KBENCH_WITH_SERVICE
#include "service/evaluation_service.hpp"
#include "service/http_api.hpp"
#endif

namespace kbench::cli {
namespace {

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8000;
    std::optional<std::string> token_file;
    std::size_t queue_size = 1000;
    double max_request_mib = 16;
    std::string dataset;
    std::string device = "auto";
    std::string gpus = "all";
    int cpu_judges = 1;
    std::string runs_dir = "runs";
    std::string run_name = "serve";
    bool trust_reference_code = false;
    RunOptions run;
};

bool loopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

#ifdef KBENCH_WITH_SERVICE
std::string read_token(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077))
        throw UsageError("the token file " + path + " can be read by other users",
                         "chmod 600 " + path);
    std::string token = read_file(path);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
        token.pop_back();
    if (token.size() < 16)
        throw UsageError("the token in " + path + " is " + std::to_string(token.size()) +
                             " characters; a token of at least 16 is needed",
                         "write a random one: head -c 32 /dev/urandom | base64 > " + path);
    return token;
}

int run_serve(const ServeOptions& o) {
    std::optional<std::string> token;
    if (o.token_file) token = read_token(*o.token_file);
    if (!loopback(o.host) && !token)
        throw UsageError("kbench serve runs the code of anyone who reaches it: listening on " +
                             o.host + " needs a token",
                         "pass --token-file FILE (callers send Authorization: Bearer TOKEN), or "
                         "keep the default --host 127.0.0.1");
    std::string python = build::find_python(o.run.python);
    auto devices = select_devices(o.device, o.gpus, o.cpu_judges);
    const std::string device_name(to_string(devices.kind));
    CheckConfig config = make_config(o.run, device_name);
    auto log = make_logger(o.run);

    service::ApiSettings api;
    api.config = config;
    api.device_kind = devices.kind;
    api.backend = o.run.backend;
    api.trust_reference_code = o.trust_reference_code;
    if (!o.dataset.empty()) {
        SelectionOptions selection;
        selection.dataset = o.dataset;
        std::vector<dataset::Problem> all;
        selected_problems(selection, python, &all);
        for (auto& p : all) api.problems[{p.level, p.id}] = p;
        api.dataset = o.dataset;
    } else {
        api.dataset = "none (send reference_code)";
    }

    // One store a run folder, held by this command alone, open to its user alone: the store
    // holds every caller's candidates and verdicts.
    fs::path dir = fs::absolute(fs::path(o.runs_dir) / o.run_name);
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    store::RunLock lock(dir);
    auto store = store::open_sqlite_store(dir / "kbench.db");

    fs::path scratch;
    orchestrator::EngineOptions engine =
        make_engine_options(o.run, config, python, devices.kind, devices.gpus, o.cpu_judges,
                            "kbench-serve-", dir / "logs", scratch, log);
    if (log) log("starting the judges and the builders");
    service::EvaluationService service(std::move(engine), std::move(store), {o.queue_size, config});
    service::HttpApi http(service, api, token);
    orchestrator::InterruptGuard guard([&](int, orchestrator::Origin) {
        std::cerr << "kbench serve: stopping (what is queued stays in " << dir.string()
                  << " and is evaluated when kbench serve starts there again)\n";
        http.stop();
        service.stop();
    });
    http.serve(o.host, o.port, std::size_t(o.max_request_mib * 1024 * 1024), [&](int port) {
        std::cerr << "kbench serve: listening on http://" << o.host << ":" << port << " ("
                  << service.health()["devices"].get<int>() << " "
                  << (devices.kind == DeviceKind::cpu ? "CPU judge(s)" : "GPU(s)") << "; store "
                  << (dir / "kbench.db").string() << ")" << std::endl;
    });
    service.stop();
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    return 0;
}
#else
int run_serve(const ServeOptions&) {
    throw UsageError("this kbench was built without cpp-httplib, which kbench serve needs",
                     "install libcpp-httplib-dev (scripts/install-deps.sh does) and build again");
}
#endif

}  // namespace

Command add_serve_command(CLI::App& app) {
    auto o = std::make_shared<ServeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "serve",
        "Evaluate candidates sent over HTTP, on every GPU (or the CPU): a reward service "
        "for trainers (docs/service.md)");
    cmd->add_option("--host", o->host,
                    "Address to listen on (anything but loopback needs --token-file)")
        ->capture_default_str();
    cmd->add_option("--port", o->port, "Port (0: any free one, printed)")->capture_default_str();
    cmd->add_option("--token-file", o->token_file,
                    "A file holding the token callers send as Authorization: Bearer TOKEN")
        ->check(CLI::ExistingFile);
    cmd->add_option("--queue-size", o->queue_size,
                    "Evaluations waiting at most; more get 429 with Retry-After")
        ->capture_default_str();
    cmd->add_option("--max-request-mib", o->max_request_mib, "A request's body, at most")
        ->capture_default_str();
    cmd->add_option("--dataset", o->dataset,
                    "Problems requests may name by level and problem_id (kernelbench, a .jsonl or "
                    "Parquet file, a folder); without it, requests send the reference's code");
    cmd->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
    cmd->add_option("--gpus", o->gpus, "GPUs to use: all, or ordinals like 0,1")
        ->capture_default_str();
    cmd->add_option("--cpu-judges", o->cpu_judges, "On the CPU: judges side by side")
        ->capture_default_str()
        ->check(at_least_one());
    cmd->add_flag("--trust-reference-code", o->trust_reference_code,
                  "Take references sent as code that are not problems of --dataset: they run in "
                  "kbench's judge, outside any sandbox, so only where every caller is trusted");
    cmd->add_option("--runs-dir", o->runs_dir, "Where runs live")->capture_default_str();
    cmd->add_option("--run", o->run_name,
                    "The run folder whose store keeps the verdicts and what is queued")
        ->capture_default_str();
    add_run_options(cmd, o->run);
    return [o] { return run_serve(*o); };
}

}  // namespace kbench::cli
