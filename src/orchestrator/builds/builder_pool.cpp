#include "orchestrator/builds/builder_pool.hpp"

#include <algorithm>
#include <thread>

#include "build/cache_usage.hpp"
#include "build/worker_package.hpp"
#include "confinement/lockdown.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"
#include "orchestrator/engine/text.hpp"
#include "orchestrator/engine/work_queue.hpp"
#include "orchestrator/workers/sandbox_process.hpp"
#include "protocol/zygote_messages.hpp"

namespace kbench::orchestrator {

using sandbox::Channel;
using sandbox::Clock;

BuilderPool::BuilderPool(BuilderOptions options)
    : options_(std::move(options)),
      cache_(options_.cache_dir),
      review_(options_.env.python, options_.env.worker_package_dir / "analyzer") {
    fs::create_directories(options_.scratch_dir);
    WorkerEnvironment env = options_.env;
    env.device_kind = DeviceKind::cpu;
    // Builds give way to timing: a compiler that takes a core from the judge or a sandbox makes
    // their requests wait, and the judge's clock counts the sandbox's waiting (and a sandbox
    // whose launching thread waits for a core after its start event is timed idle GPU). At nice
    // 10, 16 builds on 16 cores still made an H200's 2.7 ms baseline read up to 3.3 ms and its
    // timing run to the cap: builders run under SCHED_IDLE, on what the evaluation leaves. The
    // zygote forks them so (kbench_worker's zygote); it starts at normal priority itself, since
    // every build waits for it and, under SCHED_IDLE on a busy machine, its import of torch
    // took 110 s and more.
    zygote_ = std::make_unique<WorkerProcess>(env, "zygote", "builder-zygote");
}

void BuilderPool::wait_ready() {
    const json& hello = zygote_->hello(120);
    std::lock_guard<std::mutex> guard(mutex_);
    // The first line changes with the way kbench builds (2: extensions link the loaded
    // libstdc++; 3: builds are moved into the cache and their hashes recorded), so that no
    // build made the old way is loaded the new way.
    fingerprint_ = "kbench 3\n" + hello.value("torch", std::string()) + "\n" +
                   hello.value("cuda", std::string()) + "\n" + hello.value("python", std::string());
}

BuilderPool::~BuilderPool() {
    // The cache stays within its bound, its least recently used entries going first.
    try {
        build::Pruned pruned = build::prune_cache(options_.cache_dir, build::cache_bound());
        if (pruned.entries)
            note("pruned " + std::to_string(pruned.entries) +
                 " least recently used build cache "
                 "entries (" +
                 build::size_text(pruned.bytes) + ") to keep " + options_.cache_dir.string() +
                 " within " + build::size_text(build::cache_bound()) + " (KBENCH_CACHE_MAX_GIB)");
    } catch (const std::exception&) {
    }
}

void BuilderPool::note(const std::string& line) const {
    if (options_.log) options_.log(line);
}

void BuilderPool::tell(const std::string& line) const {
    if (options_.notice)
        options_.notice(line);
    else
        note(line);
}

void BuilderPool::detail(const std::string& line) const {
    if (options_.verbose) note(line);
}

void BuilderPool::set_cuda_architectures(const std::vector<std::string>& capabilities) {
    std::vector<std::string> sorted = capabilities;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string list;
    for (const auto& c : sorted)
        if (!c.empty()) list += (list.empty() ? "" : ";") + c;
    std::lock_guard<std::mutex> guard(mutex_);
    architectures_ = list;
}

int default_builders(DeviceKind device_kind, unsigned cores) {
    cores = std::max(1u, cores);
    // On GPUs a build compiles its two translation units side by side, so builds for half the
    // cores keep every core busy. On the H200 (16 cores) 8 builds at once took 11.5-13.9 s
    // each, 16 at once 18-27 s: 12% more builds a second for twice the wait, in waves that
    // left the device idle 9.6 s of a 102.6 s batch while the next wave compiled.
    if (device_kind != DeviceKind::cpu) return int(std::max(1u, cores / 2));
    return int(cores);
}

int BuilderPool::width() const {
    if (options_.builders > 0) return options_.builders;
    return default_builders(options_.env.device_kind, std::thread::hardware_concurrency());
}

std::string BuilderPool::key(const CandidateSpec& candidate) const {
    // A build for the CPU refuses CUDA code (kbench_worker/extensions.py), one for a GPU
    // compiles it: their records differ, so their keys do.
    std::string target = options_.env.device_kind == DeviceKind::cpu ? "\nfor the cpu" : "";
    // A build that may use the build support depends on it: its manifest names the compilers,
    // the flags and the hash of every file in it.
    if (BuildSupport::builds_extensions(candidate.code)) {
        const BuildSupportState& s = support();
        if (!s.digest.empty()) target += "\nbuild support " + s.digest;
    }
    // Its import runs after the preamble, which may change what it builds or whether it loads.
    if (!candidate.preamble.empty()) target += "\npreamble " + sha256_hex(candidate.preamble);
    std::lock_guard<std::mutex> guard(mutex_);
    return build::BuildCache::key(candidate.code, candidate.backend, options_.precision,
                                  fingerprint_ + "\n" + architectures_ + target);
}

const BuildSupportState& BuilderPool::support() const {
    static const BuildSupportState none;
    if (!options_.build_support) return none;
    BuildSupport* made;
    {
        std::lock_guard<std::mutex> guard(support_mutex_);
        if (!support_) {
            BuildSupportOptions o;
            o.python = options_.env.python;
            o.script = options_.env.worker_package_dir / "kbench_worker" / "build_support.py";
            o.root = options_.support_dir.empty() ? options_.cache_dir / "support"
                                                  : options_.support_dir;
            o.device_kind = options_.env.device_kind;
            {
                std::lock_guard<std::mutex> g(mutex_);
                o.architectures = architectures_;
                o.toolchain = fingerprint_;
            }
            // The wrapper decides how a build uses the support: a change of it is a new one.
            for (const auto& file : build::built_worker_package())
                if (file.path == "kbench_worker/extensions.py" ||
                    file.path == "kbench_worker/build_support.py")
                    o.recipe += file.path + " " + file.sha256 + "\n";
            o.log = [this](const std::string& line) { tell(line); };
            support_ = std::make_unique<BuildSupport>(o);
        }
        made = support_.get();
    }
    const BuildSupportState& state = made->get();
    std::lock_guard<std::mutex> guard(support_mutex_);
    if (!support_noted_) {
        support_noted_ = true;
        if (state.made_s > 0)
            tell("made the build support in " + seconds_text(state.made_s) +
                 " (once for this toolchain and these GPU targets): " + state.dir.string());
        else if (state.dir.empty())
            tell("extensions are built without kbench's build support: " + state.why_none);
    }
    return state;
}

std::string BuilderPool::visible_support(const BuildSupportState& state) const {
    std::lock_guard<std::mutex> guard(support_mutex_);
    if (!visible_support_.empty()) return visible_support_;
    const SandboxPolicy& p = options_.policy;
    if (p.uid < 0 || sandbox::readable_by(state.dir.string(), p.uid, p.gid)) {
        visible_support_ = state.dir.string();
        return visible_support_;
    }
    // Builders run as a user who cannot read the cache: a copy (links where it can) beside
    // their folders, read-only to them like the original.
    fs::path copy = options_.scratch_dir / "support";
    std::error_code ignored;
    fs::remove_all(copy, ignored);
    for (const auto& entry : fs::recursive_directory_iterator(state.dir)) {
        fs::path to = copy / fs::relative(entry.path(), state.dir);
        if (entry.is_directory()) {
            fs::create_directories(to);
            continue;
        }
        fs::create_directories(to.parent_path());
        std::error_code linked;
        fs::create_hard_link(entry.path(), to, linked);
        if (linked) fs::copy_file(entry.path(), to);
        fs::permissions(to, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    }
    for (const auto& entry : fs::recursive_directory_iterator(copy))
        if (entry.is_directory())
            fs::permissions(entry.path(), fs::perms::owner_all | fs::perms::group_read |
                                              fs::perms::group_exec | fs::perms::others_read |
                                              fs::perms::others_exec);
    fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    visible_support_ = copy.string();
    return visible_support_;
}

std::map<std::string, std::string> BuilderPool::sandbox_environment(const fs::path& scratch) {
    return {{"TORCH_EXTENSIONS_DIR", (scratch / "torch_extensions").string()},
            {"TRITON_CACHE_DIR", (scratch / "triton").string()},
            {"HOME", scratch.string()},
            {"TMPDIR", scratch.string()},
            {"USER", "kbench-sandbox"},
            {"HF_HUB_OFFLINE", "1"}};  // no downloads from inside a sandbox
}

std::vector<std::string> BuilderPool::readable_support(
    const std::map<std::string, std::string>& env) {
    auto it = env.find("KBENCH_BUILD_SUPPORT");
    if (it == env.end()) return {};
    return {it->second};
}

void BuilderPool::place_builds(const std::string& key, const fs::path& folder) const {
    std::string altered;
    cache_.place_files(key, "triton", folder / "triton");
    if (!cache_.place_modules(key, folder / "prebuilt", &altered) && !altered.empty())
        note("the cached build for a candidate failed its check (" + altered +
             "); the sandbox builds it again");
}

std::map<std::string, std::string> BuilderPool::sandbox_environment(const std::string&,
                                                                    const fs::path& scratch) const {
    std::map<std::string, std::string> env = sandbox_environment(scratch);
    env["KBENCH_PREBUILT"] = (scratch / "prebuilt").string();
    {
        // Should the sandbox have to build, it builds the way the builder did.
        std::lock_guard<std::mutex> guard(support_mutex_);
        if (!visible_support_.empty()) env["KBENCH_BUILD_SUPPORT"] = visible_support_;
    }
    std::lock_guard<std::mutex> guard(mutex_);
    // Builder and sandbox agree on the targets, should the sandbox have to build.
    if (!architectures_.empty()) env["TORCH_CUDA_ARCH_LIST"] = architectures_;
    return env;
}

void BuilderPool::keep_run_time_builds(const std::string& key, const fs::path& scratch) const {
    try {
        std::error_code none;
        if (!cache_.keep_files(key, "triton", scratch / "triton") &&
            fs::exists(scratch / "triton") && !fs::is_empty(scratch / "triton", none))
            note("a sandbox's Triton cache was not kept (over " +
                 std::to_string(build::BuildCache::kMaxKeptBytes >> 20) + " MiB or " +
                 std::to_string(build::BuildCache::kMaxKeptFiles) + " files)");
    } catch (const std::exception& e) {
        note(std::string("could not keep a sandbox's Triton cache: ") + e.what());
    }
}

void BuilderPool::prebuild(const std::vector<CandidateSpec>& candidates) {
    // Which candidates to build: not cached, each source once. The static rules' review (a
    // Python process each, 0.1 s) is done side by side below: done here, one after another, it
    // held the first build back by seconds.
    std::vector<const CandidateSpec*> todo;
    std::vector<std::string> keys;
    for (const auto& c : candidates) {
        std::string k = key(c);
        if (cache_.lookup(k) || std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
        keys.push_back(k);
        todo.push_back(&c);
    }
    if (todo.empty()) return;
    note("building " + std::to_string(todo.size()) + " candidate(s), " +
         std::to_string(std::min<std::size_t>(todo.size(), std::size_t(width()))) + " at a time");
    // The static rules' review first, every candidate side by side: a fraction of a second
    // before the first build, and none left to run at normal priority beside the device's
    // timing later.
    const int builders = std::min<int>(width(), int(todo.size()));
    run_in_waves(
        todo.size(), builders, builders,
        [&](std::size_t i) {
            try {
                review(*todo[i]);
            } catch (const std::exception&) {
                // Said again, by the builder, below.
            }
            return true;
        },
        stopped_);
    std::atomic<std::size_t> rejected{0};
    run_in_waves(
        todo.size(), builders, builders,
        [&](std::size_t i) {
            const CandidateSpec& c = *todo[i];
            try {
                // A candidate a static rule rejects is never built.
                if (integrity::first_rejection(review(c).findings(options_.rules))) {
                    ++rejected;
                    return false;
                }
                double spent = 0;
                build(c, spent);
            } catch (const std::exception& e) {
                note(std::string("a build failed in the harness: ") + e.what());
            }
            return true;
        },
        stopped_);
    if (rejected > 0)
        note(std::to_string(rejected) + " candidate(s) rejected by a static rule: not built");
}

const integrity::StaticReport& BuilderPool::review(const CandidateSpec& candidate) {
    return review_.review(candidate.code, candidate.backend, options_.precision);
}

bool BuilderPool::ready(const CandidateSpec& candidate) {
    if (integrity::first_rejection(review(candidate).findings(options_.rules))) return true;
    return cache_.has_record(key(candidate));
}

build::BuildRecord BuilderPool::build(const CandidateSpec& candidate, double& spent_s) {
    std::string k = key(candidate);
    spent_s = 0;
    if (auto cached = cache_.lookup(k)) {
        std::lock_guard<std::mutex> guard(mutex_);
        if (auto it = seconds_.find(k); it != seconds_.end()) spent_s = it->second;
        return *cached;
    }
    auto lock = cache_.lock(k);
    std::string altered;
    if (auto cached = cache_.lookup(k, &altered)) return *cached;  // built meanwhile elsewhere
    if (!altered.empty())
        note("the cached build of " + candidate.path.filename().string() + " failed its check (" +
             altered + "); building it again");
    build::BuildRecord record = run_builder(candidate, k);
    {
        std::lock_guard<std::mutex> guard(mutex_);
        seconds_[k] = record.seconds;
    }
    spent_s = record.seconds;
    detail("  built " + candidate.path.filename().string() + ": " +
           std::string(to_string(record.outcome)) + " in " + seconds_text(record.seconds));
    return record;
}

build::BuildRecord BuilderPool::run_builder(const CandidateSpec& candidate, const std::string& k) {
    auto start = Clock::now();
    detail("  building " + candidate.path.filename().string());
    fs::path scratch = options_.scratch_dir /
                       ("build-" + k.substr(0, 16) + "-" + std::to_string(builds_started_++));
    fs::create_directories(scratch);
    fs::path file = scratch / candidate.path.filename();
    std::map<std::string, std::string> env = {
        {"TORCH_EXTENSIONS_DIR", (scratch / "torch_extensions").string()},
        {"TRITON_CACHE_DIR", (scratch / "triton").string()},
        {"HOME", scratch.string()},
        {"TMPDIR", scratch.string()},
        {"USER", "kbench-sandbox"},
        {"CUDA_VISIBLE_DEVICES", ""},  // builds see no GPU
        {"KBENCH_BUILD_DEVICE", std::string(to_string(options_.env.device_kind))}};
    {
        std::lock_guard<std::mutex> guard(mutex_);
        if (!architectures_.empty()) env["TORCH_CUDA_ARCH_LIST"] = architectures_;
    }
    if (BuildSupport::builds_extensions(candidate.code)) {
        const BuildSupportState& s = support();
        if (!s.dir.empty()) env["KBENCH_BUILD_SUPPORT"] = visible_support(s);
    }
    // The cores are shared among the builders that run at once, but each build may compile
    // its two translation units (the bindings and the CUDA file) side by side: a lone build
    // then takes the time of the slower one, not of both, and a full pool only time-shares.
    env["MAX_JOBS"] =
        std::to_string(std::max(2u, std::thread::hardware_concurrency() / unsigned(width())));
    options_.policy.hand_over(scratch, options_.scratch_dir);

    double limit = options_.limit_s;
    SandboxProcess process(*zygote_, {"builder", DeviceKind::cpu, scratch, env,
                                      options_.policy.lockdown(scratch, readable_support(env))});
    // Its folder (a tmpfs of its own under the disk quota) is filled once it has started; it
    // reads nothing there before it is asked to build.
    const fs::path folder = process.folder();
    const fs::path built = folder / "torch_extensions";
    write_file_atomic(folder / candidate.path.filename(), candidate.code);
    fs::create_directories(built);
    options_.policy.hand_over_contents(folder);
    auto deadline = start + std::chrono::milliseconds(long(limit * 1000));
    // Replies are waited for a quarter of a second at a time: an abandoned build ends at once.
    auto slice = [&] { return std::clamp(seconds_left(deadline), 0.0, 0.25); };
    auto wait = [&](Channel::Reply reply) {
        while (reply.event == Channel::Event::timed_out && !abandoned_ && Clock::now() < deadline)
            reply = process.hello(slice());
        return reply;
    };
    auto reply = wait(process.hello(slice()));
    if (reply.event == Channel::Event::message)
        reply = wait(process.call(
            protocol::request_json(protocol::BuildRequest{file.string(), candidate.preamble}),
            slice()));
    build::BuildRecord record;
    if (reply.event == Channel::Event::timed_out && abandoned_) {
        process.kill();
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
        return {BuildOutcome::timeout,
                "kbench stopped before the build was done",
                seconds_since(start),
                {}};
    }
    if (reply.event == Channel::Event::timed_out) {
        process.kill();
        record = {BuildOutcome::timeout,
                  "the build did not finish within " + std::to_string(int(limit)) + " s\n" +
                      capped(process.output(), 16000),
                  seconds_since(start),
                  {}};
    } else if (reply.event == Channel::Event::closed) {
        auto end = process.kill();
        record = {
            BuildOutcome::import_error,
            "the builder died (" + end.status.describe() + ")\n" + capped(process.output(), 16000),
            seconds_since(start),
            {}};
    } else {
        process.finish();
        try {
            auto built_reply = protocol::read_reply<protocol::Built>(reply.body, "build reply");
            if (!built_reply.ok()) throw ProtocolError(built_reply.fault->message);
            record.outcome = built_reply.value->outcome;
            record.log = built_reply.value->log.empty() ? process.output() : built_reply.value->log;
        } catch (const ProtocolError& e) {
            // A builder runs the candidate's code: a reply that breaks the protocol is its doing.
            record.outcome = BuildOutcome::import_error;
            record.log = std::string("the builder's reply broke kbench's protocol: ") + e.what() +
                         "\n" + process.output();
        }
        record.log = capped(record.log, 64000);
        record.seconds = seconds_since(start);
    }
    if (record.outcome != BuildOutcome::ok)
        if (std::string full = process.full_folder(); !full.empty())
            record.log = "error: the build failed and " + full + "\n" + record.log;
    // Timeouts are not kept: a loaded machine may build it next time. Everything the builder
    // made goes into the cache by kbench's hand, with its hashes.
    if (record.outcome != BuildOutcome::timeout)
        cache_.store(k, record, record.outcome == BuildOutcome::ok ? built : fs::path());
    std::error_code ignored;
    fs::remove_all(scratch, ignored);
    return record;
}

}  // namespace kbench::orchestrator
