#include "integrity/rules.hpp"

#include "core/error.hpp"

namespace kbench::integrity {

std::string_view to_string(Policy policy) {
    switch (policy) {
        case Policy::strict:
            return "strict";
        case Policy::kernelbench:
            return "kernelbench";
        case Policy::permissive:
            return "permissive";
    }
    return "?";
}

Policy parse_policy(std::string_view text) {
    if (text == "strict") return Policy::strict;
    if (text == "kernelbench") return Policy::kernelbench;
    if (text == "permissive") return Policy::permissive;
    throw UsageError("unknown policy '" + std::string(text) + "'",
                     "use --policy strict, kernelbench or permissive");
}

const std::vector<Rule>& all_rules() {
    // The severities per policy: strict, kernelbench, permissive. kernelbench follows the
    // reference harness's static checker: its errors (bypass via try/except or `pass`, timer
    // patching, threads, lazy tensors, no backend) reject, its warnings warn.
    static const std::vector<Rule> rules = {
        {"unparsable", "static", "warn", "warn", "warn",
         "the source does not parse as Python (its load fails and says why)"},
        {"no_model_new", "static", "reject", "reject", "reject",
         "the source never names ModelNew (no class, assignment, import or string): it cannot "
         "load, so it is neither analyzed further nor built"},
        {"unanalyzable", "static", "reject", "reject", "reject",
         "the static analyzer failed on the source (it crashed or ran out of time): never a free "
         "pass, under any policy"},
        {"oversized", "static", "reject", "reject", "reject",
         "the source is larger than kbench reads (1 MiB): neither analyzed nor built"},
        {"no_backend", "static", "reject", "reject", "warn",
         "no kernel backend at all: no load_inline/cpp_extension, Triton, ThunderKittens, CuTe, "
         "TileLang, CuPy or Numba"},
        {"no_kernel_call", "static", "reject", "warn", "warn",
         "nothing reachable from ModelNew.forward calls a kernel of the candidate's own (every "
         "call resolves to PyTorch, or to an extension that only calls ATen)"},
        {"torch_compute", "static", "warn", "warn", "warn",
         "a PyTorch compute op reachable from forward, or an ATen compute call in the native "
         "source (glue such as views, reshapes and allocation is allowed)"},
        {"try_fallback", "static", "reject", "reject", "warn",
         "a try/except whose handler computes with PyTorch or the reference instead of the "
         "kernel: a fallback"},
        {"try_except", "static", "warn", "warn", "warn", "any other try/except"},
        {"pass_inheritance", "static", "reject", "reject", "warn",
         "ModelNew inherits the reference's class and keeps its forward (a pass-only class, or "
         "forward returning super().forward)"},
        {"monkeypatch", "static", "reject", "reject", "warn",
         "assigns to an attribute of torch, time or another module (timers, synchronisation, "
         "torch functions)"},
        {"stream", "static", "warn", "warn", "warn",
         "creates or switches CUDA streams or graphs (timing synchronises the whole device, so "
         "this is a warning)"},
        {"concurrency", "static", "reject", "reject", "warn",
         "threads or processes: threading, multiprocessing, concurrent.futures, asyncio, fork, "
         "std::thread, pthread_create"},
        {"subprocess", "static", "reject", "warn", "warn",
         "runs programs: subprocess, os.system, os.popen, os.exec*, system(), popen()"},
        {"network", "static", "reject", "warn", "warn",
         "network access: socket, http, urllib, requests, ..."},
        {"file_access", "static", "reject", "warn", "warn",
         "reads or writes files: open(), os file calls, pathlib reads and writes, /proc, "
         "/dev/shm, fopen, fstream"},
        {"native_access", "static", "reject", "warn", "warn",
         "reaches native code around PyTorch: ctypes, cffi, torch.cuda.cudart(), private "
         "torch._C calls, dlopen/dlsym"},
        {"introspection", "static", "reject", "warn", "warn",
         "inspects the interpreter: gc, inspect, frames, sys.modules, __globals__, "
         "__subclasses__, trace hooks, weakref.finalize, atexit"},
        {"dynamic_code", "static", "reject", "warn", "warn",
         "code the analyzer cannot see: eval, exec, compile, __import__, importlib, pickle, "
         "getattr on a module with a computed name"},
        {"tensor_subclass", "static", "reject", "reject", "warn",
         "lazy or subclassed tensors: a torch.Tensor subclass, __torch_function__, "
         "__torch_dispatch__, dispatch or function modes"},
        {"precision_downgrade", "static", "warn", "warn", "warn",
         "an fp32 problem computed in lower precision: half/bfloat16 casts, autocast, TF32 "
         "flags, half types or TF32 tensor-core instructions in the native source"},
        {"unreachable_kernel", "static", "warn", "warn", "warn",
         "a kernel or extension function defined but launched or called nowhere from forward"},
        {"no_candidate_kernel", "runtime", "reject", "warn", "warn",
         "no kernel of the candidate's own ran during its correctness or timed calls (on a CPU: "
         "none of its own compiled code was running in any sample of its threads)"},
        {"decoy_kernel", "runtime", "reject", "warn", "warn",
         "on a GPU: the candidate's own kernels took under 1% of the kernel time, next to "
         "library kernels doing the problem, and the outputs are the same with them knocked out "
         "(or that could not be checked)"},
        {"small_kernel_share", "runtime", "warn", "warn", "warn",
         "the candidate's own kernels took under 1% of the time in its calls, but the outputs "
         "change with them knocked out: a partial replacement (a library's GEMM or convolution, "
         "its own epilogue), as KernelBench allows; on a CPU, where nothing is knocked out, "
         "under 1% of the sampled time"},
        {"work_outside_window", "runtime", "warn", "warn", "warn",
         "on a GPU: kernels ran outside the candidate's model calls (left running after a "
         "call, or launched from a thread of its own)"},
        {"below_floor", "runtime", "reject", "reject", "warn",
         "the timed median is below the problem's memory-traffic floor on this device"},
        {"work_outside_stream", "runtime", "warn", "warn", "warn",
         "on a GPU: the device was still busy after the launch stream's end event in some timed "
         "samples (those use the host clock across a device-wide synchronisation)"},
        {"claimed_time_below_clock", "runtime", "reject", "warn", "warn",
         "the sandbox's claimed times fall short of the judge's clock beyond its margin (in "
         "strict mode the judge stops the timing; else the times come from its clock)"},
        {"work_beside_baseline", "runtime", "reject", "warn", "warn",
         "the candidate's processes used CPU time while the baseline was timed (in strict mode "
         "the judge stops the timing)"},
        {"precision_changed", "runtime", "reject", "warn", "warn",
         "the candidate changed PyTorch's precision flags (TF32, reduced-precision reductions); "
         "with --tf32 off the judge stops the request"},
        {"cudnn_settings_changed", "runtime", "warn", "warn", "warn",
         "the candidate changed cuDNN's settings (benchmark, deterministic)"},
        {"threads_started", "runtime", "warn", "warn", "warn",
         "threads the candidate started while it was timed"},
        {"processes_started", "runtime", "warn", "warn", "warn",
         "processes the candidate started that still ran after timing"},
        {"processes_left_behind", "runtime", "warn", "warn", "warn",
         "processes still running when the candidate's process ended (killed with it)"},
        // Records of what happened to the evaluation itself: warnings under every policy.
        {"timing_core_left", "record", "warn", "warn", "warn",
         "the candidate was not timed on the timing core (its threads could not all be kept "
         "there)"},
        {"kernel_records_dropped", "record", "warn", "warn", "warn",
         "kernel records or CPU samples were lost (the kernel table is partial)"},
        {"worker_died", "record", "warn", "warn", "warn",
         "a worker process died while this candidate was evaluated and it was evaluated again "
         "with fresh workers"},
        // The judge stops the request on these: breaches of the protocol and attacks on kbench
        // itself, rejected under every policy and never allowed.
        {"protocol_violation", "judge", "reject", "reject", "reject",
         "a reply that is not the protocol's: malformed, early or forged"},
        {"output_in_kbench_buffer", "judge", "reject", "reject", "reject",
         "an output that lies in memory kbench owns (the judge's buffers, not its own tensor)"},
        {"output_written_after_reply", "judge", "reject", "reject", "reject",
         "an output whose bytes changed after the sandbox replied"},
        {"not_plain_output", "judge", "reject", "reject", "reject",
         "an output that is not a plain tensor (a subclass or a lazy object)"},
        {"kernel_records_inconsistent", "judge", "reject", "reject", "reject",
         "kernel or CPU-sample records that cannot be true (dropped records, signals that never "
         "came)"},
        {"signalled_kbench", "judge", "reject", "reject", "reject",
         "the candidate's processes sent a signal to kbench or its judge"},
    };
    return rules;
}

const Rule* find_rule(std::string_view id) {
    for (const Rule& r : all_rules())
        if (r.id == id) return &r;
    return nullptr;
}

std::string RulePolicy::severity(std::string_view rule) const {
    std::string id(rule);
    if (deny.count(id)) return "reject";
    if (allow.count(id)) return "warn";
    const Rule* r = find_rule(rule);
    if (!r) return "reject";
    switch (policy) {
        case Policy::strict:
            return std::string(r->strict);
        case Policy::kernelbench:
            return std::string(r->kernelbench);
        case Policy::permissive:
            return std::string(r->permissive);
    }
    return "reject";
}

json RulePolicy::to_json() const {
    return {{"name", std::string(to_string(policy))},
            {"allow", json(std::vector<std::string>(allow.begin(), allow.end()))},
            {"deny", json(std::vector<std::string>(deny.begin(), deny.end()))}};
}

RulePolicy RulePolicy::make(std::string_view policy, const std::vector<std::string>& allow,
                            const std::vector<std::string>& deny) {
    RulePolicy p;
    p.policy = parse_policy(policy);
    // A rule --allow or --deny may change: one the table has, no record of what happened to the
    // evaluation itself, and for --allow no breach the judge stops the request on.
    auto check = [](const std::string& id, std::string_view option) {
        const Rule* rule = find_rule(id);
        if (!rule) {
            std::string ids;
            for (const Rule& r : all_rules()) ids += (ids.empty() ? "" : ", ") + std::string(r.id);
            throw UsageError(std::string(option) + " names an unknown rule '" + id + "'",
                             "known rules: " + ids + " (kbench rules lists them)");
        }
        if (rule->kind == "record")
            throw UsageError(std::string(option) + " " + id +
                                 ": it records what happened to kbench's own evaluation, not a "
                                 "rule the candidate breaks",
                             "kbench rules lists the rules --allow and --deny change");
        if (rule->kind == "judge" && option == "--allow")
            throw UsageError("--allow " + id +
                                 ": the judge stops the request on it (a breach of "
                                 "kbench's protocol or an attack on kbench), under every policy",
                             "kbench rules lists the rules --allow can lift");
    };
    for (const auto& id : allow) {
        check(id, "--allow");
        p.allow.insert(id);
    }
    for (const auto& id : deny) {
        check(id, "--deny");
        if (p.allow.count(id))
            throw UsageError("rule '" + id + "' is both allowed and denied",
                             "give it to --allow or to --deny, not both");
        p.deny.insert(id);
    }
    return p;
}

RulePolicy RulePolicy::of(const CheckConfig& config) {
    return make(config.policy, {config.allow.begin(), config.allow.end()},
                {config.deny.begin(), config.deny.end()});
}

}  // namespace kbench::integrity
