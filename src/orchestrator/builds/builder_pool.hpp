#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "build/build_cache.hpp"
#include "core/config.hpp"
#include "integrity/rules.hpp"
#include "integrity/static_review.hpp"
#include "orchestrator/builds/build_support.hpp"
#include "orchestrator/workers/sandbox_policy.hpp"
#include "orchestrator/workers/worker_process.hpp"

namespace kbench::orchestrator {

// A candidate program to build and run.
struct CandidateSpec {
    fs::path path;  // for messages and the file name the sandbox imports
    std::string code;
    Backend backend = Backend::cuda;
    std::optional<int> sample_id;
    // Run in the candidate's module before its code (KernelBench's mode: the reference's
    // program); empty: the candidate alone.
    std::string preamble;
};

// Concurrent builds by default for a device kind ("cpu", "cuda") on a machine of this many
// cores: one a core on CPUs; on GPUs one for every two, each build compiling its host and device
// code side by side.
int default_builders(DeviceKind device_kind, unsigned cores);

struct BuilderOptions {
    WorkerEnvironment env;  // the Python and worker module; builders never see a GPU
    SandboxPolicy policy;   // builders run candidate code (at import): confined like sandboxes
    fs::path cache_dir;     // the build cache's root
    fs::path support_dir;   // where build supports are kept (empty: the cache's "support")
    fs::path scratch_dir;   // builders' private folders
    Precision precision = Precision::fp32;
    double limit_s = 600;
    int builders = 0;  // concurrent builds; 0: default_builders
    // Builds of extensions use kbench's build support (orchestrator/builds/build_support.hpp).
    bool build_support = true;
    std::function<void(const std::string&)> log;
    // Lines said at any verbosity: the build support's (making it takes a minute, once).
    std::function<void(const std::string&)> notice;
    bool verbose = false;
    // The integrity rules: a candidate whose source a static rule rejects is never built.
    integrity::RulePolicy rules;
};

// Compiles candidates' extensions ahead of time, several at once, into the content-addressed
// build cache: each builder imports a candidate with the GPU hidden, confined, in a folder of
// its own; kbench moves what it built into the cache and records its hashes. Safe to use from
// several threads; concurrent builds of one source (here or in another kbench) build it once.
class BuilderPool {
  public:
    // Starts the pool's zygote without waiting for it.
    explicit BuilderPool(BuilderOptions options);
    ~BuilderPool();

    // Waits for the zygote and reads the toolchain; call once, before anything else.
    void wait_ready();

    // The GPU architectures to build for (capabilities like "9.0"); set before the first build.
    void set_cuda_architectures(const std::vector<std::string>& capabilities);

    std::string key(const CandidateSpec& candidate) const;

    // The cached record (its artefacts checked), or a build now; spent_s: time this process
    // spent building it.
    build::BuildRecord build(const CandidateSpec& candidate, double& spent_s);
    // Builds all that are not cached, several at once, but those a static rule rejects;
    // returns when all are done.
    void prebuild(const std::vector<CandidateSpec>& candidates);

    // From now on prebuild starts no build: kbench cannot go on. Builds under way finish, or
    // with `abandon` are killed within a quarter of a second (nothing of them is kept), so
    // that an error that ends the run is reported without waiting for compilers.
    void stop_prebuilding(bool abandon = false) {
        if (abandon) abandoned_ = true;
        stopped_ = true;
    }

    // Whether the candidate's build is done (or never happens: a static rule rejects it), so
    // that evaluating it waits for no compiler.
    bool ready(const CandidateSpec& candidate);

    // What the static rules see in the candidate's source (integrity/static_review.hpp).
    const integrity::StaticReport& review(const CandidateSpec& candidate);

    // The environment that keeps a sandbox's caches, home and temporary files in its folder.
    static std::map<std::string, std::string> sandbox_environment(const fs::path& scratch);
    // The build support's folder named in a sandbox's or builder's environment (to read,
    // where kbench's scratch folder is otherwise hidden from it), if any.
    static std::vector<std::string> readable_support(const std::map<std::string, std::string>& env);

    // The environment that makes a sandbox whose folder is scratch use the candidate's checked
    // extension modules (placed there by place_builds), build only there, and keep its caches
    // there.
    std::map<std::string, std::string> sandbox_environment(const std::string& key,
                                                           const fs::path& scratch) const;
    // Places the candidate's checked extension modules and kept Triton cache in a sandbox's
    // folder (as kbench reaches it: SandboxProcess::folder).
    void place_builds(const std::string& key, const fs::path& folder) const;

    // Keeps what the candidate's sandbox compiled at run time (Triton's cache) for its next
    // sandboxes, checked like any other build.
    void keep_run_time_builds(const std::string& key, const fs::path& scratch) const;

    int width() const;

  private:
    // The build support for a candidate that builds extensions; state.dir empty: none.
    const BuildSupportState& support() const;
    // The support's folder as builders see it (a copy where they cannot read the original).
    std::string visible_support(const BuildSupportState& state) const;
    build::BuildRecord run_builder(const CandidateSpec& candidate, const std::string& key);
    void note(const std::string& line) const;
    void tell(const std::string& line) const;  // notice, else note
    void detail(const std::string& line) const;

    BuilderOptions options_;
    build::BuildCache cache_;
    integrity::StaticReview review_;
    std::unique_ptr<WorkerProcess> zygote_;
    std::string fingerprint_;
    std::string architectures_;
    std::map<std::string, double> seconds_;  // build time spent here, per key
    mutable std::mutex mutex_;
    std::atomic<unsigned> builds_started_{0};
    std::atomic<bool> stopped_{false};
    std::atomic<bool> abandoned_{false};
    mutable std::unique_ptr<BuildSupport> support_;
    mutable std::mutex support_mutex_;
    mutable std::string visible_support_;
    mutable bool support_noted_ = false;
};

}  // namespace kbench::orchestrator
