#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "judge/compare.hpp"
#include "judge/reference_problem.hpp"
#include "judge/sandbox_clock.hpp"
#include "protocol/framing.hpp"
#include "protocol/judge_messages.hpp"
#include "protocol/sandbox_messages.hpp"
#include "runtime/device.hpp"
#include "runtime/shared_tensor.hpp"
#include "timing/run_delay.hpp"

namespace kbench::worker {

using Clock = std::chrono::steady_clock;

// The judge's side of one sandbox. Inputs are the judge's until a request hands them over: on a
// CPU each call's inputs are in memfds of their own that the sandbox cannot see before the
// request carries their descriptors; on a GPU they are copied into the shared buffers after the
// judge's clock has started, by a kernel (GPU contexts take turns, so nothing of the sandbox's
// runs beside it). Outputs are taken when the reply comes: the clock stops only once the judge
// has a keyed digest of each (KeyedDigest), where they lie. Whatever reads them later (the
// comparison) reads each chunk once into memory of its own and checks it against that digest,
// and before the next request the shared buffers must still hold those bytes: work done after
// the reply is caught, and the judge keeps no copy of a reply.
class Exchange {
  public:
    // Takes the socket; signals from sandbox_pid's process tree are the candidate's.
    Exchange(int fd, const Device& device, pid_t sandbox_pid);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // How long the sandbox may take in the phase, and what to call the phase in a timeout's
    // message. The phase's clock runs while the judge sends to this sandbox or waits for it,
    // and stops from each reply to the next request: the judge's own work (making inputs, the
    // reference's outputs, comparisons, arbitration, the other sandbox's requests) is not this
    // sandbox's.
    void set_deadline(double seconds, const std::string& phase);

    // Deadlines scaled to the problem: a request of model calls (null ones aside) may take
    // factor x reference_s for each call, and at least floor_s; the sandbox's first such request
    // may go on, while compiling() says it is compiling, up to first_s. The phase's deadline
    // bounds them all; factor or reference_s 0: the phase's deadline alone.
    struct CallLimits {
        double factor = 0;
        double floor_s = 0;
        double first_s = 0;
        double reference_s = 0;  // the reference's own time for one call
        std::function<bool()> compiling;
    };
    void set_call_limits(CallLimits limits) { call_limits_ = std::move(limits); }
    // Bytes the judge writes to flush the cache before a timed request (0: twice the cache).
    void set_flush_bytes(std::size_t bytes) {
        flush_bytes_ = bytes;
        flush_ = at::Tensor();
    }
    // Where within the phase the next requests are ("trial 2"), for faults' messages.
    void set_where(const std::string& where) { where_ = where; }
    const std::string& where() const { return where_; }

    protocol::SandboxHello hello();

    // One request and its typed reply; faults the sandbox reports come back as FaultError
    // (only the candidate's own kinds: a sandbox cannot claim that kbench failed).
    template <typename Reply, typename Request>
    Reply request(const Request& r, const std::vector<int>& fds = {}) {
        send(protocol::request_json(r), fds);
        return decode<Reply>(receive());
    }

    struct Call {
        const CallInputs* inputs = nullptr;
        std::vector<OutputShape> outputs;
    };
    struct Outcome {
        // From before the inputs were handed over to the outputs' capture, less the time the
        // judge itself waited for a CPU meanwhile.
        double wall_us = 0;
        double judge_waited_us = 0;      // taken out of wall_us: in the judge's own stretches
        double judge_waited_all_us = 0;  // in the whole span
        // Within wall_us: the judge's own reading of the outputs (their keyed digests), which
        // grows with the outputs and with the machine's load, less its waits; measured each time.
        double judge_work_us = 0;
        // The sandbox's main thread's time runnable but waiting for a CPU, in the span: what a
        // busy machine did to it (the kernel's count).
        double sandbox_waited_us = 0;
        protocol::CallsDone done;
    };
    // Calls back to back in one request. timed: the judge flushes the cache before the first and
    // the sandbox between the others. null_model: the sandbox leaves out the model call.
    // knockout: the candidate's kernels replaced by an empty one in these calls (CallBatch).
    Outcome run(const std::vector<Call>& calls, bool timed, bool poison_allocator, bool null_model,
                const std::vector<std::string>& knockout = {});

    // A call's outputs where the sandbox wrote them (it can still write there: read them
    // through compare_values with taken(position)), and its inputs as they are now.
    const std::vector<at::Tensor>& outputs(std::size_t position) const;
    const TakenReply& taken(std::size_t position) const;
    std::vector<at::Tensor> inputs_now(std::size_t position) const;

    // Transient requests (a problem whose calls hold 64 MiB or more, on a GPU): each request's
    // buffers are its own. Inputs made in a RequestPool are handed over where they lie, others
    // are copied into buffers of their own, before the clock starts: no sandbox has them
    // before its request. Outputs get buffers of their own. The sandbox drops its mappings
    // after its reply; the judge drops its own with release_request(), once the request's
    // checks are done, so one request's memory exists at a time.
    void set_transient(bool on) { transient_ = on; }
    // The sandbox's process that serves the protocol (its body), as the judge sees it.
    pid_t serving_pid() const { return serving_pid_; }
    bool transient() const { return transient_; }
    void release_request();
    // One untimed call by the reference's own sandbox (transient, a GPU), whose outputs stay in
    // the sandbox's memory, mapped here: the reference's outputs, not held in the judge's
    // share. The inputs are handed over as for a transient request and must come back
    // unchanged. Null where an output is not a tensor the sandbox could export.
    std::optional<std::vector<at::Tensor>> exported_call(const CallInputs& inputs);
    // Lets go of the request's inputs (a request pool's memory goes when its CallInputs does).
    void drop_inputs();
    // A transient request's outputs moved to the host (pinned) and their device buffers
    // released: the comparison checks the copies against the reply's digests.
    void outputs_to_host(std::size_t position);
    // Whether the sandbox changed an input it was given (strict mode): against pristine
    // copies, or, where the judge's inputs are the very memory the sandbox got (a transient
    // request's), against their keyed digests when handed over, taken again at the reply.
    std::optional<std::string> changed_input(std::size_t position,
                                             const std::vector<at::Tensor>& pristine,
                                             const std::vector<bool>& reference_modifies,
                                             const std::string& where) const;

    // Throws an integrity fault if an output buffer no longer holds what it held when the reply
    // came.
    void check_outputs_unchanged();

    // Every reply reports the sandbox's precision flags; those of the first (a null request,
    // before the candidate is imported) are what the others must report. expected: the flags
    // to hold the first reply to as well (null: none). enforce: a reply that changed TF32, the
    // float32 matmul precision or oneDNN's float32 precision is an integrity fault (rule
    // precision_changed);
    // otherwise the first difference is kept for precision_change(), under the rule
    // precision_change_rule(). cuDNN's benchmark and deterministic settings are never enforced:
    // they choose among float32 algorithms (rule cudnn_settings_changed, a warning).
    void expect_precision(json flags, bool enforce) {
        expected_precision_ = std::move(flags);
        enforce_precision_ = enforce;
    }
    const std::string& precision_change() const { return precision_change_; }
    const std::string& precision_change_rule() const { return precision_change_rule_; }

    void send_exit();

    // Device memory seen at the replies so far: the most the sandbox said its allocator held (a
    // claim), and the most the whole device had in use (the judge's own reading).
    std::uint64_t sandbox_peak_bytes() const { return sandbox_peak_bytes_; }
    std::uint64_t device_peak_bytes() const { return device_peak_bytes_; }

    // The model calls (null ones left out) run since the last time this was asked, and the
    // judge's clock across their requests: what the sandbox's kernel records must agree with.
    struct ModelCalls {
        std::uint64_t calls = 0;
        double wall_us = 0;
    };
    ModelCalls take_model_calls() {
        ModelCalls out = model_calls_;
        model_calls_ = {};
        return out;
    }

  private:
    std::string call_overran() const;

    ModelCalls model_calls_;
    const KeyedDigest& digest_;
    std::uint64_t sandbox_peak_bytes_ = 0;
    std::uint64_t device_peak_bytes_ = 0;
    CallLimits call_limits_;
    bool model_called_ = false;
    Clock::time_point call_deadline_ = Clock::time_point::max();
    Clock::time_point first_call_until_ = Clock::time_point::min();
    double call_allowance_s_ = 0;
    std::size_t call_count_ = 0;
    struct Position {
        std::vector<std::uint64_t> output_ids;
        std::vector<std::shared_ptr<SharedBuffer>> output_buffers;
        std::vector<at::Tensor> output_views;
        TakenReply taken;                      // digests of the outputs at the last reply
        bool unchecked = false;                // taken, and not yet checked again
        std::vector<std::uint64_t> input_ids;  // GPU: buffers reused request after request
        std::vector<std::shared_ptr<SharedBuffer>> input_buffers;
        std::vector<at::Tensor> input_views;  // as the sandbox sees them, this request
        // Transient: keyed digests of the inputs when handed over and at the reply (0: none).
        std::vector<std::optional<std::uint64_t>> inputs_handed, inputs_at_reply;
    };
    bool transient_ = false;
    std::map<int, std::uint64_t> request_segments_;  // transient: pool segments' slots, by fd

    void send(const json& message, const std::vector<int>& fds);
    json receive();
    void check_precision(const json& reported);
    json expected_precision_;
    bool enforce_precision_ = false;
    std::string precision_change_;
    std::string precision_change_rule_;
    timing::RunDelay run_delay_;
    template <typename Reply>
    Reply decode(const json& message) {
        protocol::Reply<Reply> reply;
        try {
            reply = protocol::read_reply<Reply>(message, "sandbox reply");
        } catch (const ProtocolError& e) {
            throw protocol::FaultError(
                protocol::FaultKind::protocol_violation,
                "protocol violation: the sandbox's reply breaks kbench's protocol: " +
                    std::string(e.what()),
                "protocol_violation");
        }
        if (reply.ok()) return *reply.value;
        const protocol::Fault& f = *reply.fault;
        // A sandbox may only report faults of its own; anything else it says is the candidate's.
        bool own = f.kind == protocol::FaultKind::candidate_load ||
                   f.kind == protocol::FaultKind::candidate_build ||
                   f.kind == protocol::FaultKind::candidate_raised;
        // The sandbox's one word on where: a load that failed at import (KernelBench counts it
        // as not compiled; a forged word changes nothing but that).
        bool at_import = f.kind == protocol::FaultKind::candidate_load && f.where == "import";
        throw protocol::FaultError(own ? f.kind : protocol::FaultKind::candidate_raised, f.message,
                                   "", at_import && where_.empty() ? "import" : where_);
    }
    void ensure_outputs(Position& pos, const std::vector<OutputShape>& shapes,
                        protocol::CallBatch& batch, std::vector<int>& fds);
    protocol::CallSpec hand_over(Position& pos, const CallInputs& inputs,
                                 protocol::CallBatch& batch, std::vector<int>& fds);
    std::uint64_t add_slot(const std::shared_ptr<SharedBuffer>& buffer, protocol::CallBatch& batch,
                           std::vector<int>& fds);
    void refuse_early_data();
    [[noreturn]] void ended(const std::string& what);
    std::string overran() const;

    int fd_;
    const Device& device_;
    pid_t sandbox_pid_;
    pid_t serving_pid_;               // the sandbox's process that serves the protocol
    timing::RunDelay sandbox_delay_;  // its main thread's
    sandbox::FrameReader reader_;
    SandboxClock phase_clock_;
    double limit_s_ = 0;
    std::string phase_ = "the call";
    std::string where_;
    std::uint64_t next_slot_ = 1;
    std::uint64_t nonce_ = 0;
    std::vector<Position> positions_;
    bool accept_fds_ = false;     // exported_call: the reply carries descriptors
    bool fds_truncated_ = false;  // some did not fit the reply's control buffer
    std::vector<int> received_fds_;
    std::vector<std::uint64_t> retired_;                     // slots to drop with the next request
    std::vector<std::shared_ptr<SharedBuffer>> cpu_inputs_;  // this request's memfds
    at::Tensor flush_;  // written before timed requests: the cache holds nothing of theirs
    std::size_t flush_bytes_ = 0;
};

}  // namespace kbench::worker
