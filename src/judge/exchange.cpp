#include "judge/exchange.hpp"
#include "core/fields.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/syscall.h>
#include <algorithm>
#include <cerrno>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/keyed_seeds.hpp"
#include "protocol/fault.hpp"
#include "runtime/python_program.hpp"
#include "runtime/signals.hpp"

namespace kbench::worker {
namespace {

using protocol::FaultError;
using protocol::FaultKind;

int millis_until(Clock::time_point deadline) {
    if (deadline == Clock::time_point::max()) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return int(std::clamp<long long>(left.count(), 0, 1000LL * 3600));
}

double micros_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

namespace {

// The sandbox's process that serves the protocol: the body at the end of the chain its
// launcher, init (or subreaper) make, read before any code of the candidate's exists there.
long find_serving_pid(pid_t sandbox) {
    long pid = long(sandbox);
    for (int depth = 0; depth < 4; ++depth) {
        std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                               "/children");
        long child = 0, another = 0;
        if (!(children >> child) || children >> another) break;
        pid = child;
    }
    return pid;
}

}  // namespace

Exchange::Exchange(int fd, const Device& device, pid_t sandbox_pid)
    : digest_(KeyedDigest::for_device(device)),
      fd_(fd),
      device_(device),
      sandbox_pid_(sandbox_pid),
      serving_pid_(pid_t(find_serving_pid(sandbox_pid))),
      sandbox_delay_(serving_pid_),
      phase_clock_(sandbox_pid) {
    int flags = ::fcntl(fd_, F_GETFL, 0);
    ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

Exchange::~Exchange() {
    if (fd_ >= 0) ::close(fd_);
}

void Exchange::set_deadline(double seconds, const std::string& phase) {
    limit_s_ = seconds;
    phase_ = phase;
    where_.clear();
    // Stopped until the judge first sends to the sandbox or waits for it (the other sandbox's
    // requests may come first).
    phase_clock_.start(seconds);
}

void Exchange::ended(const std::string& what) {
    std::string why = phase_clock_.ended_why();
    if (!why.empty()) {
        std::string at = where_.empty() ? phase_ : phase_ + " (" + where_ + ")";
        throw FaultError(FaultKind::candidate_overran, at + ": " + why, "", where_);
    }
    throw FaultError(FaultKind::sandbox_ended, "the sandbox ended" + what, "", where_);
}

std::string Exchange::call_overran() const {
    std::string at = where_.empty() ? phase_ : phase_ + " (" + where_ + ")";
    const CallLimits& l = call_limits_;
    char text[400];
    std::snprintf(text, sizeof text,
                  " did not finish within %.1f s: a request of %zu call(s) may take %g x the "
                  "reference's %.3g ms a call, at least %g s (a first call, while it compiles, up "
                  "to %g s)",
                  call_allowance_s_, call_count_, l.factor, l.reference_s * 1e3, l.floor_s,
                  l.first_s);
    return at + text;
}

std::string Exchange::overran() const {
    std::string at = where_.empty() ? phase_ : phase_ + " (" + where_ + ")";
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", limit_s_);
    std::string text = at + " did not finish within " + limit + " s";
    if (double charged = phase_clock_.charged_s(); charged >= 0.05) {
        char part[160];
        std::snprintf(part, sizeof part,
                      " (%.1f s of it the CPU time its processes used between requests)", charged);
        text += part;
    }
    return text;
}

void Exchange::send(const json& message, const std::vector<int>& fds) {
    phase_clock_.run();
    std::string frame = sandbox::encode_frame(message);
    std::size_t done = 0;
    bool fds_sent = fds.empty();
    while (done < frame.size()) {
        ssize_t n = sandbox::send_frame_part(fd_, frame, done, fds_sent ? std::vector<int>{} : fds);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd_, POLLOUT, 0};
            int ready = ::poll(&p, 1, millis_until(phase_clock_.deadline()));
            if (ready == 0)
                throw FaultError(FaultKind::candidate_overran,
                                 overran() + " (the sandbox stopped reading)", "", where_);
            continue;
        }
        if (n < 0) ended(" (" + std::string(std::strerror(errno)) + ")");
        fds_sent = true;
        done += std::size_t(n);
    }
}

json Exchange::receive() {
    phase_clock_.run();
    for (;;) {
        try {
            if (auto body = reader_.next()) {
                phase_clock_.stop();  // the judge's own work from here on
                return *body;
            }
        } catch (const ProtocolError& e) {
            throw FaultError(
                FaultKind::protocol_violation,
                "protocol violation: the sandbox sent a reply that is not kbench's protocol: " +
                    std::string(e.what()),
                "protocol_violation", where_);
        }
        pollfd p{fd_, POLLIN, 0};
        int ready = ::poll(&p, 1, millis_until(std::min(phase_clock_.deadline(), call_deadline_)));
        if (ready < 0 && errno == EINTR) {
            check_signals(sandbox_pid_);
            continue;
        }
        if (ready == 0) {
            auto now = Clock::now();
            if (now >= phase_clock_.deadline())
                throw FaultError(FaultKind::candidate_overran, overran(), "", where_);
            // A first call that is still compiling is looked at again in a second.
            if (now < first_call_until_ && call_limits_.compiling && call_limits_.compiling()) {
                call_deadline_ = std::min(first_call_until_, now + std::chrono::seconds(1));
                continue;
            }
            throw FaultError(FaultKind::candidate_overran, call_overran(), "", where_);
        }
        char buffer[1 << 16];
        ssize_t n = 0;
        if (accept_fds_) {
            // Descriptors ride on this reply (exported outputs): taken, and closed unless used.
            n = sandbox::receive_some(fd_, buffer, sizeof buffer, received_fds_, &fds_truncated_);
        } else {
            // Descriptors a sandbox sends unasked are dropped by the kernel with the read.
            n = ::read(fd_, buffer, sizeof buffer);
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) ended("");
        reader_.feed(buffer, std::size_t(n));
    }
}

protocol::SandboxHello Exchange::hello() {
    json message = receive();
    try {
        return protocol::SandboxHello::from_json(message);
    } catch (const ProtocolError& e) {
        throw FaultError(FaultKind::protocol_violation,
                         "protocol violation: the sandbox's first message is not its hello: " +
                             std::string(e.what()),
                         "protocol_violation", where_);
    }
}

void Exchange::refuse_early_data() {
    if (reader_.has_partial())
        throw FaultError(FaultKind::protocol_violation,
                         "protocol violation: the sandbox sent a message it was not asked for",
                         "protocol_violation", where_);
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    char byte;
    ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK);
    if (n == 0) ended("");
    if (n > 0)
        throw FaultError(FaultKind::protocol_violation,
                         "protocol violation: the sandbox sent a message before it was asked (a "
                         "reply made up ahead of its request)",
                         "protocol_violation", where_);
}

std::uint64_t Exchange::add_slot(const std::shared_ptr<SharedBuffer>& buffer,
                                 protocol::CallBatch& batch, std::vector<int>& fds) {
    std::uint64_t id = next_slot_++;
    batch.new_slots.push_back({id, buffer->describe(std::int64_t(fds.size()))});
    fds.push_back(buffer->fd());
    return id;
}

void Exchange::ensure_outputs(Position& pos, const std::vector<OutputShape>& shapes,
                              protocol::CallBatch& batch, std::vector<int>& fds) {
    // Transient: every request's outputs get buffers of their own (the sandbox drops its
    // mappings of the last ones after its reply).
    bool same = !transient_ && pos.output_views.size() == shapes.size();
    for (std::size_t i = 0; same && i < shapes.size(); ++i)
        same = to_vector(pos.output_views[i].sizes()) == shapes[i].sizes &&
               pos.output_views[i].scalar_type() == shapes[i].dtype;
    if (same) return;
    if (!transient_)
        for (std::uint64_t id : pos.output_ids) retired_.push_back(id);
    pos.output_ids.clear();
    pos.output_buffers.clear();
    pos.output_views.clear();
    pos.taken = {&digest_, {}};
    pos.unchecked = false;
    for (const OutputShape& shape : shapes) {
        auto strides = row_major_strides(shape.sizes);
        auto buffer =
            SharedBuffer::allocate(storage_bytes(shape.sizes, strides, shape.dtype), device_);
        pos.output_views.push_back(buffer->view(shape.sizes, strides, shape.dtype));
        pos.taken.digests.push_back(0);
        pos.output_ids.push_back(add_slot(buffer, batch, fds));
        pos.output_buffers.push_back(buffer);
    }
}

protocol::CallSpec Exchange::hand_over(Position& pos, const CallInputs& inputs,
                                       protocol::CallBatch& batch, std::vector<int>& fds) {
    protocol::CallSpec spec;
    pos.input_views.assign(inputs.tensors.size(), at::Tensor());
    pos.inputs_handed.assign(inputs.tensors.size(), std::nullopt);
    pos.inputs_at_reply.assign(inputs.tensors.size(), std::nullopt);
    if (transient_) pos.input_buffers.assign(inputs.tensors.size(), nullptr);
    if (pos.input_buffers.size() < inputs.tensors.size()) {
        pos.input_buffers.resize(inputs.tensors.size());
        pos.input_ids.resize(inputs.tensors.size());
    }
    for (std::size_t j = 0; j < inputs.values.size(); ++j) {
        protocol::Argument arg;
        const at::Tensor& source = inputs.tensors[j];
        if (!source.defined()) {
            arg.value = value_to_json(inputs.values[j]);
            spec.args.push_back(arg);
            continue;
        }
        at::Tensor layout = source.is_non_overlapping_and_dense() ? source : source.contiguous();
        std::size_t bytes = storage_bytes(layout.sizes(), layout.strides(), layout.scalar_type());
        std::uint64_t id = 0;
        std::shared_ptr<SharedBuffer> buffer;
        if (transient_) {
            // Inputs made in a request pool are handed over where they lie; others are copied
            // into a buffer of this request's. Either way before the clock starts: no sandbox
            // has them before its request.
            std::size_t offset = 0;
            auto segment =
                layout.is_same(source) ? SharedBuffer::segment_of(source, offset) : nullptr;
            at::Tensor view = source;
            if (segment) {
                auto known = request_segments_.find(segment->fd());
                id = known != request_segments_.end() ? known->second
                                                      : add_slot(segment, batch, fds);
                request_segments_[segment->fd()] = id;
            } else {
                buffer = SharedBuffer::allocate(bytes, device_);
                id = add_slot(buffer, batch, fds);
                pos.input_buffers[j] = buffer;
                view = buffer->view(layout.sizes(), layout.strides(), layout.scalar_type());
                exact_copy(view, source);
            }
            pos.input_views[j] = view;
            pos.inputs_handed[j] = digest_.of(view);
            arg.is_tensor = true;
            arg.tensor = tensor_ref(id, view, offset);
            spec.args.push_back(arg);
            continue;
        }
        if (device_.is_cuda()) {
            // Reused: written only after the clock has started (see run).
            buffer = pos.input_buffers[j];
            if (!buffer || buffer->nbytes() < bytes) {
                if (buffer) retired_.push_back(pos.input_ids[j]);
                buffer = SharedBuffer::allocate(bytes, device_);
                pos.input_buffers[j] = buffer;
                pos.input_ids[j] = add_slot(buffer, batch, fds);
            }
            id = pos.input_ids[j];
        } else {
            // A memfd of its own, filled now: the sandbox gets it with the request.
            buffer = SharedBuffer::allocate(bytes, device_);
            id = add_slot(buffer, batch, fds);
            retired_.push_back(id);
            cpu_inputs_.push_back(buffer);
        }
        at::Tensor view = buffer->view(layout.sizes(), layout.strides(), layout.scalar_type());
        if (!device_.is_cuda()) plain_copy(view, source);
        pos.input_views[j] = view;
        arg.is_tensor = true;
        arg.tensor = tensor_ref(id, view);
        spec.args.push_back(arg);
    }
    for (std::size_t i = 0; i < pos.output_views.size(); ++i)
        spec.outputs.push_back(tensor_ref(pos.output_ids[i], pos.output_views[i]));
    return spec;
}

void Exchange::check_precision(const json& reported) {
    // The first reply (a null request, before the candidate is imported) sets what every later
    // one must report: the flags the policy left in this sandbox.
    if (expected_precision_.is_null()) {
        expected_precision_ = reported;
        return;
    }
    if (reported == expected_precision_) return;
    // TF32, the float32 matmul precision and oneDNN's float32 precision decide how float32 is
    // computed: changing them is refused in strict mode. The rest is named: reduced-precision
    // reductions and fp16 accumulation touch half-precision matmuls only, and cuDNN's benchmark
    // and deterministic settings choose among float32 algorithms (many candidates set them).
    auto enforced = [](const std::string& name) {
        return name.rfind("tf32_", 0) == 0 || name == "float32_matmul_precision" ||
               name == "onednn_float32";
    };
    auto cudnn = [](const std::string& name) { return name.rfind("cudnn_", 0) == 0; };
    std::string changed;
    bool numerics = false, any_precision = false;
    std::set<std::string> names;
    for (const auto& [name, value] : expected_precision_.items()) names.insert(name);
    for (const auto& [name, value] : reported.items()) names.insert(name);
    for (const std::string& name : names) {
        json want = expected_precision_.contains(name) ? expected_precision_.at(name) : json();
        json got = reported.contains(name) ? reported.at(name) : json();
        if (got == want) continue;
        if (!changed.empty()) changed += ", ";
        changed += name + " " + dump_text(got) + " (was " + dump_text(want) + ")";
        numerics = numerics || enforced(name) || (!cudnn(name) && want.is_null());
        any_precision = any_precision || !cudnn(name);
    }
    std::string detail = "the candidate changed PyTorch's precision flags: " + changed;
    if (numerics && enforce_precision_)
        throw FaultError(FaultKind::integrity,
                         detail +
                             "; strict mode computes fp32 at full precision (use --tf32 on "
                             "to evaluate under TF32, at its tolerance)",
                         "precision_changed", where_);
    if (precision_change_.empty()) {
        precision_change_ =
            any_precision ? detail : "the candidate changed cuDNN's settings: " + changed;
        precision_change_rule_ = any_precision ? "precision_changed" : "cudnn_settings_changed";
    }
}

void Exchange::check_outputs_unchanged() {
    for (std::size_t p = 0; p < positions_.size(); ++p) {
        Position& pos = positions_[p];
        if (!pos.unchecked) continue;
        pos.unchecked = false;
        for (std::size_t i = 0; i < pos.output_views.size(); ++i) {
            if (digest_.of(pos.output_views[i]) == pos.taken.digests[i]) continue;
            throw FaultError(FaultKind::integrity,
                             "output " + std::to_string(i) +
                                 " changed after the sandbox had replied: the candidate's work "
                                 "went on after its call returned",
                             "output_written_after_reply", where_);
        }
    }
}

Exchange::Outcome Exchange::run(const std::vector<Call>& calls, bool timed, bool poison_allocator,
                                bool null_model, const std::vector<std::string>& knockout) {
    check_outputs_unchanged();
    refuse_early_data();
    if (!flush_.defined()) {
        std::size_t bytes = flush_bytes_ ? flush_bytes_ : 2 * device_.cache_bytes();
        flush_ = at::empty({std::int64_t(std::max<std::size_t>(bytes, 1))},
                           at::TensorOptions().dtype(at::kByte).device(device_.torch_device()));
    }
    cpu_inputs_.clear();  // the last request's memfds: the sandbox was told to drop them
    request_segments_.clear();
    protocol::CallBatch batch;
    batch.transient = transient_;
    // Unpredictable, so that no reply can be written before its request exists.
    std::string random = random_bytes(8);
    std::memcpy(&batch.nonce, random.data(), sizeof batch.nonce);
    batch.nonce >>= 1;
    ++nonce_;
    batch.timed = timed;
    batch.poison = poison_allocator;
    batch.null_model = null_model;
    batch.knockout = knockout;
    batch.drop_slots = std::move(retired_);
    retired_.clear();
    std::vector<int> fds;
    if (positions_.size() < calls.size()) positions_.resize(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
        Position& pos = positions_[i];
        ensure_outputs(pos, calls[i].outputs, batch, fds);
        for (at::Tensor& out : pos.output_views) poison(out);
        batch.calls.push_back(hand_over(pos, *calls[i].inputs, batch, fds));
    }
    // On a CPU the inputs are in memfds nobody else has yet: the cache is flushed of them now.
    if (timed && !device_.is_cuda())
        std::memset(flush_.data_ptr(), int(nonce_ & 0xff), std::size_t(flush_.nbytes()));
    device_.synchronize();

    // The clock starts before the inputs reach anything the sandbox can see. On a GPU they are
    // copied into the shared buffers now, and the cache flushed after.
    auto t0 = Clock::now();
    std::uint64_t waited0 = run_delay_.now_ns();
    std::uint64_t sandbox_waited0 = sandbox_delay_.now_ns();
    if (device_.is_cuda()) {
        // A transient request's inputs are in place already.
        if (!transient_)
            for (std::size_t i = 0; i < calls.size(); ++i)
                for (std::size_t j = 0; j < positions_[i].input_views.size(); ++j)
                    if (positions_[i].input_views[j].defined())
                        exact_copy(positions_[i].input_views[j], calls[i].inputs->tensors[j]);
        if (timed) flush_.fill_(std::uint8_t(nonce_ & 0xff));
    }
    device_.synchronize();
    const CallLimits& l = call_limits_;
    if (!null_model && l.factor > 0 && l.reference_s > 0) {
        call_count_ = calls.size();
        call_allowance_s_ = std::max(l.floor_s, l.factor * l.reference_s * double(calls.size()));
        auto now = Clock::now();
        call_deadline_ = now + std::chrono::milliseconds(long(call_allowance_s_ * 1000));
        first_call_until_ = model_called_
                                ? Clock::time_point::min()
                                : now + std::chrono::milliseconds(
                                            long(std::max(l.first_s, call_allowance_s_) * 1000));
    }
    // Read before the request goes out: once it is written the sandbox works, and the judge
    // may wait for a CPU from within the write on (the woken sandbox takes its core).
    std::uint64_t sent_waited = run_delay_.now_ns();
    send(protocol::request_json(batch), fds);
    Outcome outcome;
    outcome.done = decode<protocol::CallsDone>(receive());
    // The outputs' digests below wait for whatever the sandbox left running on the device: the
    // phase's clock runs on until they are taken.
    phase_clock_.run();
    call_deadline_ = Clock::time_point::max();
    if (!null_model) model_called_ = true;
    // The outputs are the judge's once it has their keyed digests: only then does the clock
    // stop. Comparisons check what they read against them, so what the sandbox writes into the
    // shared buffers later is caught, never compared.
    auto read0 = Clock::now();
    std::uint64_t read_waited0 = run_delay_.now_ns();
    std::uint64_t sandbox_waited1 = sandbox_delay_.now_ns();
    for (std::size_t i = 0; i < calls.size(); ++i) {
        Position& pos = positions_[i];
        for (std::size_t k = 0; k < pos.output_views.size(); ++k)
            pos.taken.digests[k] = digest_.of(pos.output_views[k]);
        pos.unchecked = true;
        // A transient request's inputs are the judge's own: what the candidate did to them is
        // read now, before work of its still running could undo it.
        for (std::size_t j = 0; j < pos.inputs_handed.size(); ++j)
            if (pos.inputs_handed[j]) pos.inputs_at_reply[j] = digest_.of(pos.input_views[j]);
    }
    device_.synchronize();
    auto t1 = Clock::now();
    phase_clock_.stop(t1);
    std::uint64_t waited1 = run_delay_.now_ns();
    // Only the judge's waits in its own stretches, before the request is sent and from the
    // reply on: from the write to the reply the sandbox works, and a wait of the judge's there
    // overlaps the calls. (Work of the candidate's beside the reading cannot hide in the waits
    // taken out of it: on a CPU its outputs are checked against what the sandbox copied, on a GPU
    // the reading is device work and no waits of the host's are taken out.)
    auto delta = [](std::uint64_t a, std::uint64_t b) {
        return b > a ? double(b - a) / 1000.0 : 0.0;
    };
    outcome.judge_waited_us = delta(waited0, sent_waited) + delta(read_waited0, waited1);
    outcome.judge_waited_all_us = delta(waited0, waited1);
    outcome.wall_us = std::max(0.0, micros_between(t0, t1) - outcome.judge_waited_us);
    outcome.sandbox_waited_us = delta(sandbox_waited0, sandbox_waited1);
    // On a CPU the reading is the judge's threads' work: measured. On a GPU it is device work
    // queued behind whatever the candidate left running, which must count against it: it stays
    // in the protocol's measured cost.
    if (!device_.is_cuda())
        outcome.judge_work_us =
            std::max(0.0, micros_between(read0, t1) - delta(read_waited0, waited1));
    if (outcome.done.nonce != batch.nonce)
        throw FaultError(
            FaultKind::protocol_violation,
            "protocol violation: the sandbox's reply answers another request (its nonce is "
            "wrong)",
            "protocol_violation", where_);
    check_precision(outcome.done.precision);
    for (const auto& result : outcome.done.results)
        for (std::size_t k = 0; k < result.outputs.size(); ++k)
            if (result.outputs[k].in_kbench_buffer)
                throw FaultError(FaultKind::integrity,
                                 "output " + std::to_string(k) +
                                     " lies in kbench's own shared memory (a buffer of the "
                                     "judge's that is not one of the call's inputs): return a "
                                     "tensor of the candidate's own",
                                 "output_in_kbench_buffer", where_);
    sandbox_peak_bytes_ = std::max(sandbox_peak_bytes_, outcome.done.peak_bytes);
    device_peak_bytes_ = std::max<std::uint64_t>(device_peak_bytes_, device_.used_bytes());
    if (outcome.done.results.size() != calls.size())
        throw FaultError(FaultKind::protocol_violation,
                         "protocol violation: the sandbox answered " +
                             std::to_string(outcome.done.results.size()) + " calls of " +
                             std::to_string(calls.size()),
                         "protocol_violation", where_);
    // On a CPU the sandbox says what it copied into each output; anything else read here was
    // written after that, by work still going on after the call returned.
    if (!device_.is_cuda())
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const auto& reported = outcome.done.results[i].outputs;
            const auto& views = positions_[i].output_views;
            for (std::size_t k = 0; k < std::min(reported.size(), views.size()); ++k)
                if (reported[k].copied && reported[k].digest != digest(views[k]))
                    throw FaultError(FaultKind::integrity,
                                     "output " + std::to_string(k) +
                                         " changed between the sandbox's copy and the judge's "
                                         "read: the candidate's work went on after its call "
                                         "returned",
                                     "output_written_after_reply", where_);
        }
    if (!null_model) {
        // The whole span, the judge's own waits included: the sandbox's windows lie inside it.
        model_calls_.calls += calls.size();
        model_calls_.wall_us += outcome.wall_us + outcome.judge_waited_us;
    }
    return outcome;
}

std::optional<std::vector<at::Tensor>> Exchange::exported_call(const CallInputs& inputs) {
    refuse_early_data();
    request_segments_.clear();
    protocol::CallBatch batch;
    batch.transient = true;
    batch.export_outputs = true;
    std::string random = random_bytes(8);
    std::memcpy(&batch.nonce, random.data(), sizeof batch.nonce);
    batch.nonce >>= 1;
    ++nonce_;
    batch.drop_slots = std::move(retired_);
    retired_.clear();
    std::vector<int> fds;
    Position pos;  // the request's own: the timed requests' positions stay as they are
    {
        // Handed over as a transient request's are, also where this sandbox's other requests
        // keep their buffers (calls under kTransientBytes): buffers of this request's own.
        bool kept = std::exchange(transient_, true);
        try {
            batch.calls.push_back(hand_over(pos, inputs, batch, fds));
        } catch (...) {
            transient_ = kept;
            throw;
        }
        transient_ = kept;
    }
    device_.synchronize();
    auto t0 = Clock::now();
    send(protocol::request_json(batch), fds);
    struct Received {
        std::vector<int>& fds;
        ~Received() {
            for (int fd : fds)
                if (fd >= 0) ::close(fd);
            fds.clear();
        }
    } received{received_fds_};
    accept_fds_ = true;
    fds_truncated_ = false;
    json reply;
    try {
        reply = receive();
    } catch (...) {
        accept_fds_ = false;
        throw;
    }
    accept_fds_ = false;
    auto done = decode<protocol::CallsDone>(reply);
    request_segments_.clear();
    if (done.nonce != batch.nonce || done.results.size() != 1)
        throw FaultError(FaultKind::harness, "the reference's own sandbox answered another request",
                         "", where_);
    ++model_calls_.calls;
    model_calls_.wall_us += micros_between(t0, Clock::now());
    if (fds_truncated_)
        throw FaultError(FaultKind::harness,
                         "the reference's own sandbox sent more descriptors than a reply holds", "",
                         where_);
    check_precision(done.precision);
    sandbox_peak_bytes_ = std::max(sandbox_peak_bytes_, done.peak_bytes);
    device_peak_bytes_ = std::max<std::uint64_t>(device_peak_bytes_, device_.used_bytes());
    for (std::size_t j = 0; j < pos.inputs_handed.size(); ++j)
        if (pos.inputs_handed[j] && digest_.of(pos.input_views[j]) != *pos.inputs_handed[j])
            throw FaultError(FaultKind::harness,
                             "the reference changed input " + std::to_string(j) +
                                 " in its own sandbox, which it did not in the judge",
                             "reference_changed_input", where_);
    std::vector<at::Tensor> outputs;
    for (const protocol::OutputReport& o : done.results[0].outputs) {
        if (!o.is_tensor || !o.exported) return std::nullopt;  // the judge makes it itself
        if (o.exported->kind != "cuda_fd")
            throw FaultError(FaultKind::harness,
                             "the reference's own sandbox exported an output that is not device "
                             "memory",
                             "", where_);
        auto index = std::size_t(o.exported->fd_index);
        if (o.exported->fd_index < 0 || index >= received_fds_.size() || received_fds_[index] < 0)
            throw FaultError(FaultKind::harness,
                             "the reference's own sandbox sent an output without its descriptor",
                             "", where_);
        int fd = std::exchange(received_fds_[index], -1);
        auto mapped = std::make_shared<MappedBuffer>(*o.exported, fd, device_);
        at::Tensor view =
            mapped->view({0, o.exported_offset, o.shape, row_major_strides(o.shape), o.dtype});
        // The tensor keeps the mapping: the sandbox lets go of the memory with its next request.
        outputs.push_back(at::from_blob(
            view.data_ptr(), view.sizes(), view.strides(), [mapped](void*) {}, view.options()));
    }
    return outputs;
}

const std::vector<at::Tensor>& Exchange::outputs(std::size_t position) const {
    return positions_.at(position).output_views;
}

const TakenReply& Exchange::taken(std::size_t position) const {
    return positions_.at(position).taken;
}

std::vector<at::Tensor> Exchange::inputs_now(std::size_t position) const {
    return positions_.at(position).input_views;
}

std::optional<std::string> Exchange::changed_input(std::size_t position,
                                                   const std::vector<at::Tensor>& pristine,
                                                   const std::vector<bool>& reference_modifies,
                                                   const std::string& where) const {
    const Position& pos = positions_.at(position);
    bool digested = false;
    for (const auto& d : pos.inputs_handed) digested = digested || d.has_value();
    if (!digested)
        return check_inputs_unchanged(pristine, pos.input_views, reference_modifies, where);
    for (std::size_t j = 0; j < pos.inputs_handed.size(); ++j) {
        if (!pos.inputs_handed[j] || (j < reference_modifies.size() && reference_modifies[j]))
            continue;
        if (pos.inputs_handed[j] == pos.inputs_at_reply[j]) continue;
        return where + ": the candidate modified input " + std::to_string(j) +
               "; the reference leaves it unchanged, so the candidate must too";
    }
    return std::nullopt;
}

void Exchange::drop_inputs() {
    for (Position& pos : positions_) {
        pos.input_buffers.clear();
        pos.input_views.clear();
    }
}

void Exchange::release_request() {
    if (!transient_) return;
    // Bytes written into the outputs since the reply (work of the candidate's still running)
    // are caught here, as the next request catches them where buffers are kept.
    check_outputs_unchanged();
    device_.synchronize();
    for (Position& pos : positions_) {
        pos.output_ids.clear();
        pos.output_buffers.clear();
        // Copies moved to the host (outputs_to_host) stay until the next request.
        if (!pos.output_views.empty() && pos.output_views.front().is_cuda())
            pos.output_views.clear();
        pos.input_ids.clear();
        pos.input_buffers.clear();
        pos.input_views.clear();
        pos.unchecked = false;
    }
    request_segments_.clear();
    // What the request's checks held (inputs made again, the reference's call) goes back to
    // the device, not to the judge's cache, before the next request's buffers are made.
    empty_device_cache();
}

void Exchange::outputs_to_host(std::size_t position) {
    Position& pos = positions_.at(position);
    for (at::Tensor& view : pos.output_views) view = pinned_host_copy(view);
    pos.output_buffers.clear();
    pos.output_ids.clear();
    // The comparison reads the copies against the reply's digests.
    pos.unchecked = false;
}

void Exchange::send_exit() {
    try {
        send(protocol::request_json(protocol::ExitRequest{}), {});
    } catch (...) {
    }
}

}  // namespace kbench::worker
