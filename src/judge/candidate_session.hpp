#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/files.hpp"
#include "core/keyed_seeds.hpp"
#include "judge/exchange.hpp"
#include "judge/reference_problem.hpp"
#include "judge/step_times.hpp"
#include "protocol/judge_messages.hpp"
#include "timing/trusted_clock.hpp"

namespace kbench::worker {

class WatchedCalls;

// The judge's evaluation of one candidate in one sandbox: what to hand over, what to take back,
// on which clock. Every input comes from a seed drawn with a key that exists only here (strict
// mode), so nothing the candidate sees predicts what comes next.
class CandidateSession {
  public:
    CandidateSession(ReferenceProblem& problem, const Device& device, int fd, pid_t sandbox_pid);

    // The sandbox's hello, its device, and the protocol's own cost measured with null requests,
    // before the candidate's code is loaded. `measured_like`: a session of another sandbox that
    // runs the same code for the same problem (the candidate's, for the reference's own
    // sandbox), whose measurement is taken instead of measuring again.
    protocol::SandboxAttached attach(double limit_s,
                                     const CandidateSession* measured_like = nullptr);
    void load(const protocol::LoadRequest& request);
    // What to do when the candidate's load failed on a name only the reference defines (strict
    // mode): empty when it did not.
    std::string reference_name_hint(const std::string& error) const;
    // Deadlines of requests of model calls, scaled to the reference's own time (PhaseLimits).
    void set_call_limits(double factor, double floor_s, double first_s) {
        call_factor_ = factor;
        call_floor_s_ = floor_s;
        first_call_s_ = first_s;
    }
    // The share of the device's memory the sandbox's PyTorch allocator may use (the memory
    // plan's; 0: no cap), given to it when it attaches.
    void set_memory_share(double fraction) { memory_share_ = fraction; }
    protocol::CorrectnessChecked correctness(const protocol::CorrectnessRequest& request);
    // One call on a correctness input of its own with the candidate's kernels of these names
    // knocked out (a GPU only): whether its outputs still match the reference's.
    protocol::KnockoutChecked knockout(const protocol::KnockoutRequest& request);
    // With the reference's own sandbox (a session of its own, loaded with the reference) and
    // kbench's protocol with rounds: the baseline's requests alternate with the candidate's.
    protocol::CandidateTimed timing(const protocol::TimingRequest& request,
                                    CandidateSession* reference = nullptr);
    void detach();
    // The reference's own sandbox makes the reference's outputs for this session's checks
    // (a transient problem in strict mode on a GPU, with rounds): the judge holds a request's
    // inputs and the candidate's outputs, not the reference's call. Null: the judge makes them.
    void take_references_from(CandidateSession* reference) { reference_maker_ = reference; }

    pid_t sandbox_pid() const { return sandbox_pid_; }
    // The process a signal to the judge is charged to while this session runs: its own, or for
    // the reference's session, the candidate's beside it.
    pid_t blamed_pid() const { return blamed_pid_ > 0 ? blamed_pid_ : sandbox_pid_; }
    void blame(pid_t pid) { blamed_pid_ = pid; }

  private:
    friend class TimedCalls;
    friend class WatchedCalls;

    // Hands the exchange the call limits for the reference's time as known now.
    void scale_deadlines();
    // Whether the sandbox is compiling: processes it started since it was loaded, or files
    // written in its folder in the last two seconds.
    bool compiling() const;
    double call_factor_ = 0;
    double call_floor_s_ = 0;
    double first_call_s_ = 0;
    fs::path folder_;                    // the sandbox's own folder (its candidate file's)
    std::size_t processes_at_load_ = 0;  // the sandbox's processes once it was loaded

    // The kernels the sandbox ran since the last report, as a KernelsReported object (on a CPU:
    // samples of its threads in model calls).
    json kernels();

    std::vector<OutputShape> output_shapes(const ReferenceOutput& reference) const;
    // The reference's outputs for inputs the judge made (made again from their seed, where the
    // candidate had them): by the reference's own sandbox where take_references_from said so,
    // else by the judge.
    ReferenceOutput reference_outputs(CallInputs& inputs);
    CandidateSession* reference_maker_ = nullptr;
    // While the candidate is timed in rounds: what watches the reference's processes beside the
    // candidate's requests, told of the work the judge asks of them itself.
    WatchedCalls* watching_maker_ = nullptr;
    // Whether a request's inputs are made in a request pool of their own (a transient problem in
    // strict mode: handed to the sandbox where they lie).
    bool pooled() const;
    // A transient problem's reference outputs: copies of their own where they lie in a request
    // pool's memory (a reference that returns its input), on the host where the plan says so.
    // Whether the device shows the candidate's sandbox holding more than its share of the
    // plan, while the reference's (maker) ran out of memory within its own.
    bool holds_beyond_its_share(const Exchange& maker) const;
    void park_on_host(ReferenceOutput& reference) const;
    // Runs make, an allocation of the judge's for a request; should the device run out of
    // memory while the judge is within its plan, the candidate's sandbox took it: a fault of the
    // candidate's (blame_memory), never kbench's.
    template <typename Make>
    auto allocating(Make&& make) -> decltype(make()) {
        try {
            return make();
        } catch (const CudaError& e) {
            if (std::string(e.what()).find("OUT_OF_MEMORY") == std::string::npos) throw;
            blame_memory(e.what());
            throw;
        } catch (const py::error_already_set& e) {
            if (std::string(e.what()).find("OutOfMemoryError") == std::string::npos) throw;
            blame_memory("PyTorch's allocator found none for a request's inputs");
            throw;
        }
    }
    void blame_memory(const std::string& what) const;
    // Compares call `position` of the last request with the reference; the failure, if any.
    std::string check_call(std::size_t position, const CallInputs& inputs,
                           const ReferenceOutput& reference, const protocol::CallResult& claims,
                           const std::string& where, CompareResult* stats = nullptr);

    // Trials judged again at a wider precision, over one correctness phase.
    struct Arbitration {
        int trials = 0;
        int passed = 0;
        double candidate_max_abs = 0;  // against the wider reference
        double reference_max_abs = 0;  // the working-precision reference against it
        double seconds = 0;
        std::string unavailable;  // why the reference cannot be arbitrated

        json to_json(const ReferenceProblem& p) const;
    };
    // A trial whose values missed the tolerance (failure says how): the candidate's outputs
    // against the reference at the arbiter's precision. Returns the trial's failure, empty when
    // the candidate is within tolerance of it.
    std::string arbitrate(std::size_t position, const CallInputs& inputs,
                          const ReferenceOutput& reference, const std::string& where,
                          const std::string& failure, Arbitration& a);
    std::size_t memory_budget() const;
    // Each party's device memory so far, with the plan (the verdict's `memory`); null on a CPU.
    json memory_report(const CandidateSession* reference) const;
    double memory_share_ = 0;

    ReferenceProblem& p_;
    const Device& device_;
    Exchange exchange_;
    KeyedSeeds keys_;
    pid_t sandbox_pid_;
    pid_t blamed_pid_ = 0;
    timing::RequestOverhead overhead_;
    int max_batch_ = 1;
    StepTimes steps_;  // of the request under way
};

}  // namespace kbench::worker
