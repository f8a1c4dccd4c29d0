#include "judge/judge.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "confinement/lockdown.hpp"
#include "core/settings.hpp"
#include "judge/candidate_session.hpp"
#include "judge/compare.hpp"
#include "judge/reference_problem.hpp"
#include "protocol/framing.hpp"
#include "protocol/judge_messages.hpp"
#include "runtime/cuda_timing_device.hpp"
#include "runtime/device.hpp"
#include "runtime/python.hpp"
#include "runtime/python_program.hpp"
#include "runtime/shared_tensor.hpp"
#include "runtime/signals.hpp"
#include "timing/measurement.hpp"

namespace kbench::worker {
namespace {

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.3g", value);
    return text;
}

using protocol::FaultError;
using protocol::FaultKind;
using protocol::Op;

// The trusted side: the reference, every input, the clock around every timed request, every
// comparison, the baseline. It never runs candidate code.
class Judge {
  public:
    Judge(int fd, Device device) : fd_(fd), device_(std::move(device)) {}

    int serve() {
        sandbox::send_message(fd_, hello().to_json());
        // The flop counter's first use imports most of torch._dynamo (about 0.7 s): here, while
        // kbench starts the rest, rather than in the first candidate's evaluation.
        python_module("kbench_worker.floor").attr("warm")();
        while (auto message = sandbox::recv_message(fd_)) {
            json reply;
            try {
                Op op = protocol::op_of(message->body);
                if (op == Op::exit) break;
                reply = handle(op, message->body, message->fds);
                try {
                    if (problem_) trim_kept_calls(*problem_, device_);
                } catch (const std::exception&) {
                    // a device in trouble: the next request's own work says so
                }
            } catch (const ProtocolError& e) {
                reply = protocol::fault_json({FaultKind::harness, e.what(), ""});
            }
            for (int fd : message->fds) ::close(fd);  // those not taken over
            sandbox::send_message(fd_, reply);
        }
        return 0;
    }

  private:
    protocol::JudgeHello hello() {
        py::module_ torch = python_module("torch");
        py::module_ sys = python_module("sys");
        py::object cuda_version = torch.attr("version").attr("cuda");
        return {device_.describe(), py::str(torch.attr("__version__")).cast<std::string>(),
                cuda_version.is_none() ? "" : cuda_version.cast<std::string>(),
                py::str(sys.attr("version")).cast<std::string>().substr(0, 16)};
    }

    json handle(Op op, const json& body, std::vector<int>& fds) {
        try {
            c10::AutoGradMode no_grad(false);
            switch (op) {
                case Op::prepare:
                    return protocol::reply_json(prepare(protocol::PrepareProblem::from_json(body)));
                case Op::attach:
                    return protocol::reply_json(
                        attach(protocol::AttachRequest::from_json(body), fds));
                case Op::load: {
                    auto request = protocol::LoadRequest::from_json(body);
                    (request.reference ? reference_session() : session()).load(request);
                    return protocol::reply_json(protocol::Empty{});
                }
                case Op::correctness:
                    return protocol::reply_json(
                        session().correctness(protocol::CorrectnessRequest::from_json(body)));
                case Op::knockout:
                    return protocol::reply_json(
                        session().knockout(protocol::KnockoutRequest::from_json(body)));
                case Op::timing:
                    return protocol::reply_json(session().timing(
                        protocol::TimingRequest::from_json(body), reference_.get()));
                case Op::detach:
                    detach();
                    return protocol::reply_json(protocol::Empty{});
                case Op::baseline:
                    return protocol::reply_json(
                        baseline(protocol::BaselineRequest::from_json(body)));
                case Op::health:
                    return protocol::reply_json(health());
                case Op::audit:
                    return protocol::reply_json(audit(protocol::AuditRequest::from_json(body)));
                default:
                    throw ProtocolError("the judge does not serve '" +
                                        std::string(protocol::to_string(op)) + "'");
            }
        } catch (const FaultError& e) {
            return protocol::fault_json(e.fault());
        } catch (const ProtocolError& e) {
            return protocol::fault_json({FaultKind::harness, e.what(), ""});
        } catch (const py::error_already_set& e) {
            // Python errors here come from the reference program (the judge runs no other).
            return protocol::fault_json({FaultKind::reference, describe_python_error(e), ""});
        } catch (const CudaError& e) {
            return protocol::fault_json({FaultKind::device, e.what(), ""});
        } catch (const std::exception& e) {
            return protocol::fault_json({FaultKind::harness, e.what(), ""});
        }
    }

    protocol::ProblemPrepared prepare(const protocol::PrepareProblem& request) {
        std::string key = request.to_json().dump();
        if (problem_ && problem_->key == key) return prepared(true);
        if (auto it = too_large_.find(key); it != too_large_.end()) return it->second;
        session_.reset();
        problem_.reset();
        check_nothing_left();
        release_memory();
        capacity_ = request.device_memory ? request.device_memory : device_.memory_bytes();
        capped_ = device_.is_cuda() && request.device_memory > 0;
        // Under a cap, while no sandbox is attached (the reference's first call, the flop count,
        // a baseline timed here) the judge may use it all but the three processes' CUDA
        // contexts; while one is, its share of the plan (attach).
        if (capped_) cap(alone());
        try {
            problem_ = load_reference(request, device_);
        } catch (const ProblemTooLarge& e) {
            release_memory();
            protocol::ProblemPrepared out{false, 0, 0, precision_state(), e.memory, capacity_};
            return too_large_.emplace(key, out).first->second;
        } catch (const py::error_already_set& e) {
            throw FaultError(FaultKind::reference, describe_python_error(e));
        } catch (const CudaError&) {
            throw;
        } catch (const std::exception& e) {
            throw FaultError(FaultKind::reference, e.what());
        }
        problem_->plan =
            device_.is_cuda()
                ? plan_fitting(problem_->memory, capacity_, request.rounds, problem_->strict)
                : plan_memory(problem_->memory, capacity_, request.rounds, problem_->strict);
        problem_->inputs_on_host = problem_->strict && problem_->plan.inputs_on_host;
        // The flop count runs the reference in the judge: now, alone on the device, not beside a
        // candidate's sandbox when the first baseline request asks for it; in strict mode
        // without the first call kept beside it (nothing reads it there later). Not for a
        // problem its plan refuses.
        if (device_.is_cuda() && problem_->plan.fits()) {
            if (problem_->strict) trim_kept_calls(*problem_, device_, std::size_t(1) << 62);
            reference_work(*problem_, device_);
        }
        device_.synchronize();
        problem_->key = key;
        return prepared(false);
    }

    protocol::ProblemPrepared prepared(bool cached) const {
        const ReferenceProblem& p = *problem_;
        return {cached, p.inputs_seconds, p.trial_bytes, p.precision_state, p.memory, capacity_};
    }

    // Under --device-memory, what the judge's PyTorch allocations may reach with no sandbox
    // attached: the cap less the three processes' CUDA contexts.
    std::uint64_t alone() const {
        return capacity_ > 3 * kContextBytes ? capacity_ - 3 * kContextBytes : 0;
    }

    // Its share of the plan while sandboxes are attached, less the shared buffers (outside
    // PyTorch's allocator), which the reference's call never meets where its outputs wait on
    // the host. What it cached alone goes back to the device first.
    void cap_to_share() {
        if (!capped_ || !problem_) return;
        release_memory();
        const MemoryPlan& plan = problem_->plan;
        cap(plan.judge - (plan.outputs_on_host ? 0 : plan.judge_shared));
    }

    // Caps this process's PyTorch allocations (--device-memory).
    void cap(std::uint64_t bytes) { python_module("kbench_worker.memory").attr("cap")(bytes); }

    // A sandbox's share of the device, as a fraction of its memory: the candidate's, whatever
    // the plan leaves it; the reference's own, its plan and a quarter more, under a cap only.
    double memory_share(bool reference) const {
        if (!device_.is_cuda() || !problem_) return 0;
        const MemoryPlan& plan = problem_->plan;
        double bytes = reference
                           ? (capped_ ? 1.25 * double(plan.reference_sandbox) + 0.5 * kGiB : 0.0)
                           : double(plan.candidate_allowance());
        return std::min(1.0, bytes / double(device_.memory_bytes()));
    }

    ReferenceProblem& problem() {
        if (!problem_) throw ProtocolError("no problem prepared");
        return *problem_;
    }

    CandidateSession& session() {
        if (!session_) throw ProtocolError("no sandbox attached");
        return *session_;
    }

    CandidateSession& reference_session() {
        if (!reference_) throw ProtocolError("no sandbox for the reference attached");
        return *reference_;
    }

    protocol::SandboxAttached attach(const protocol::AttachRequest& request,
                                     std::vector<int>& fds) {
        if (fds.size() != 1) throw ProtocolError("attach needs the sandbox's socket");
        if (request.reference) return attach_reference(request, fds);
        detach();
        for (const ReceivedSignal& s : take_signals()) obey(s);  // none of this sandbox's doing
        int socket = fds[0];
        watch_process(pid_t(request.sandbox_pid));
        watched_ = pid_t(request.sandbox_pid);
        fds.clear();
        // Where the reference's own sandbox makes the reference's outputs, the judge's model
        // waits on the host (its plan counts neither it nor its call).
        if (device_.is_cuda() && problem().strict && problem().plan.reference_exports)
            model_to_host(problem(), device_);
        // Each party's peak is the candidate's evaluation's own.
        if (device_.is_cuda()) {
            python_module("kbench_worker.memory").attr("reset_peak")();
            reset_shared_device_peak();
        }
        cap_to_share();
        session_ = std::make_unique<CandidateSession>(problem(), device_, socket,
                                                      pid_t(request.sandbox_pid));
        session_->set_call_limits(request.call_factor, request.call_floor_s, request.first_call_s);
        session_->set_memory_share(memory_share(false));
        return session_->attach(request.limit_s);
    }

    // The reference's own sandbox, beside the candidate's: it serves the baseline's requests in
    // rounds alternating with the candidate's. No candidate code runs there; a signal that
    // reaches the judge meanwhile is the candidate's.
    protocol::SandboxAttached attach_reference(const protocol::AttachRequest& request,
                                               std::vector<int>& fds) {
        if (!session_) throw ProtocolError("the reference's sandbox comes after the candidate's");
        // What the correctness phase left cached goes back to the device first: a third process
        // now needs room beside the judge and the candidate's (a 6 GiB reference call of level 1
        // problem 25 found 4.8 GiB free on the H200 without this).
        release_memory();
        int socket = fds[0];
        fds.clear();
        if (reference_) reference_->detach();
        reference_ = std::make_unique<CandidateSession>(problem(), device_, socket,
                                                        pid_t(request.sandbox_pid));
        reference_->blame(watched_);
        reference_->set_call_limits(request.call_factor, request.call_floor_s,
                                    request.first_call_s);
        reference_->set_memory_share(memory_share(true));
        // A transient problem in strict mode: the reference's outputs come from its own sandbox,
        // in its share, for both sessions' checks.
        bool exports = device_.is_cuda() && problem().strict && problem().plan.reference_exports;
        session_->take_references_from(exports ? reference_.get() : nullptr);
        reference_->take_references_from(exports ? reference_.get() : nullptr);
        return reference_->attach(request.limit_s, session_.get());
    }

    void detach() {
        if (reference_) {
            try {
                reference_->detach();
            } catch (const std::exception&) {
                // kbench ends that process itself
            }
        }
        reference_.reset();
        if (session_) session_->take_references_from(nullptr);
        if (session_) session_->detach();
        session_.reset();
        // The arbiter's copy of the model goes back with the candidate that needed it.
        if (problem_) {
            problem_->arbiter = py::object();
            problem_->arbiter_device.clear();
        }
        if (watched_ > 0) unwatch_process(watched_);
        watched_ = 0;
        release_memory();
        if (capped_) cap(alone());
    }

    // torch.compile's first call compiles (and, with max-autotune, benchmarks its choices):
    // that is its cost, kept apart from its time.
    std::pair<py::object, double> compile_reference(ReferenceProblem& p, const std::string& mode,
                                                    const py::tuple& inputs) {
        auto start = std::chrono::steady_clock::now();
        // Inductor's and Triton's caches in a folder of the judge's own (0700), not the shared
        // temporary folder's default, where an earlier candidate could have put one.
        py::module_ os = python_module("os");
        std::string caches = python_module("tempfile")
                                 .attr("mkdtemp")(py::arg("prefix") = "kbench-inductor-")
                                 .cast<std::string>();
        os.attr("environ")["TORCHINDUCTOR_CACHE_DIR"] = caches + "/inductor";
        os.attr("environ")["TRITON_CACHE_DIR"] = caches + "/triton";
        python_module("atexit").attr("register")(python_module("shutil").attr("rmtree"), caches,
                                                 true);
        py::object model = python_module("torch").attr("compile")(p.model, py::arg("mode") = mode);
        model(*inputs);
        device_.synchronize();
        return {model,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
    }

    protocol::BaselineTimed baseline(const protocol::BaselineRequest& request) {
        ReferenceProblem& p = problem();
        std::string key = request.timing.to_json().dump() + "\n" + request.compile;
        if (auto it = p.baselines.find(key); it != p.baselines.end()) return it->second;
        if (!request.time && request.compile.empty())
            return {std::nullopt, precision_state(), reference_work(p, device_), 0.0};
        const TimingConfig& config = request.timing;
        model_to_device(p, device_);
        std::vector<py::tuple> sets =
            baseline_inputs(p, device_, config.protocol == Mode::kernelbench);
        py::object model = p.model;
        double compile_s = 0;
        if (!request.compile.empty()) {
            auto it = p.compiled.find(request.compile);
            if (it == p.compiled.end())
                it = p.compiled
                         .emplace(request.compile, compile_reference(p, request.compile, sets[0]))
                         .first;
            model = it->second.first;
            compile_s = it->second.second;
            // Compiled only: timed by the next request, when kbench gives this judge the device.
            if (!request.time) return {std::nullopt, precision_state(), json::object(), compile_s};
        }
        std::size_t flush =
            config.protocol == Mode::kernelbench ? std::size_t(config.kb_flush_bytes) : 0;
        auto timer = make_timing_device(device_, flush);
        // On a CPU a sandbox's call includes the copy of its outputs into the judge's buffers
        // (sandbox_main.cpp): the reference timed here copies its own alike, so that a speedup
        // against it divides like by like.
        std::vector<at::Tensor> sinks;
        auto call = [&](std::size_t i) {
            py::object result = model(*sets[i % sets.size()]);
            if (device_.is_cuda()) return;
            FlatOutput flat = flatten_output(result);
            for (std::size_t k = 0; k < flat.items.size(); ++k) {
                if (!is_tensor(flat.items[k])) continue;
                const at::Tensor& t = THPVariable_Unpack(flat.items[k].ptr());
                if (sinks.size() <= k) sinks.resize(k + 1);
                if (!sinks[k].defined() || sinks[k].sizes() != t.sizes() ||
                    sinks[k].scalar_type() != t.scalar_type())
                    sinks[k] = at::empty_like(t, at::MemoryFormat::Contiguous);
                sinks[k].copy_(t);
            }
        };
        timing::Measurement m = timing::measure(*timer, call, config);
        protocol::BaselineTimed out{
            protocol::Measured{m.samples_us, m.converged, m.warmup_calls, m.calls,
                               m.outside_stream_samples, m.statistic},
            precision_state(), reference_work(p, device_), compile_s};
        p.baselines.emplace(key, out);
        return out;
    }

    protocol::Audited audit(const protocol::AuditRequest& request) {
        ReferenceProblem& p = problem();
        protocol::Audited out;
        out.arbiter = arbiter_name(p.precision);
        auto start = std::chrono::steady_clock::now();
        int trials = std::clamp(request.trials, 1, int(p.public_trial_seeds.size()));
        for (int t = 0; t < trials; ++t) {
            const auto& call = public_call(p, p.public_trial_seeds[std::size_t(t)], device_);
            std::vector<at::Tensor> wide;
            try {
                wide = run_arbiter(p, call.first, device_);
            } catch (const CudaError&) {
                throw;
            } catch (const std::runtime_error& e) {
                out.skipped = e.what();
                break;
            }
            ++out.trials;
            out.device = p.arbiter_device;
            std::string where = "trial " + std::to_string(t);
            CompareResult r = compare_values(wide, call.second.outputs, p.spec, where);
            out.max_abs_diff = std::max(out.max_abs_diff, r.max_abs_diff);
            out.max_rel_diff = std::max(out.max_rel_diff, r.max_rel_diff);
            for (const at::Tensor& w : wide) out.values += std::uint64_t(w.numel());
            if (!r.ok) {
                if (out.worst.empty()) out.worst = r.reason;
                for (std::size_t i = 0; i < wide.size(); ++i) {
                    at::Tensor ref = call.second.outputs[i].to(wide[i].device()).to(at::kDouble);
                    at::Tensor w = wide[i].to(at::kDouble);
                    at::Tensor close = (at::isfinite(w) &
                                        ((ref - w).abs() <= p.spec.atol + p.spec.rtol * w.abs())) |
                                       (ref == w) | (at::isnan(ref) & at::isnan(w));
                    out.mismatched += std::uint64_t((~close).sum().item<std::int64_t>());
                }
            }
        }
        p.arbiter = py::none();  // its memory goes back before any candidate runs
        p.arbiter_device.clear();
        release_memory();
        out.health = health_of(p);
        out.work = reference_work(p, device_);
        out.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return out;
    }

    // The reference over every public trial seed: outputs that do not depend on the inputs, that
    // an all-zero output would match, or that differ between two runs on the same inputs.
    json health_of(ReferenceProblem& p) {
        const double atol = p.spec.atol, rtol = p.spec.rtol;
        json h = {{"seeds", p.public_trial_seeds.size()}};
        double max_abs = 0, spread = 0;
        std::uint64_t values = 0, zero_pass = 0;
        bool constant = p.public_trial_seeds.size() > 1;
        // Copies of the handles: public_call may drop earlier calls to stay within its memory.
        std::optional<std::vector<at::Tensor>> first;
        for (std::uint64_t seed : p.public_trial_seeds) {
            const std::vector<at::Tensor> outs = public_call(p, seed, device_).second.outputs;
            for (const at::Tensor& o : outs) {
                if (!o.is_floating_point() || o.numel() == 0) continue;
                at::Tensor d = o.to(at::kDouble).abs();
                at::Tensor finite = at::isfinite(d);
                at::Tensor shown = at::where(finite, d, at::zeros_like(d));
                max_abs = std::max(max_abs, shown.max().item<double>());
                values += std::uint64_t(o.numel());
                // 0 matches r when |r| <= atol + rtol * |r|.
                zero_pass += std::uint64_t((d * (1 - rtol) <= atol).sum().item<std::int64_t>());
            }
            if (!first) {
                first = outs;
                continue;
            }
            CompareResult r = compare_values(*first, outs, p.spec, "seed");
            spread = std::max(spread, r.max_abs_diff);
            if (!r.ok) constant = false;
        }
        // The same inputs twice.
        const auto& call = public_call(p, p.public_trial_seeds.at(0), device_);
        ReferenceOutput again = run_reference_on_copy(p, call.first, device_);
        CompareResult repeat = compare_values(call.second.outputs, again.outputs, p.spec, "repeat");
        bool bitwise = true;
        for (std::size_t i = 0; i < again.outputs.size() && i < call.second.outputs.size(); ++i)
            bitwise =
                bitwise && again.outputs[i].sizes() == call.second.outputs[i].sizes() &&
                at::equal(again.outputs[i].to(at::kDouble), call.second.outputs[i].to(at::kDouble));
        bool zero_passes = values > 0 && zero_pass == values;
        json flags = json::array();
        std::string detail;
        if (constant) {
            flags.push_back("constant_output");
            detail += "the output is the same for all " +
                      std::to_string(p.public_trial_seeds.size()) + " seeds (largest difference " +
                      number_text(spread) + "): it does not depend on the inputs; ";
        }
        if (zero_passes) {
            flags.push_back("zero_passes");
            detail += "every output value is within the tolerance of 0 (largest |value| " +
                      number_text(max_abs) + "): an all-zero output passes; ";
        }
        if (!repeat.ok) {
            flags.push_back("nondeterministic");
            detail += "two runs on the same inputs differ by " + number_text(repeat.max_abs_diff) +
                      ", beyond the tolerance; ";
        }
        if (!detail.empty()) detail.resize(detail.size() - 2);
        h["flags"] = flags;
        h["constant_output"] = constant;
        h["zero_passes"] = zero_passes;
        h["nondeterministic"] = !repeat.ok;
        h["bitwise_repeatable"] = bitwise;
        h["max_abs_output"] = real_json(max_abs);
        h["spread"] = real_json(spread);
        h["repeat_diff"] = real_json(repeat.max_abs_diff);
        h["zero_pass_share"] = values ? double(zero_pass) / double(values) : 0.0;
        h["atol"] = atol;
        h["rtol"] = rtol;
        h["detail"] = detail;
        return h;
    }

    protocol::Health health() {
        try {
            device_.check_health();
            return {true, ""};
        } catch (const std::exception& e) {
            return {false, e.what()};
        }
    }

    // With KBENCH_CHECK_LEAKS set: no tensor of the last problem may still be alive once it is
    // dropped (a tensor left in a reference cycle waits for Python's collector, and on a GPU
    // each problem's could add up until the device is full). Off by default: it walks the heap.
    static void check_nothing_left() {
        if (!setting("KBENCH_CHECK_LEAKS")) return;
        auto [count, bytes] = python_module("kbench_worker.memory")
                                  .attr("live_tensors")()
                                  .cast<std::pair<std::int64_t, std::int64_t>>();
        if (count > 0)
            throw FaultError(FaultKind::harness,
                             std::to_string(count) + " tensor(s) of " + std::to_string(bytes) +
                                 " bytes outlived the problem they were made for");
    }

    void release_memory() {
        if (!device_.is_cuda()) return;
        python_module("torch").attr("cuda").attr("empty_cache")();
    }

    int fd_;
    Device device_;
    std::uint64_t capacity_ = 0;  // what the problem is planned within
    bool capped_ = false;         // --device-memory: every process is held to its share
    std::map<std::string, protocol::ProblemPrepared> too_large_;  // by prepare request
    std::unique_ptr<ReferenceProblem> problem_;
    std::unique_ptr<CandidateSession> session_;
    std::unique_ptr<CandidateSession> reference_;  // the reference's own sandbox, for rounds
    pid_t watched_ = 0;
};

}  // namespace

int judge_main(int fd, DeviceKind device_kind) {
    sandbox::make_undumpable();
    watch_signals();
    Device device = Device::open(device_kind);
    if (device.is_cuda()) python_module("torch").attr("cuda").attr("set_device")(0);
    Judge judge(fd, std::move(device));
    return judge.serve();
}

}  // namespace kbench::worker
