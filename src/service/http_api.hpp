#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "dataset/problem.hpp"
#include "service/evaluation_service.hpp"

namespace kbench::service {

// What a request's JSON becomes: the items to evaluate, or why it cannot be evaluated.
struct ApiSettings {
    CheckConfig config;  // the server's settings, every request's
    DeviceKind device_kind = DeviceKind::cpu;
    std::string backend = "auto";  // the server's --backend (auto: per request)
    std::map<std::pair<int, int>, dataset::Problem> problems;  // --dataset, by (level, id)
    std::string dataset;                                       // its name, for messages
    // References sent as code run in the judge, outside any sandbox: taken only where every
    // caller is trusted (--trust-reference-code), else only as the code of a --dataset problem.
    bool trust_reference_code = false;
};

// An answer: HTTP status, JSON body (or text), and extra headers.
struct Answer {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
    std::map<std::string, std::string> headers;
};

// The routes of kbench serve, apart from the socket: the tests call them too.
class HttpApi {
  public:
    HttpApi(EvaluationService& service, ApiSettings settings, std::optional<std::string> token);

    // method "GET" or "POST"; path without the query; query parameters; the Authorization
    // header's value; the body.
    Answer handle(const std::string& method, const std::string& path,
                  const std::map<std::string, std::string>& query, const std::string& authorization,
                  const std::string& body);

    // A request's evaluation (one object of POST /v1/evaluations, or KernelGYM's): throws
    // UsageError with what to do.
    orchestrator::EvalItem item_of(const nlohmann::json& request) const;

    // Serves on host:port until stop() (port 0: any free port; ready(port) once listening).
    void serve(const std::string& host, int port, std::size_t max_request_bytes,
               const std::function<void(int)>& ready);
    void stop();

  private:
    Answer evaluations(const std::string& body);
    Answer evaluation(const std::string& id, const std::map<std::string, std::string>& query);
    Answer kernelgym_evaluate(const std::string& body, bool batch);
    Answer kernelgym_status(const std::string& id, bool results);

    // Admits a request that holds a thread while it waits (long polls, event streams, KernelGYM's
    // answers when done); false past kMaxWaiting, so that /healthz and short requests always
    // find a thread.
    bool begin_waiting();
    void end_waiting();
    struct Waiting;
    static constexpr int kMaxWaiting = 192;  // of 256 threads

    EvaluationService& service_;
    ApiSettings settings_;
    std::map<std::string, dataset::Problem> by_code_;  // --dataset's problems by their code's hash
    std::optional<std::string> token_;
    struct Server;
    std::shared_ptr<Server> server_;
};

}  // namespace kbench::service
