#include "service/http_api.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <ctime>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace kbench::service {
namespace {

using nlohmann::json;

Answer json_answer(int status, const json& body) {
    return {status, body.dump(), "application/json", {}};
}

Answer problem_answer(int status, const std::string& error, const std::string& what_to_do) {
    json body = {{"error", error}};
    if (!what_to_do.empty()) body["what_to_do"] = what_to_do;
    return json_answer(status, body);
}

// Equal strings, in a time that does not depend on where they differ.
bool same_secret(const std::string& given, const std::string& expected) {
    if (given.size() != expected.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < given.size(); ++i) diff |= given[i] ^ expected[i];
    return diff == 0;
}

std::string now_iso() {
    std::time_t t = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return text;
}

double query_seconds(const std::map<std::string, std::string>& query, const std::string& name,
                     double most) {
    auto it = query.find(name);
    if (it == query.end()) return 0;
    try {
        return std::clamp(std::stod(it->second), 0.0, most);
    } catch (const std::exception&) {
        throw UsageError(name + "=" + it->second + " is not a number of seconds",
                         "pass " + name + "=SECONDS (at most " + std::to_string(int(most)) + ")");
    }
}

// KernelGYM's error codes for kbench's statuses.
std::string kernelgym_error_code(const std::string& status, const json& verdict) {
    if (status == "compile_error") return "COMPILATION_ERROR";
    if (status == "load_error")
        return verdict.value("blame", "") == "candidate" ? "IMPORT_ERROR" : "SYSTEM_ERROR";
    if (status == "runtime_error" || status == "crash") return "RUNTIME_ERROR";
    if (status == "incorrect") return "CORRECTNESS_ERROR";
    if (status == "timeout") return "TIMEOUT_ERROR";
    if (status == "rejected") return "VALIDATION_ERROR";
    if (status == "infra_error") return "SYSTEM_ERROR";
    return "";
}

bool has_decoy(const json& verdict) {
    if (verdict.value("rule", "") == "decoy_kernel") return true;
    if (verdict.contains("integrity") && verdict["integrity"].is_object())
        for (const json& f : verdict["integrity"].value("findings", json::array()))
            if (f.is_object() && f.value("rule", "") == "decoy_kernel") return true;
    return false;
}

// A verdict as KernelGYM's EvaluationResponse (kbench's own verdict under metadata.kbench).
json kernelgym_result(const std::string& task_id, const json& verdict) {
    std::string status = verdict.value("status", "infra_error");
    bool compiled = status != "compile_error" &&
                    !(status == "load_error" && verdict.value("blame", "") == "candidate");
    bool failed =
        status == "compile_error" || status == "infra_error" || verdict.value("masked", false);
    auto ms = [&](const char* field) -> json {
        if (!verdict.contains(field) || !verdict[field].is_object()) return -1.0;
        const json& t = verdict[field];
        std::string statistic = t.value("statistic", "median");
        double us = t.value(statistic == "mean" ? "mean_us" : "median_us", 0.0);
        return us > 0 ? json(us / 1000.0) : json(-1.0);
    };
    double speedup = 0.0;
    if (status == "correct" && verdict.contains("speedup") && verdict["speedup"].is_number())
        speedup = verdict["speedup"];
    json metadata = {{"kbench", verdict}, {"mask", verdict.value("masked", false)}};
    if (verdict.contains("config") && verdict["config"].is_object())
        metadata["device"] = verdict["config"].value("device", "");
    std::string code = kernelgym_error_code(status, verdict);
    return {{"task_id", task_id},
            {"status", failed ? "failed" : "completed"},
            {"compiled", compiled},
            {"correctness", status == "correct"},
            {"decoy_kernel", has_decoy(verdict)},
            {"reference_runtime", ms("baseline")},
            {"kernel_runtime", ms("timing")},
            {"speedup", speedup},
            {"metadata", metadata},
            {"error_message", code.empty() ? json(nullptr) : json(verdict.value("reason", ""))},
            {"error_code", code.empty() ? json(nullptr) : json(code)},
            {"submitted_at", nullptr},
            {"completed_at", now_iso()},
            {"processing_time", nullptr},
            {"mask", verdict.value("masked", false)}};
}

}  // namespace

struct HttpApi::Server {
    httplib::Server http;
    std::atomic<int> waiting{0};
    std::mutex mutex;
    std::map<std::string, std::string> task_ids;  // KernelGYM's task_id -> kbench's id
};

HttpApi::HttpApi(EvaluationService& service, ApiSettings settings, std::optional<std::string> token)
    : service_(service),
      settings_(std::move(settings)),
      token_(std::move(token)),
      server_(std::make_shared<Server>()) {
    for (const auto& [id, problem] : settings_.problems) by_code_[problem.sha256] = problem;
}

orchestrator::EvalItem HttpApi::item_of(const json& r) const {
    if (!r.is_object())
        throw UsageError("an evaluation is a JSON object",
                         "send {\"reference\": {\"level\": L, \"problem_id\": P} or "
                         "\"reference_code\": \"...\", \"candidate\": \"...\"}");
    auto text = [&](std::initializer_list<const char*> names) -> std::optional<std::string> {
        for (const char* n : names)
            if (r.contains(n) && r[n].is_string()) return r[n].get<std::string>();
        return std::nullopt;
    };
    auto candidate = text({"candidate", "candidate_code", "kernel_code"});
    if (!candidate || candidate->find_first_not_of(" \t\r\n") == std::string::npos)
        throw UsageError("the evaluation has no candidate code",
                         "put the candidate's Python source (its class ModelNew) in \"candidate\"");
    // A whole number a field holds, within [0, INT_MAX].
    auto whole = [](const json& parent, const char* name, int otherwise) -> int {
        if (!parent.contains(name)) return otherwise;
        const json& v = parent[name];
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > INT_MAX)
            throw UsageError(std::string("\"") + name + "\" is not a whole number from 0 to " +
                                 std::to_string(INT_MAX),
                             "");
        return int(v.get<long long>());
    };
    dataset::Problem problem;
    if (auto code = text({"reference_code"})) {
        problem = dataset::make_problem(0, 0, "reference", *code, "request");
        // The code of a --dataset problem is that problem; other code runs in the judge.
        if (auto it = by_code_.find(problem.sha256); it != by_code_.end()) {
            problem = it->second;
        } else if (!settings_.trust_reference_code) {
            throw UsageError(
                "a reference sent as code runs in kbench's judge, outside any sandbox, and this "
                "server does not take one that is not a problem of its --dataset (" +
                    settings_.dataset + ")",
                "name a problem (\"reference\": {\"level\": L, \"problem_id\": P}) or send "
                "its exact code; or start kbench serve with --trust-reference-code where every "
                "caller is trusted");
        }
    } else if (r.contains("reference") && r["reference"].is_object()) {
        const json& ref = r["reference"];
        if (!ref.contains("level") || !ref.contains("problem_id"))
            throw UsageError("\"reference\" names no problem",
                             "give {\"level\": L, \"problem_id\": P} of the server's --dataset");
        int level = whole(ref, "level", 0), id = whole(ref, "problem_id", 0);
        auto it = settings_.problems.find({level, id});
        if (it == settings_.problems.end())
            throw UsageError("level " + std::to_string(level) + " problem " + std::to_string(id) +
                                 " is not in this server's problem set (" + settings_.dataset + ")",
                             "name a problem of " + settings_.dataset +
                                 ", or send the reference's code as \"reference_code\"");
        problem = it->second;
    } else {
        throw UsageError("the evaluation has no reference",
                         "give \"reference\": {\"level\": L, \"problem_id\": P} or the "
                         "reference's code as \"reference_code\"");
    }
    orchestrator::EvalItem item;
    item.problem = problem;
    int sample = whole(r, "sample_id", 0);
    item.candidate =
        dataset::make_candidate(problem.level, problem.id, sample, *candidate, "request");
    std::string backend = settings_.backend;
    if (auto b = text({"backend"}); b && settings_.backend == "auto") {
        if (*b != "auto" && *b != "cuda" && *b != "triton" && *b != "cpu")
            throw UsageError("backend " + *b + " is not one kbench serves",
                             "use cuda, triton or cpu (or leave it out: it is found in the code)");
        backend = *b;
    }
    // KernelGYM's clients name the backend of GPU code: on a CPU server, every candidate's is cpu.
    if (settings_.device_kind == DeviceKind::cpu && backend != "cpu") backend = "auto";
    item.backend = detect_backend(backend, item.candidate.code, settings_.device_kind);
    item.key = orchestrator::item_key(item.problem, item.candidate, item.backend, settings_.config);
    return item;
}

Answer HttpApi::evaluations(const std::string& body) {
    json request = json::parse(body);
    std::vector<orchestrator::EvalItem> items;
    if (request.is_object() && request.contains("items")) {
        if (!request["items"].is_array() || request["items"].empty())
            throw UsageError("\"items\" is not a list of evaluations",
                             "send {\"items\": [{...}, ...]}, or one evaluation as the body");
        for (const json& r : request["items"]) items.push_back(item_of(r));
    } else {
        items.push_back(item_of(request));
    }
    json out = json::array();
    for (const auto& s : service_.submit(std::move(items)))
        out.push_back({{"id", s.id}, {"state", std::string(to_string(s.state))}});
    json ids = json::array();
    for (const json& e : out) ids.push_back(e["id"]);
    return json_answer(202, {{"ids", ids}, {"evaluations", out}});
}

bool HttpApi::begin_waiting() {
    if (++server_->waiting <= kMaxWaiting) return true;
    --server_->waiting;
    return false;
}

// Ends a waiting request's slot (begin_waiting) when it goes out of scope, however it leaves.
struct HttpApi::Waiting {
    HttpApi* api;
    bool held;
    ~Waiting() {
        if (held) api->end_waiting();
    }
};

void HttpApi::end_waiting() {
    --server_->waiting;
}

namespace {
Answer too_many_waiting() {
    Answer a = problem_answer(503, "too many requests are waiting on this server",
                              "wait less at a time (fewer long polls or event streams), or try "
                              "again after Retry-After seconds");
    a.headers["Retry-After"] = "5";
    return a;
}
}  // namespace

Answer HttpApi::evaluation(const std::string& id, const std::map<std::string, std::string>& query) {
    double wait = query_seconds(query, "wait", 300);
    if (wait > 0 && !begin_waiting()) return too_many_waiting();
    Waiting waiting{this, wait > 0};
    std::optional<json> found = service_.wait(id, wait);
    if (!found)
        return problem_answer(404, "no evaluation " + id, "use an id POST /v1/evaluations gave");
    return json_answer(200, *found);
}

Answer HttpApi::kernelgym_evaluate(const std::string& body, bool batch) {
    json request = json::parse(body);
    std::vector<json> tasks;
    if (batch) {
        if (!request.is_object() || !request.contains("tasks") || !request["tasks"].is_array())
            throw UsageError("a batch has no \"tasks\"",
                             "send {\"batch_id\": ..., \"tasks\": [...]}");
        for (const json& t : request["tasks"]) tasks.push_back(t);
    } else {
        tasks.push_back(request);
    }
    std::vector<orchestrator::EvalItem> items;
    std::vector<std::string> task_ids;
    for (const json& t : tasks) {
        if (!t.is_object() || !t.contains("task_id") || !t["task_id"].is_string() ||
            t["task_id"].get<std::string>().empty() || t["task_id"].get<std::string>().size() > 100)
            throw UsageError("a task without a task_id of 1 to 100 characters", "");
        std::string entry = t.value("entry_point", "Model");
        std::string code = t.value("kernel_code", "");
        if (code.find("class " + entry + "New") == std::string::npos)
            throw UsageError("kernel_code has no class " + entry + "New", "");
        task_ids.push_back(t["task_id"]);
        items.push_back(item_of(t));
    }
    {
        std::lock_guard<std::mutex> hold(server_->mutex);
        for (std::size_t i = 0; i < items.size(); ++i)
            server_->task_ids[task_ids[i]] = items[i].key;
    }
    std::vector<std::string> ids;
    for (const auto& item : items) ids.push_back(item.key);
    if (!begin_waiting()) return too_many_waiting();
    Waiting waiting{this, true};
    service_.submit(std::move(items));
    // KernelGYM answers once the evaluation is done.
    json results = json::array();
    int failed = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::optional<json> done = service_.wait(ids[i], 60);
        while (done && (*done)["state"] != "done" && service_.health().value("ok", false))
            done = service_.wait(ids[i], 60);
        if (!done || (*done)["state"] != "done")
            throw InfraError("kbench serve stopped before task " + task_ids[i] + " was evaluated");
        json r = kernelgym_result(task_ids[i], (*done)["verdict"]);
        if (r["status"] == "failed") ++failed;
        results.push_back(r);
    }
    if (!batch) return json_answer(200, results[0]);
    return json_answer(200,
                       {{"batch_id", request.contains("batch_id") ? request["batch_id"] : json("")},
                        {"total_tasks", results.size()},
                        {"completed_tasks", int(results.size()) - failed},
                        {"failed_tasks", failed},
                        {"results", results},
                        {"batch_status", "completed"},
                        {"submitted_at", now_iso()},
                        {"completed_at", nullptr}});
}

Answer HttpApi::kernelgym_status(const std::string& task_id, bool results) {
    std::string id;
    {
        std::lock_guard<std::mutex> hold(server_->mutex);
        auto it = server_->task_ids.find(task_id);
        if (it != server_->task_ids.end()) id = it->second;
    }
    std::optional<json> found = id.empty() ? std::nullopt : service_.status(id);
    if (!found || (results && (*found)["state"] != "done"))
        return json_answer(404, {{"detail", "Task " + task_id + " not found"}});
    if (results) return json_answer(200, kernelgym_result(task_id, (*found)["verdict"]));
    std::string state = (*found)["state"];
    std::string status = state == "queued" ? "pending" : state == "running" ? "processing" : "";
    if (status.empty()) status = kernelgym_result(task_id, (*found)["verdict"])["status"];
    return json_answer(200, {{"task_id", task_id},
                             {"status", status},
                             {"progress", nullptr},
                             {"estimated_completion", nullptr},
                             {"queue_position", nullptr},
                             {"assigned_device", nullptr}});
}

Answer HttpApi::handle(const std::string& method, const std::string& path,
                       const std::map<std::string, std::string>& query,
                       const std::string& authorization, const std::string& body) {
    try {
        if (method == "GET" && (path == "/healthz" || path == "/health")) {
            json h = service_.health();
            if (path == "/health")  // KernelGYM's
                h = {{"status", h["ok"].get<bool>() ? "healthy" : "unhealthy"},
                     {"timestamp", now_iso()},
                     {"gpu_status", json::object()},
                     {"queue_status",
                      {{"pending", h["queued"]}, {"processing", h["running"]}, {"completed", 0}}},
                     {"memory_usage", json::object()},
                     {"active_tasks", h["running"]},
                     {"total_processed", 0},
                     {"uptime", 0.0}};
            return json_answer(h.value("ok", true) || path == "/health" ? 200 : 503, h);
        }
        if (token_ && !same_secret(authorization, "Bearer " + *token_))
            return problem_answer(401, "this server needs its token",
                                  "send the header Authorization: Bearer TOKEN (the contents of "
                                  "the server's --token-file)");
        if (method == "GET" && path == "/metrics")
            return {200, service_.metrics(), "text/plain; version=0.0.4", {}};
        if (method == "POST" && path == "/v1/evaluations") return evaluations(body);
        const std::string prefix = "/v1/evaluations/";
        if (method == "GET" && path.rfind(prefix, 0) == 0)
            return evaluation(path.substr(prefix.size()), query);
        if (method == "POST" && path == "/evaluate") return kernelgym_evaluate(body, false);
        if (method == "POST" && path == "/evaluate/batch") return kernelgym_evaluate(body, true);
        if (method == "GET" && path.rfind("/status/", 0) == 0)
            return kernelgym_status(path.substr(8), false);
        if (method == "GET" && path.rfind("/results/", 0) == 0)
            return kernelgym_status(path.substr(9), true);
        return problem_answer(404, method + " " + path + " is not an endpoint of kbench serve",
                              "see docs/service.md");
    } catch (const QueueFull& e) {
        Answer a = problem_answer(429, e.what(), "try again after Retry-After seconds");
        a.headers["Retry-After"] = "5";
        return a;
    } catch (const json::exception& e) {
        return problem_answer(400, std::string("the body is not JSON kbench reads: ") + e.what(),
                              "send a JSON object (docs/service.md)");
    } catch (const UsageError& e) {
        return problem_answer(path.rfind("/v1/", 0) == 0 ? 422 : 400, e.what(), e.hint());
    } catch (const InfraError& e) {
        return problem_answer(503, e.what(), "start kbench serve again");
    }
}

void HttpApi::serve(const std::string& host, int port, std::size_t max_request_bytes,
                    const std::function<void(int)>& ready) {
    httplib::Server& http = server_->http;
    // Long polls and KernelGYM's answers-when-done hold a thread each.
    http.new_task_queue = [] { return new httplib::ThreadPool(256); };
    auto route = [this](const httplib::Request& req, httplib::Response& res) {
        std::map<std::string, std::string> query(req.params.begin(), req.params.end());
        Answer a =
            handle(req.method, req.path, query, req.get_header_value("Authorization"), req.body);
        res.status = a.status;
        for (const auto& [k, v] : a.headers) res.set_header(k, v);
        res.set_content(a.body, a.content_type);
    };
    // Server-sent events: verdicts in the order they come, from now (or after ?after=SEQ).
    http.Get("/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
        if (token_ && !same_secret(req.get_header_value("Authorization"), "Bearer " + *token_)) {
            res.status = 401;
            res.set_content(json({{"error", "this server needs its token"}}).dump(),
                            "application/json");
            return;
        }
        std::uint64_t after = service_.last_event();
        if (req.has_param("after")) {
            try {
                after = std::stoull(req.get_param_value("after"));
            } catch (const std::exception&) {
                res.status = 400;
                res.set_content(json({{"error", "after= is not an event number"}}).dump(),
                                "application/json");
                return;
            }
        }
        if (!begin_waiting()) {
            Answer a = too_many_waiting();
            res.status = a.status;
            for (const auto& [k, v] : a.headers) res.set_header(k, v);
            res.set_content(a.body, a.content_type);
            return;
        }
        auto last = std::make_shared<std::uint64_t>(after);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, last](std::size_t, httplib::DataSink& sink) {
                std::vector<json> events = service_.events_after(*last, 15);
                std::string text;
                for (const json& e : events) {
                    *last = e["seq"];
                    text += "id: " + std::to_string(*last) + "\nevent: verdict\ndata: " + e.dump() +
                            "\n\n";
                }
                if (text.empty()) text = ": keep-alive\n\n";
                return sink.write(text.data(), text.size());
            },
            [this](bool) { end_waiting(); });
    });
    // After the event stream's route: the first route that matches answers.
    http.Get(".*", route);
    // The body read here, whatever its declared type: httplib would cap a body sent as a form
    // (curl's and urllib's default type) at 8 KiB.
    // Every body within the limit (a GET's too), and a POST's token checked before its body is
    // read.
    http.set_payload_max_length(max_request_bytes);
    http.Post(".*", [this, route, max_request_bytes](const httplib::Request& req,
                                                     httplib::Response& res,
                                                     const httplib::ContentReader& content) {
        if (token_ && !same_secret(req.get_header_value("Authorization"), "Bearer " + *token_)) {
            res.status = 401;
            res.set_content(json({{"error", "this server needs its token"}}).dump(),
                            "application/json");
            return;
        }
        httplib::Request whole = req;
        bool fits = true;
        content([&](const char* data, std::size_t length) {
            fits = whole.body.size() + length <= max_request_bytes;
            if (fits) whole.body.append(data, length);
            return fits;
        });
        if (fits) return route(whole, res);
        res.status = 413;
        res.set_content(json({{"error", "the request is larger than this server takes (" +
                                            std::to_string(max_request_bytes) + " bytes)"},
                              {"what_to_do",
                               "send fewer evaluations a request, or start kbench "
                               "serve with a larger --max-request-mib"}})
                            .dump(),
                        "application/json");
    });
    int bound =
        port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
    if (bound < 0)
        throw UsageError("cannot listen on " + host + ":" + std::to_string(port),
                         "choose another --port (or --port 0 for any free one)");
    ready(bound);
    http.listen_after_bind();
}

void HttpApi::stop() {
    server_->http.stop();
}

}  // namespace kbench::service
