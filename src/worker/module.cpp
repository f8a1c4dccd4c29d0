// The kbench worker extension module: judge, zygote and sandbox live here; their Python entry
// point (python -m kbench_worker ROLE FD DEVICE) only calls main().
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <optional>

#include "judge/compare.hpp"
#include "judge/judge.hpp"
#include "protocol/fault.hpp"
#include "protocol/framing.hpp"
#include "runtime/device.hpp"
#include "runtime/python_program.hpp"
#include "runtime/torch_common.hpp"
#include "zygote/zygote.hpp"

namespace kbench::worker {
namespace {

constexpr std::array kCrashSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction previous_actions[kCrashSignals.size()];

// Writes the native stack to stderr (the worker's log), then hands the signal to the handler
// that was there before (Python's fault handler, which adds the Python stack).
void native_crash_trace(int signal) {
    static const char header[] = "kbench worker: fatal signal, native stack:\n";
    (void)!write(STDERR_FILENO, header, sizeof header - 1);
    void* frames[64];
    int count = backtrace(frames, 64);
    backtrace_symbols_fd(frames, count, STDERR_FILENO);
    for (std::size_t i = 0; i < kCrashSignals.size(); ++i) {
        if (kCrashSignals[i] == signal) sigaction(signal, &previous_actions[i], nullptr);
    }
    raise(signal);
}

void install_crash_trace() {
    void* warm[1];
    backtrace(warm, 1);  // loads libgcc now, not inside the signal handler
    for (std::size_t i = 0; i < kCrashSignals.size(); ++i) {
        struct sigaction action {};
        action.sa_handler = native_crash_trace;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_NODEFER | SA_ONSTACK;
        sigaction(kCrashSignals[i], &action, &previous_actions[i]);
    }
}

int main(const std::string& role, int fd, const std::string& device) {
    install_crash_trace();
    try {
        if (role == "judge") return judge_main(fd, device_kind_of(device));
        if (role == "zygote") return zygote_main(fd, device_kind_of(device));
        throw std::runtime_error("unknown worker role " + role);
    } catch (const py::error_already_set& e) {
        sandbox::send_message(fd, {{"role", role}, {"error", describe_python_error(e)}});
    } catch (const std::exception& e) {
        try {
            sandbox::send_message(fd, {{"role", role}, {"error", e.what()}});
        } catch (...) {
        }
    }
    return 3;
}

// kbench's comparison of a call's outputs, for Python: lists of tensors (the reference's, the
// candidate's) and the tolerances; a dict of the result.
// taken: the candidate's outputs as they were at the reply, or None; when given, the candidate's
// are read against their keyed digests (result "changed_after_reply").
py::dict compare_for_python(const py::list& reference, const py::list& candidate, double atol,
                            double rtol, bool strict, const py::object& taken) {
    auto tensors = [](const py::list& values) {
        std::vector<at::Tensor> out;
        for (py::handle v : values) {
            if (!is_tensor(v)) throw std::invalid_argument("compare_values takes tensors");
            out.push_back(THPVariable_Unpack(v.ptr()));
        }
        return out;
    };
    std::vector<at::Tensor> ref = tensors(reference), got = tensors(candidate);
    if (ref.size() != got.size()) throw std::invalid_argument("as many outputs on both sides");
    for (std::size_t i = 0; i < ref.size(); ++i)
        if (ref[i].sizes() != got[i].sizes()) throw std::invalid_argument("shapes differ");
    std::optional<KeyedDigest> key;
    TakenReply reply;
    if (!taken.is_none()) {
        std::vector<at::Tensor> at_reply = tensors(taken.cast<py::list>());
        if (at_reply.size() != got.size()) throw std::invalid_argument("one taken per output");
        // Where the comparison reads the candidate's chunks (compare_values: a GPU where
        // either side is).
        at::Device place = got.empty() ? at::Device(at::kCPU) : got[0].device();
        if (!place.is_cuda() && !ref.empty()) place = ref[0].device();
        key.emplace(place);
        reply.digest = &*key;
        for (const at::Tensor& t : at_reply) reply.digests.push_back(key->of(t.to(place)));
    }
    py::dict out;
    CompareResult r;
    try {
        r = compare_values(ref, got, {atol, rtol, strict}, "call", key ? &reply : nullptr);
    } catch (const protocol::FaultError& e) {
        out["ok"] = false;
        out["changed_after_reply"] = true;
        out["reason"] = std::string(e.what());
        return out;
    }
    out["changed_after_reply"] = false;
    out["ok"] = r.ok;
    out["reason"] = r.reason;
    out["max_abs_diff"] = r.max_abs_diff;
    out["max_rel_diff"] = r.max_rel_diff;
    return out;
}

}  // namespace
}  // namespace kbench::worker

PYBIND11_MODULE(_kbench_worker, m) {
    m.doc() = "kbench worker: judge, zygote and sandbox";
    m.def("main", &kbench::worker::main, "Serve as ROLE on the socket FD for DEVICE");
    m.def("built_with_cuda", &kbench::worker::built_with_cuda);
    m.def("compare_values", &kbench::worker::compare_for_python,
          "kbench's comparison of outputs with the reference's (values only)", py::arg("reference"),
          py::arg("candidate"), py::arg("atol"), py::arg("rtol"), py::arg("strict"),
          py::arg("taken") = py::none());
}
