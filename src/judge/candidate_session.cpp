#include "judge/candidate_session.hpp"
#include "judge/sandbox_cpu.hpp"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "confinement/cgroups.hpp"
#include "core/fields.hpp"
#include "core/files.hpp"
#include "core/settings.hpp"
#include "process/process_tree.hpp"
#include "runtime/cuda_timing_device.hpp"
#include "runtime/python.hpp"
#include "runtime/python_program.hpp"
#include "runtime/signals.hpp"
#include "timing/remote_measurement.hpp"
#include "timing/statistics.hpp"

namespace kbench::worker {
namespace {

using protocol::FaultError;
using protocol::FaultKind;

// KBENCH_DEBUG_MEMORY: the judge's device memory at a step, on its stderr.
void debug_memory(const std::string& where) {
    static const bool on = setting("KBENCH_DEBUG_MEMORY").has_value();
    if (!on) return;
    py::module_ memory = python_module("kbench_worker.memory");
    SharedDeviceBytes shared = shared_device_bytes();
    constexpr double gib = double(std::uint64_t(1) << 30);
    std::fprintf(stderr,
                 "kbench judge memory %s: reserved %.2f (peak %.2f), shared %.2f (peak %.2f) GiB\n",
                 where.c_str(), double(memory.attr("reserved")().cast<std::uint64_t>()) / gib,
                 double(memory.attr("peak_reserved")().cast<std::uint64_t>()) / gib,
                 double(shared.live) / gib, double(shared.peak) / gib);
}

// The share of timed calls whose outputs are compared with the reference, chosen in secret.
constexpr double kCheckedShare = 0.2;

// A timed call whose output the judge compared and found wrong.
struct CheckedCallFailed {
    std::string reason;
};

}  // namespace

// The timed requests of one measurement: fresh inputs for every call (strict), a secret share
// of them checked against the reference, every output plain.
class TimedCalls : public timing::RemoteCalls {
  public:
    // judged: whether a checked call that fails decides anything (the candidate's); the
    // reference's own sandbox has its calls checked all the same, so that the judge's work between
    // requests is the same on both sides, but what is found there is kbench's business.
    explicit TimedCalls(CandidateSession& s, bool judged = true) : s_(s), judged_(judged) {}

    timing::RequestRecord run(std::size_t first, int count) override {
        ReferenceProblem& p = s_.p_;
        last_.clear();
        next_index_ = first + std::size_t(count);
        std::vector<Exchange::Call> calls;
        std::optional<StepTimes::Scope> inputs_step(std::in_place, s_.steps_, "inputs");
        for (int i = 0; i < count; ++i) {
            std::size_t index = first + std::size_t(i);
            Pending pending;
            pending.index = index;
            if (p.strict) {
                pending.seed = s_.keys_.seed("timed", index);
                pending.fresh = s_.allocating(
                    [&] { return make_call_inputs(p, pending.seed, s_.device_, s_.pooled()); });
                pending.checked = force_check_ || s_.keys_.uniform("check", index) < kCheckedShare;
            } else {
                pending.inputs = &public_call(p, p.seed, s_.device_).first;
            }
            last_.push_back(std::move(pending));
        }
        inputs_step.reset();
        if (first < 3) debug_memory("timed " + std::to_string(first) + " inputs made");
        for (Pending& pending : last_) {
            if (p.strict) pending.inputs = &pending.fresh;  // now that last_ holds them for good
            calls.push_back({pending.inputs, s_.p_.outputs});
        }
        s_.exchange_.set_where(count == 1 ? "timed call " + std::to_string(first)
                                          : "timed calls " + std::to_string(first) + "-" +
                                                std::to_string(first + std::size_t(count) - 1));
        Exchange::Outcome outcome = [&] {
            StepTimes::Scope step(s_.steps_, "requests");
            return s_.allocating([&] { return s_.exchange_.run(calls, true, false, false); });
        }();
        check_signals(s_.blamed_pid());
        claims_ = outcome.done.results;
        timing::RequestRecord record;
        record.wall_us = outcome.wall_us;
        record.judge_work_us = outcome.judge_work_us;
        record.sandbox_waited_us = outcome.sandbox_waited_us;
        record.judge_waited_us = outcome.judge_waited_all_us;
        for (int i = 0; i < count; ++i) {
            const protocol::CallResult& claims = outcome.done.results[std::size_t(i)];
            if (p.strict) refuse_lazy(claims, last_[std::size_t(i)].index);
            record.event_us.push_back(claims.event_us);
            record.host_us.push_back(claims.host_us);
        }
        StepTimes::Scope step(s_.steps_, "checks");
        // A transient request's inputs are memory the sandbox still maps: a checked call's
        // reference runs on inputs made again from their seed, where nothing of the
        // candidate's reaches.
        if (s_.pooled()) {
            s_.exchange_.drop_inputs();
            for (Pending& pending : last_) {
                pending.fresh = CallInputs{};
                pending.inputs = nullptr;
            }
        }
        if (first < 3) debug_memory("timed " + std::to_string(first) + " replied");
        for (std::size_t i = 0; i < last_.size(); ++i)
            if (last_[i].checked) check(i);
        if (first < 3) debug_memory("timed " + std::to_string(first) + " checked");
        s_.exchange_.release_request();
        // The calls' inputs go back to the device: the next request's are made before its own
        // (on a problem of 6 GiB inputs, 6 GiB less for the judge to hold beside them). A check
        // of the last calls (check_last) makes them again from their seeds.
        if (p.strict)
            for (Pending& pending : last_) {
                pending.fresh = CallInputs{};
                pending.inputs = nullptr;
            }
        return record;
    }

    bool has_stream_clock() const override { return s_.device_.is_cuda(); }

    // Checks the last request's calls, when no call was checked at all; a transient request's
    // outputs went with it, so there one more request is made, and checked.
    void check_last() {
        if (!s_.exchange_.transient()) {
            for (std::size_t i = 0; i < last_.size(); ++i) check(i);
            return;
        }
        force_check_ = true;
        run(next_index_, 1);
        force_check_ = false;
    }

    std::uint64_t checked() const { return checked_; }
    const CandidateSession::Arbitration& arbitration() const { return arbitration_; }
    // Not judged: the first checked call that missed the judge's reference.
    const std::string& reference_failure() const { return reference_failure_; }

  private:
    struct Pending {
        std::size_t index = 0;
        std::uint64_t seed = 0;  // strict mode: the seed its inputs are made from
        CallInputs fresh;
        const CallInputs* inputs = nullptr;
        bool checked = false;
    };

    void refuse_lazy(const protocol::CallResult& claims, std::size_t index) {
        std::string what;
        if (claims.kind != "tensor" && !claims.plain) what = "a " + claims.kind;
        for (const auto& o : claims.outputs)
            if (what.empty() && o.is_tensor && !o.plain) what = "a " + o.type;
        if (what.empty()) return;
        throw FaultError(FaultKind::integrity,
                         "timed call " + std::to_string(index) + " returned " + what +
                             ", not plain tensors: whatever such an object does when it is read "
                             "runs outside the timed call",
                         "not_plain_output", s_.exchange_.where());
    }

    void check(std::size_t position) {
        Pending& pending = last_[position];
        if (s_.p_.strict && !pending.inputs) {
            // The outputs wait on the host where the judge's bound has no room for them beside
            // the reference's call.
            if (s_.exchange_.transient() && s_.p_.plan.outputs_on_host)
                s_.exchange_.outputs_to_host(position);
            // In a request pool where the reference's own sandbox takes them, without a copy.
            pending.fresh =
                make_call_inputs(s_.p_, pending.seed, s_.device_, s_.reference_maker_ != nullptr);
            pending.inputs = &pending.fresh;
        }
        ReferenceOutput reference = s_.p_.strict
                                        ? s_.reference_outputs(pending.fresh)
                                        : run_reference_on_copy(s_.p_, *pending.inputs, s_.device_);
        ++checked_;
        debug_memory("timed call " + std::to_string(pending.index) + " reference made");
        // The claims were read with the reply; the judge compares its own copy of the outputs.
        std::string where = "timed call " + std::to_string(pending.index);
        CompareResult stats;
        std::string failure =
            s_.check_call(position, *pending.inputs, reference, claims_of(position), where, &stats);
        if (!judged_) {
            if (!failure.empty() && reference_failure_.empty()) reference_failure_ = failure;
            return;
        }
        if (!failure.empty() && s_.p_.strict && stats.values_compared)
            failure =
                s_.arbitrate(position, *pending.inputs, reference, where, failure, arbitration_);
        if (!failure.empty()) throw CheckedCallFailed{failure};
    }

    const protocol::CallResult& claims_of(std::size_t position) const {
        return claims_.at(position);
    }

    CandidateSession& s_;
    bool judged_ = true;
    bool force_check_ = false;
    std::size_t next_index_ = 0;  // the index after the last request's calls
    std::string reference_failure_;
    std::vector<Pending> last_;
    std::vector<protocol::CallResult> claims_;  // the last request's
    std::uint64_t checked_ = 0;
    CandidateSession::Arbitration arbitration_;
};

// One side's requests, with the CPU time the other side's processes used meanwhile.
class WatchedCalls : public timing::RemoteCalls {
  public:
    WatchedCalls(timing::RemoteCalls& calls, pid_t other) : calls_(calls), other_(other) {}

    timing::RequestRecord run(std::size_t first, int count) override {
        auto start = StepTimes::Clock::now();
        if (++requests_ % 32 == 0) other_.refresh();
        double before = other_.seconds();
        double excluded_before = excluded_s_;
        auto watched = StepTimes::Clock::now();
        timing::RequestRecord r = calls_.run(first, count);
        auto back = StepTimes::Clock::now();
        other_cpu_s_ += std::max(0.0, other_.seconds() - before - (excluded_s_ - excluded_before));
        watch_s_ +=
            std::chrono::duration<double>(watched - start + StepTimes::Clock::now() - back).count();
        wall_s_ += r.wall_us * 1e-6;
        return r;
    }
    bool has_stream_clock() const override { return calls_.has_stream_clock(); }

    double other_cpu_s() const { return other_cpu_s_; }
    // Work the judge asked of the other side meanwhile (the reference's outputs for a check):
    // not work beside these requests. Brackets it with the other side's CPU time.
    template <typename Work>
    auto asked_of_other(Work&& work) {
        double before = other_.seconds();
        struct Count {
            WatchedCalls& w;
            double before;
            ~Count() { w.excluded_s_ += std::max(0.0, w.other_.seconds() - before); }
        } count{*this, before};
        return work();
    }
    // Whether the other side's CPU time is its cgroup's (exact) or its listed processes'.
    bool exact() const { return other_.exact(); }
    long requests() const { return requests_; }
    double wall_s() const { return wall_s_; }
    // Spent reading the other side's CPU time.
    double watch_s() const { return watch_s_; }

  private:
    timing::RemoteCalls& calls_;
    SandboxCpu other_;
    long requests_ = 0;
    double other_cpu_s_ = 0;
    double excluded_s_ = 0;
    double wall_s_ = 0;
    double watch_s_ = 0;
};

// The reference's own sandbox, timed as the baseline: what goes wrong there is not the
// candidate's doing (kbench's, as far as the verdict goes), but for a signal the candidate's
// process sent meanwhile.
class ReferenceCalls : public timing::RemoteCalls {
  public:
    explicit ReferenceCalls(CandidateSession& reference) : calls_(reference, false) {}

    timing::RequestRecord run(std::size_t first, int count) override {
        try {
            return calls_.run(first, count);
        } catch (const FaultError& e) {
            if (e.rule() == "signalled_kbench") throw;
            throw FaultError(FaultKind::harness,
                             "the reference, timed in a sandbox of its own as the baseline: " +
                                 std::string(e.what()));
        }
    }
    bool has_stream_clock() const override { return calls_.has_stream_clock(); }
    const TimedCalls& calls() const { return calls_; }

  private:
    TimedCalls calls_;
};

CandidateSession::CandidateSession(ReferenceProblem& problem, const Device& device, int fd,
                                   pid_t sandbox_pid)
    : p_(problem),
      device_(device),
      exchange_(fd, device, sandbox_pid),
      keys_(KeyedSeeds::fresh()),
      sandbox_pid_(sandbox_pid) {
    exchange_.set_transient(device.is_cuda() && problem.plan.transient);
}

void CandidateSession::blame_memory(const std::string& what) const {
    if (!device_.is_cuda()) return;
    py::module_ memory = python_module("kbench_worker.memory");
    std::uint64_t judge =
        memory.attr("reserved")().cast<std::uint64_t>() + shared_device_bytes().live;
    // Beyond its plan the shortfall may be the judge's own: kbench's.
    if (judge > p_.plan.judge + kGiB / 2) return;
    throw FaultError(FaultKind::candidate_raised,
                     "the device ran out of memory for the judge's buffers (" + what +
                         ") while the judge held " + bytes_text(judge) + " of its planned " +
                         bytes_text(p_.plan.judge) +
                         ": the candidate's sandbox holds device memory beyond its share (buffers "
                         "of earlier requests kept mapped, or memory taken outside PyTorch)",
                     "", exchange_.where());
}

bool CandidateSession::pooled() const {
    return exchange_.transient() && p_.strict;
}

ReferenceOutput CandidateSession::reference_outputs(CallInputs& inputs) {
    // Only for a reference known to leave its inputs as they are: they go on to the candidate.
    bool leaves_inputs = p_.modifies.size() == inputs.tensors.size();
    for (bool m : p_.modifies) leaves_inputs = leaves_inputs && !m;
    if (reference_maker_ && leaves_inputs) {
        Exchange& maker = reference_maker_->exchange_;
        maker.set_where(exchange_.where());
        std::optional<std::vector<at::Tensor>> outputs;
        try {
            if (watching_maker_)
                outputs =
                    watching_maker_->asked_of_other([&] { return maker.exported_call(inputs); });
            else
                outputs = maker.exported_call(inputs);
        } catch (const FaultError& e) {
            if (e.rule() == "signalled_kbench") throw;
            std::string text = e.what();
            if (e.rule() == "reference_changed_input") {
                // It changes its inputs after all: the judge makes its outputs, on copies, from
                // inputs made again from their seed (as run_reference does).
                p_.modifies.assign(inputs.tensors.size(), true);
                reference_maker_ = nullptr;
                inputs = make_call_inputs(p_, inputs.seed, device_, pooled());
                return run_reference(p_, inputs, device_);
            }
            // The reference's sandbox out of memory within its share: the candidate's fault
            // where the device shows its sandbox holding more than its own (as for the judge's
            // buffers, blame_memory); else the plan's, kbench's (an honest candidate was blamed
            // for it under a 24 GiB cap on level 1 problem 97).
            if (e.kind() == FaultKind::candidate_raised &&
                text.find("out of memory") != std::string::npos &&
                maker.sandbox_peak_bytes() <= p_.plan.reference_sandbox + kGiB / 2 &&
                reference_maker_ != this && holds_beyond_its_share(maker))
                throw FaultError(FaultKind::candidate_raised,
                                 "the device ran out of memory for the reference's own sandbox "
                                 "within its share: the candidate's sandbox holds device memory "
                                 "beyond its own (" +
                                     text + ")",
                                 "", exchange_.where());
            // The plan has no room for the judge to make them itself: kbench's fault.
            throw FaultError(
                FaultKind::harness,
                "the reference's own sandbox, making the reference's outputs: " + text);
        }
        if (outputs) {
            ReferenceOutput r;
            r.outputs = std::move(*outputs);
            r.modifies.assign(inputs.tensors.size(), false);
            for (const at::Tensor& t : r.outputs) r.bytes += std::size_t(t.nbytes());
            return r;
        }
        // An output its sandbox could not export (not a tensor on the device): the judge makes
        // them from here on.
        reference_maker_ = nullptr;
    }
    return run_reference(p_, inputs, device_);
}

bool CandidateSession::holds_beyond_its_share(const Exchange& maker) const {
    // The device's use as the judge reads it, less the judge's own (its allocator and shared
    // buffers), the reference's sandbox's (at its peak) and the three CUDA contexts: never the
    // candidate's own report of what it holds.
    py::module_ memory = python_module("kbench_worker.memory");
    std::uint64_t used = memory.attr("device_used")().cast<std::uint64_t>();
    std::uint64_t others = memory.attr("reserved")().cast<std::uint64_t>() +
                           shared_device_bytes().live + maker.sandbox_peak_bytes() +
                           p_.plan.contexts;
    std::uint64_t candidate = used > others ? used - others : 0;
    return candidate > p_.plan.candidate_sandbox + kGiB / 2;
}

void CandidateSession::park_on_host(ReferenceOutput& reference) const {
    if (!exchange_.transient()) return;
    // A reference that returns its input, or a view of it, made its output in memory the
    // sandbox is about to map: a copy of its own, where no work of the candidate's reaches.
    for (at::Tensor& out : reference.outputs) {
        std::size_t offset = 0;
        if (SharedBuffer::segment_of(out, offset)) out = out.clone();
    }
    if (!p_.plan.outputs_on_host) return;
    for (at::Tensor& out : reference.outputs) {
        if (!out.is_cuda()) continue;
        if (reference.made_on.empty()) reference.made_on = out.device().str();
        out = pinned_host_copy(out);
    }
    empty_device_cache();  // the outputs' buffers take the memory the reference's call held
}

std::size_t CandidateSession::memory_budget() const {
    // Within the plan's working allowance (a call of more is batched with none: a request of
    // one such call is long enough for the clock anyway).
    return kBatchBytes;
}

json CandidateSession::memory_report(const CandidateSession* reference) const {
    if (!device_.is_cuda()) return json();
    debug_memory("report");
    py::module_ memory = python_module("kbench_worker.memory");
    std::uint64_t judge =
        memory.attr("peak_reserved")().cast<std::uint64_t>() + shared_device_bytes().peak;
    std::uint64_t device = exchange_.device_peak_bytes();
    if (reference) device = std::max(device, reference->exchange_.device_peak_bytes());
    return json{{"judge_peak", judge},
                {"candidate_sandbox_peak", exchange_.sandbox_peak_bytes()},
                {"reference_sandbox_peak",
                 reference ? json(reference->exchange_.sandbox_peak_bytes()) : json()},
                {"device_peak", device},
                {"reference_outputs_by", reference_maker_ ? "reference_sandbox" : "judge"},
                {"plan", p_.plan.to_json()}};
}

std::vector<OutputShape> CandidateSession::output_shapes(const ReferenceOutput& reference) const {
    std::vector<OutputShape> shapes;
    for (const at::Tensor& t : reference.outputs)
        shapes.push_back({to_vector(t.sizes()), t.scalar_type()});
    return shapes;
}

protocol::SandboxAttached CandidateSession::attach(double limit_s,
                                                   const CandidateSession* measured_like) {
    exchange_.set_deadline(limit_s, "starting the sandbox");
    exchange_.hello();
    protocol::AttachSandbox request{device_.is_cuda() ? DeviceKind::cuda : DeviceKind::cpu,
                                    2 * device_.cache_bytes(),
                                    device_.is_cuda() ? memory_share_ : 0.0, p_.tf32};
    // Every reply must report the flags the policy set in the sandbox before the candidate was
    // imported: in strict mode a changed precision is refused.
    exchange_.expect_precision(json(), p_.strict);
    exchange_.request<protocol::Empty>(request);
    if (measured_like) {
        // The same protocol code and calls in a sandbox started the same way: its cost was
        // measured in the candidate's before any code of the candidate's existed there, with
        // the machine as quiet as it gets (for a problem of 6 GiB calls, 0.25 s saved).
        overhead_ = measured_like->overhead_;
        max_batch_ = measured_like->max_batch_;
        return {{overhead_.fixed_us, overhead_.per_call_us, overhead_.spread_us}};
    }
    // The protocol's own cost, measured while no code of the candidate's exists in the sandbox.
    // A transient problem's calls get inputs of their own, in a request pool, as every later
    // request's are (and no reference call: the model is not called).
    // Inputs of their own, not a kept public call: making that again would run the reference
    // in the judge (whose model may wait on the host).
    CallInputs base = make_call_inputs(p_, p_.seed, device_, exchange_.transient());
    Exchange::Call one{&base, p_.outputs};
    auto done_with_request = [&] { exchange_.release_request(); };
    // What a request costs besides its calls: its wall time less what the empty calls took.
    auto overhead_of = [&](const Exchange::Outcome& outcome) {
        double calls = 0;
        for (const auto& r : outcome.done.results)
            calls += timing::call_sample(r.event_us, r.host_us, device_.is_cuda()).us;
        return std::max(0.0, outcome.wall_us - outcome.judge_work_us - calls);
    };
    // A machine busy for a moment would make the spread, and so the clock's margin, wide for the
    // whole candidate: up to three rounds, and the one of least spread is kept.
    std::vector<double> one_us, many_us;
    double least_spread = 0;
    for (int round = 0; round < 3; ++round) {
        std::vector<double> values;
        for (int i = 0; i < 12; ++i) {
            auto outcome = exchange_.run({one}, true, false, true);
            done_with_request();
            if (i >= 2) values.push_back(overhead_of(outcome));
        }
        double spread = timing::fit_overhead(values, {}, 0).spread_us;
        if (round == 0 || spread < least_spread) {
            least_spread = spread;
            one_us = values;
        }
        if (least_spread <= std::max(5.0, 0.1 * timing::median(one_us))) break;
    }
    constexpr int kMany = 4;
    std::size_t call_bytes = std::max<std::size_t>(p_.trial_bytes, 1);
    // On a CPU the cache flush between calls costs more than the calls it would batch, so each
    // request is one call there.
    bool batches = device_.is_cuda() && kMany * call_bytes <= memory_budget();
    if (batches) {
        std::vector<Exchange::Call> many(kMany, one);
        for (int i = 0; i < 8; ++i) {
            auto outcome = exchange_.run(many, true, false, true);
            done_with_request();
            if (i >= 2) many_us.push_back(overhead_of(outcome));
        }
    }
    exchange_.check_outputs_unchanged();
    overhead_ = timing::fit_overhead(one_us, many_us, batches ? kMany : 0);
    max_batch_ = batches ? int(std::clamp<std::size_t>(memory_budget() / call_bytes, 1, 64)) : 1;
    return {{overhead_.fixed_us, overhead_.per_call_us, overhead_.spread_us}};
}

void CandidateSession::scale_deadlines() {
    Exchange::CallLimits l;
    l.factor = call_factor_;
    l.floor_s = call_floor_s_;
    l.first_s = first_call_s_;
    l.reference_s = p_.call_seconds;
    l.compiling = [this] { return compiling(); };
    exchange_.set_call_limits(std::move(l));
}

bool CandidateSession::compiling() const {
    if (sandbox::descendants_of(sandbox_pid_).size() > processes_at_load_) return true;
    if (folder_.empty()) return false;
    auto recent = fs::file_time_type::clock::now() - std::chrono::seconds(2);
    std::error_code error;
    int looked = 0;
    for (auto it = fs::recursive_directory_iterator(
             folder_, fs::directory_options::skip_permission_denied, error);
         !error && it != fs::recursive_directory_iterator() && looked < 20000;
         it.increment(error), ++looked) {
        std::error_code ignored;
        if (it->last_write_time(ignored) > recent) return true;
    }
    return false;
}

std::string CandidateSession::reference_name_hint(const std::string& error) const {
    // Python's "name 'X' is not defined", for a name the reference's program defines.
    static const std::string_view tail = "' is not defined";
    if (!p_.strict) return {};
    std::size_t end = error.find(tail);
    std::size_t begin = end == std::string::npos ? end : error.rfind("name '", end);
    if (begin == std::string::npos) return {};
    std::string name = error.substr(begin + 6, end - begin - 6);
    if (name.empty() || name.size() > 200 ||
        !std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; }) ||
        !py::hasattr(p_.module, name.c_str()))
        return {};
    return "; `" + name +
           "` is the reference's: KernelBench runs the candidate in the reference's namespace, "
           "kbench's strict mode runs it in a module of its own. Define `" +
           name +
           "` in the candidate (copy it from the reference), or evaluate with --mode kernelbench.";
}

void CandidateSession::load(const protocol::LoadRequest& request) {
    exchange_.set_deadline(request.limit_s, "load");
    // Its folder as it sees it (in its mount namespace, a tmpfs under the disk quota), where
    // the judge may look; else the path alone.
    folder_ = fs::path(request.candidate_file).parent_path();
    fs::path seen = "/proc/" + std::to_string(exchange_.serving_pid()) + "/root" + folder_.string();
    std::error_code hidden;
    if (fs::is_directory(seen, hidden)) folder_ = seen;
    protocol::LoadCandidate load;
    load.candidate_file = request.candidate_file;
    load.seed = p_.seed;
    load.precision = p_.precision;
    if (!p_.strict) load.reference_code = p_.code;
    std::vector<int> fds;
    std::vector<std::shared_ptr<SharedBuffer>> keep;
    for (py::handle value : p_.init_values) {
        protocol::Argument arg;
        if (is_tensor(value)) {
            at::Tensor t = THPVariable_Unpack(value.ptr()).contiguous();
            auto buffer = SharedBuffer::allocate(t.nbytes(), device_);
            at::Tensor view = buffer->view(t.sizes(), t.strides(), t.scalar_type());
            view.copy_(t);
            std::uint64_t id = 1'000'000 + keep.size();
            load.slots.push_back({id, buffer->describe(std::int64_t(fds.size()))});
            fds.push_back(buffer->fd());
            arg.is_tensor = true;
            arg.tensor = tensor_ref(id, view);
            keep.push_back(buffer);
        } else {
            arg.value = value_to_json(value);
        }
        load.init_args.push_back(arg);
    }
    device_.synchronize();
    try {
        exchange_.request<protocol::Empty>(load, fds);
    } catch (const protocol::FaultError& e) {
        std::string hint = reference_name_hint(e.what());
        if (e.kind() != protocol::FaultKind::candidate_load || hint.empty()) throw;
        protocol::Fault f = e.fault();
        // On the exception's own line, which the verdict's reason quotes.
        std::string message = f.message;
        while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
            message.pop_back();
        throw protocol::FaultError(f.kind, message + hint, f.rule, f.where);
    }
    check_signals(blamed_pid());
    processes_at_load_ = sandbox::descendants_of(sandbox_pid_).size();
}

std::string CandidateSession::check_call(std::size_t position, const CallInputs& inputs,
                                         const ReferenceOutput& reference,
                                         const protocol::CallResult& claims,
                                         const std::string& where, CompareResult* stats) {
    device_.synchronize();
    CompareSpec spec = p_.spec;
    spec.device = reference.made_on;
    CompareResult r = compare_outputs(reference.outputs, exchange_.outputs(position), claims, spec,
                                      where, &exchange_.taken(position));
    if (r.ok && p_.strict) {
        if (auto failure =
                exchange_.changed_input(position, inputs.tensors, reference.modifies, where)) {
            r.ok = false;
            r.reason = *failure;
            r.values_compared = false;  // not a difference in values: no arbitration
        }
    }
    if (stats) *stats = r;
    return r.ok ? std::string() : r.reason;
}

protocol::CorrectnessChecked CandidateSession::correctness(
    const protocol::CorrectnessRequest& request) {
    exchange_.set_deadline(request.limit_s, "correctness");
    if (reference_maker_)
        reference_maker_->exchange_.set_deadline(request.limit_s,
                                                 "correctness (the reference's outputs)");
    steps_.clear();
    protocol::CorrectnessChecked out;
    out.trials = p_.trials;
    Arbitration arbitration;
    for (int t = 0; t < p_.trials; ++t) {
        CallInputs fresh;
        ReferenceOutput fresh_reference;
        const CallInputs* inputs = &fresh;
        const ReferenceOutput* reference = &fresh_reference;
        if (p_.strict) {
            // Seeds drawn with this candidate's key: no candidate can prepare for them.
            {
                StepTimes::Scope step(steps_, "inputs");
                fresh = allocating([&] {
                    return make_call_inputs(p_, keys_.seed("trial", std::uint64_t(t)), device_,
                                            pooled());
                });
            }
            StepTimes::Scope step(steps_, "reference");
            exchange_.set_where("trial " + std::to_string(t));
            fresh_reference = reference_outputs(fresh);
            park_on_host(fresh_reference);
        } else {
            const auto& kb = public_call(p_, p_.public_trial_seeds[std::size_t(t)], device_);
            inputs = &kb.first;
            reference = &kb.second;
        }
        exchange_.set_where("trial " + std::to_string(t));
        debug_memory("trial " + std::to_string(t) + " inputs and reference made");
        scale_deadlines();
        std::optional<StepTimes::Scope> step(std::in_place, steps_, "requests");
        auto outcome = allocating([&] {
            return exchange_.run({{inputs, output_shapes(*reference)}}, false, p_.strict, false);
        });
        check_signals(sandbox_pid_);
        step.emplace(steps_, "checks");
        CompareResult stats;
        std::string where = "trial " + std::to_string(t);
        std::string failure =
            check_call(0, *inputs, *reference, outcome.done.results[0], where, &stats);
        // Values off the working-precision reference: the reference at a wider precision
        // decides (strict mode; the reference harness has no such step).
        if (!failure.empty() && p_.strict && stats.values_compared)
            failure = arbitrate(0, *inputs, *reference, where, failure, arbitration);
        debug_memory("trial " + std::to_string(t) + " checked");
        exchange_.release_request();
        out.max_abs_diff = std::max(out.max_abs_diff, stats.max_abs_diff);
        out.max_rel_diff = std::max(out.max_rel_diff, stats.max_rel_diff);
        if (failure.empty())
            ++out.trials_passed;
        else if (out.failure.empty())
            out.failure = failure;
    }
    exchange_.check_outputs_unchanged();
    if (arbitration.trials > 0) out.arbitration = arbitration.to_json(p_);
    {
        StepTimes::Scope step(steps_, "kernel records");
        out.kernels = kernels();
    }
    out.steps_s = steps_.seconds();
    out.memory = memory_report(reference_maker_);
    return out;
}

protocol::KnockoutChecked CandidateSession::knockout(const protocol::KnockoutRequest& request) {
    protocol::KnockoutChecked out;
    if (!device_.is_cuda()) {
        out.why = "the device is a CPU";
        return out;
    }
    exchange_.set_deadline(request.limit_s, "the knockout check");
    CallInputs fresh;
    ReferenceOutput fresh_reference;
    const CallInputs* inputs = &fresh;
    const ReferenceOutput* reference = &fresh_reference;
    if (p_.strict) {
        fresh = allocating(
            [&] { return make_call_inputs(p_, keys_.seed("knockout", 0), device_, pooled()); });
        exchange_.set_where("the knockout call");
        fresh_reference = reference_outputs(fresh);
        park_on_host(fresh_reference);
    } else {
        const auto& kb = public_call(p_, p_.public_trial_seeds.front(), device_);
        inputs = &kb.first;
        reference = &kb.second;
    }
    exchange_.set_where("the knockout call");
    scale_deadlines();
    Exchange::Outcome outcome;
    try {
        outcome = allocating([&] {
            return exchange_.run({{inputs, output_shapes(*reference)}}, false, true, false,
                                 request.names);
        });
    } catch (const FaultError& e) {
        // Whether the call failed because a replaced launch did, cannot be told: undecided.
        if (e.kind() != FaultKind::candidate_raised) throw;
        exchange_.release_request();
        out.why =
            "the call raised with its kernels knocked out: " + std::string(e.what()).substr(0, 300);
        try {
            out.kernels = kernels();  // drained: they are this call's
        } catch (const FaultError&) {
        }
        return out;
    }
    check_signals(sandbox_pid_);
    const json& k = outcome.done.knockout;
    if (k.is_null()) {
        out.why = "the sandbox knocked nothing out";
    } else {
        out.replaced = k["replaced"].get<std::uint64_t>();
        auto failed = k["failed"].get<std::uint64_t>();
        if (!k["why"].get<std::string>().empty())
            out.why = k["why"].get<std::string>();
        else if (failed > 0)
            out.why = std::to_string(failed) + " of the " + std::to_string(out.replaced) +
                      " replaced launches failed";
        else if (out.replaced == 0)
            out.why = "none of its kernels was launched in the call";
    }
    if (out.why.empty()) {
        device_.synchronize();
        CompareSpec spec = p_.spec;
        spec.device = reference->made_on;
        CompareResult r =
            compare_outputs(reference->outputs, exchange_.outputs(0), outcome.done.results[0], spec,
                            "the knockout call", &exchange_.taken(0));
        out.done = true;
        out.changed = !r.ok;
        char diff[32];
        std::snprintf(diff, sizeof diff, "%.3g", r.max_abs_diff);
        out.how = r.ok ? "the outputs still match the reference's (max abs diff " +
                             std::string(diff) + ")"
                       : r.reason.substr(0, 300);
    }
    exchange_.release_request();
    out.kernels = kernels();
    return out;
}

json CandidateSession::kernels() {
    Exchange::ModelCalls judged = exchange_.take_model_calls();
    exchange_.set_where("kernel records");
    auto report = exchange_.request<protocol::KernelsReported>(protocol::ReportKernels{});
    // The records are made in the candidate's process: they must at least agree with what the
    // judge saw itself, the number of calls and the time its clock allowed them.
    std::string wrong = report.disagreement(judged.calls, judged.wall_us);
    if (report.source != (device_.is_cuda() ? "gpu" : "cpu"))
        wrong = "the records are of a " + report.source + " on a " +
                (device_.is_cuda() ? "GPU" : "CPU");
    if (!wrong.empty())
        throw FaultError(FaultKind::integrity, wrong, "kernel_records_inconsistent",
                         "kernel records");
    return report.to_json();
}

json CandidateSession::Arbitration::to_json(const ReferenceProblem& p) const {
    json j = {{"arbiter", arbiter_name(p.precision)},
              {"trials", trials},
              {"passed", passed},
              {"seconds", real_json(seconds)}};
    if (!unavailable.empty()) {
        j["skipped"] = unavailable;
        return j;
    }
    j["device"] = p.arbiter_device;
    j["candidate_max_abs_diff"] = real_json(candidate_max_abs);
    j["reference_max_abs_diff"] = real_json(reference_max_abs);
    return j;
}

std::string CandidateSession::arbitrate(std::size_t position, const CallInputs& inputs,
                                        const ReferenceOutput& reference, const std::string& where,
                                        const std::string& failure, Arbitration& a) {
    // The judge's time, not the candidate's: counted in the record (the phase's clock stops
    // from a reply to the next request).
    struct Elapsed {
        Arbitration& a;
        Clock::time_point start = Clock::now();
        ~Elapsed() { a.seconds += std::chrono::duration<double>(Clock::now() - start).count(); }
    } elapsed{a};
    // One trial that misses the wider reference too decides the verdict: later ones are not
    // arbitrated, so that a wrong candidate costs no more than one run of the wider reference.
    if (!a.unavailable.empty()) return failure + " (no arbitration: " + a.unavailable + ")";
    if (a.trials > a.passed)
        return failure +
               " (not arbitrated: an earlier call missed the reference computed at a "
               "wider precision too)";
    ++a.trials;
    std::vector<at::Tensor> wide;
    // A transient request's inputs are memory the sandbox still maps: the arbiter runs on
    // inputs made again from their seed, where nothing of the candidate's reaches.
    CallInputs own;
    const CallInputs* arbitrated = &inputs;
    if (inputs.pool) {
        own = make_call_inputs(p_, inputs.seed, device_);
        arbitrated = &own;
    }
    try {
        wide = run_arbiter(p_, *arbitrated, device_);
    } catch (const CudaError&) {
        throw;
    } catch (const std::runtime_error& e) {
        a.unavailable = e.what();
        return failure + " (no arbitration: " + a.unavailable + ")";
    }
    const std::vector<at::Tensor>& got = exchange_.outputs(position);
    bool same_layout = wide.size() == reference.outputs.size();
    for (std::size_t i = 0; same_layout && i < wide.size(); ++i)
        same_layout = wide[i].sizes() == reference.outputs[i].sizes();
    if (!same_layout) {
        a.unavailable = "the reference's outputs at the arbiter's precision have another layout";
        return failure + " (no arbitration: " + a.unavailable + ")";
    }
    CompareResult candidate = compare_values(wide, got, p_.spec, where, &exchange_.taken(position));
    CompareResult ref = compare_values(wide, reference.outputs, p_.spec, where);
    a.candidate_max_abs = std::max(a.candidate_max_abs, candidate.max_abs_diff);
    a.reference_max_abs = std::max(a.reference_max_abs, ref.max_abs_diff);
    if (!candidate.ok)
        return failure + "; against the reference computed in " + arbiter_name(p_.precision) +
               " too: " + candidate.reason;
    ++a.passed;
    // Arbitration is strict mode's: the strict input check still applies.
    if (auto changed = exchange_.changed_input(position, inputs.tensors, reference.modifies, where))
        return *changed;
    return "";
}

protocol::CandidateTimed CandidateSession::timing(const protocol::TimingRequest& request,
                                                  CandidateSession* reference) {
    exchange_.set_deadline(request.limit_s, "timing");
    steps_.clear();
    if (reference) reference->steps_.clear();
    struct Unwatch {
        WatchedCalls*& watching;
        ~Unwatch() { watching = nullptr; }
    } unwatch{watching_maker_};
    // The reference harness's protocol flushes with a buffer of its own size.
    if (request.timing.protocol == Mode::kernelbench)
        exchange_.set_flush_bytes(std::size_t(request.timing.kb_flush_bytes));
    protocol::CandidateTimed out;
    scale_deadlines();
    TimedCalls calls(*this);
    // A request spans about a millisecond on a GPU (two on a CPU, whose clock is coarser
    // against the protocol's own cost), so that the clock check is tight.
    double target_us = device_.is_cuda() ? 1000 : 2000;
    timing::RemoteMeasurement measured;
    // kbench's protocol alternates the baseline's requests, served by the reference's own
    // sandbox, with the candidate's; the reference harness's protocol times the baseline apart,
    // as it does.
    std::unique_ptr<ReferenceCalls> reference_calls;
    // Each side's requests watched for work of the other side's processes meanwhile.
    std::unique_ptr<WatchedCalls> watched_reference, watched_candidate;
    std::optional<timing::RemoteBaseline> baseline;
    timing::RemoteCalls* candidate_calls = &calls;
    if (reference && request.timing.rounds()) {
        reference->exchange_.set_deadline(request.limit_s, "timing the reference");
        reference->scale_deadlines();
        reference_calls = std::make_unique<ReferenceCalls>(*reference);
        watched_reference = std::make_unique<WatchedCalls>(*reference_calls, sandbox_pid_);
        watched_candidate = std::make_unique<WatchedCalls>(calls, reference->sandbox_pid_);
        if (reference_maker_ == reference) watching_maker_ = watched_candidate.get();
        candidate_calls = watched_candidate.get();
        baseline.emplace(timing::RemoteBaseline{*watched_reference, reference->overhead_,
                                                reference->max_batch_});
    }
    try {
        measured = timing::measure_remote(*candidate_calls, request.timing, overhead_, max_batch_,
                                          target_us, baseline ? &*baseline : nullptr);
        if (setting("KBENCH_DEBUG_CLOCK"))
            std::fprintf(stderr, "kbench judge: overhead %.1f + %.1f us/call, spread %.1f us; %s\n",
                         overhead_.fixed_us, overhead_.per_call_us, overhead_.spread_us,
                         measured.clock.detail.c_str());
        exchange_.check_outputs_unchanged();
        if (p_.strict && calls.checked() == 0) calls.check_last();
    } catch (const CheckedCallFailed& failed) {
        out.failure = failed.reason;
        out.checked_calls = calls.checked();
        if (calls.arbitration().trials > 0) out.arbitration = calls.arbitration().to_json(p_);
        out.memory = memory_report(reference);
        return out;
    }
    if (reference_calls) {
        if (!reference_calls->calls().reference_failure().empty())
            throw FaultError(FaultKind::harness,
                             "the reference in its own sandbox gave other outputs than in the "
                             "judge on a timed call: " +
                                 reference_calls->calls().reference_failure());
        // The candidate's processes must not work while the baseline is timed (it would slow
        // the baseline, and the speedup would be the candidate's doing): beyond a quarter of the
        // baseline's time, and clearly beyond what the reference's process did meanwhile. An
        // idle sandbox still finishes its reply at times after the next request began. Counted
        // by the sandboxes' cgroups (to the microsecond; honest candidates counted 0-0.6 ms over
        // 200 requests), the slack is 10 ms and a quarter of a millisecond a request, so that it
        // shrinks with the baseline's time; counted from processes' records, in ticks (10 ms),
        // it is 0.1 s, which honest candidates stayed well within (at most 0.09 s on a busy
        // 2-core machine).
        double beside = watched_reference->other_cpu_s();
        double reference_beside = watched_candidate->other_cpu_s();
        double base_wall = watched_reference->wall_s();
        bool exact = watched_reference->exact() && watched_candidate->exact();
        double slack = exact ? 0.01 + 0.00025 * double(watched_reference->requests()) : 0.1;
        if (setting("KBENCH_DEBUG_CLOCK"))
            std::fprintf(stderr,
                         "kbench judge: CPU beside the baseline %.4f s (its %ld requests %.4f "
                         "s), beside the candidate %.4f s (its %ld requests %.4f s), counted by "
                         "%s\n",
                         beside, watched_reference->requests(), base_wall, reference_beside,
                         watched_candidate->requests(), watched_candidate->wall_s(),
                         exact ? "cgroups" : "processes");
        if (beside > 0.25 * base_wall + slack && beside > 3 * reference_beside + slack) {
            char text[400];
            std::snprintf(text, sizeof text,
                          "the candidate's processes used %.3f s of CPU time while the "
                          "baseline's requests were timed (%.3f s), the reference's %.3f s while "
                          "the candidate's were: work beside the baseline slows it",
                          beside, base_wall, reference_beside);
            if (p_.strict) throw FaultError(FaultKind::integrity, text, "work_beside_baseline");
            out.findings.push_back({"work_beside_baseline", Severity::warn, text});
        }
        // Its kernel records are read, so that both sandboxes did the same work; they are not
        // the candidate's.
        if (device_.is_cuda()) {
            StepTimes::Scope step(steps_, "reference's kernel records");
            try {
                out.reference_kernels = reference->kernels();
            } catch (const FaultError& e) {
                throw FaultError(FaultKind::harness,
                                 "the reference's own sandbox: " + std::string(e.what()));
            }
        }
    }
    out.checked_calls = calls.checked();
    if (calls.arbitration().trials > 0) out.arbitration = calls.arbitration().to_json(p_);
    {
        StepTimes::Scope step(steps_, "kernel records");
        out.kernels = kernels();
    }
    steps_.add("warm-up", measured.warmup_s);
    if (baseline) {
        steps_.add("reference's warm-up", measured.baseline_warmup_s);
        steps_.add("rounds", measured.sampling_s);
        steps_.add("watching CPU time",
                   watched_reference->watch_s() + watched_candidate->watch_s());
        steps_.add_all(reference->steps_, "reference's ");
    } else {
        steps_.add("sampling", measured.sampling_s);
    }
    out.steps_s = steps_.seconds();
    out.memory = memory_report(reference);
    const timing::Measurement& m = measured.measurement;
    out.measured = {m.samples_us, m.converged, m.warmup_calls, m.calls, m.outside_stream_samples,
                    m.statistic};
    if (baseline && !measured.baseline_us.empty()) {
        out.baseline = protocol::Measured{measured.baseline_us,
                                          m.converged,
                                          measured.baseline_warmup_calls,
                                          measured.baseline_calls,
                                          measured.baseline_outside_stream_samples,
                                          "median"};
        out.round_ratios = measured.round_ratios;
    }
    if (!exchange_.precision_change().empty())
        out.findings.push_back(
            {exchange_.precision_change_rule(), Severity::warn, exchange_.precision_change()});
    if (m.outside_stream_samples > 0)
        out.findings.push_back(
            {"work_outside_stream", Severity::warn,
             std::to_string(m.outside_stream_samples) + " of " +
                 std::to_string(m.samples_us.size()) +
                 " samples: the device was busy after the launch stream's end event; those "
                 "samples use the host clock across a device-wide synchronisation"});
    if (measured.clock.refuted) {
        if (p_.strict)
            throw FaultError(FaultKind::integrity, measured.clock.detail,
                             "claimed_time_below_clock");
        out.findings.push_back({"claimed_time_below_clock", Severity::warn,
                                measured.clock.detail + "; its samples come from that clock"});
    } else if (measured.clock.unexplained > 0 &&
               measured.clock.unexplained * 10 > measured.clock.requests) {
        out.findings.push_back({"claimed_time_below_clock", Severity::warn,
                                measured.clock.detail + "; those samples come from that clock"});
    }
    return out;
}

void CandidateSession::detach() {
    exchange_.send_exit();
}

}  // namespace kbench::worker
