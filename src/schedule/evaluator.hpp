#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "build/build_cache.hpp"
#include "core/config.hpp"
#include "core/verdict.hpp"
#include "schedule/sandbox_process.hpp"
#include "schedule/worker_process.hpp"

namespace kbench::schedule {

struct ProblemSpec {
    std::string name;
    std::string code;
    std::optional<int> level;
    std::optional<int> id;
};

struct CandidateSpec {
    fs::path path;
    std::string code;
    Backend backend = Backend::cuda;
    std::optional<int> sample_id;
};

struct EvaluatorOptions {
    CheckConfig config;
    WorkerEnvironment env;
    fs::path cache_dir;                           // the build cache's root
    fs::path scratch_dir;                         // private folders of sandboxes and builders
    int builders = 0;                             // concurrent builds; 0 picks from the core count
    std::function<void(const std::string&)> log;  // progress lines; may be empty
    bool verbose = false;                         // a line per phase, too
};

// Evaluates candidates on one device: a judge and a zygote that live as long as this object,
// a builder pool for ahead-of-time compilation, and one sandbox per candidate.
class Evaluator {
  public:
    explicit Evaluator(EvaluatorOptions options);
    ~Evaluator();

    // Compiles the candidates' extensions into the build cache, several at a time.
    void prebuild(const std::vector<CandidateSpec>& candidates);
    // One verdict; harness failures are retried once, then reported as infra_error.
    Verdict evaluate(const ProblemSpec& problem, const CandidateSpec& candidate);

    std::string device_name() const;
    const json& device_info() const { return device_info_; }

  private:
    struct Phase;
    void start_workers();
    int builder_count() const;
    WorkerProcess& judge();
    WorkerProcess& zygote();
    std::string build_key(const CandidateSpec& candidate);
    json sandbox_env(const std::string& key);
    build::BuildRecord build(const CandidateSpec& candidate, double& spent_s);
    Verdict evaluate_once(const ProblemSpec& problem, const CandidateSpec& candidate);
    void run_candidate(const ProblemSpec& problem, const CandidateSpec& candidate,
                       const std::string& key, Verdict& verdict);
    bool accept(const sandbox::Channel::Reply& reply, SandboxProcess& sandbox,
                const std::string& phase, double limit_s, Verdict& verdict);
    void check_judge_health();
    json judge_call(const json& request, double timeout_s);
    void note(const std::string& line);
    void detail(const std::string& line);
    Verdict blank_verdict(const ProblemSpec& problem, const CandidateSpec& candidate);

    EvaluatorOptions options_;
    build::BuildCache cache_;
    std::unique_ptr<WorkerProcess> judge_;
    std::unique_ptr<WorkerProcess> zygote_;
    int sandbox_count_ = 0;
    json device_info_;
    std::map<std::string, double> build_seconds_;  // spent by prebuild, per build key
    std::mutex build_seconds_mutex_;
    std::string fingerprint_;  // toolchain identity, part of every build key
};

}  // namespace kbench::schedule
