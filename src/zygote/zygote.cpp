#include "zygote/zygote.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "confinement/cgroups.hpp"
#include "confinement/lockdown.hpp"
#include "process/process_tree.hpp"
#include "protocol/framing.hpp"
#include "protocol/zygote_messages.hpp"
#include "runtime/python.hpp"
#include "runtime/signals.hpp"
#include "runtime/torch_common.hpp"
#include "sandbox/sandbox_main.hpp"

#ifdef KBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kbench::worker {
namespace {

using protocol::FaultKind;
using protocol::Op;

// Sets variables through os.environ, so that Python code (torch's extension builder among it)
// sees them as well as C code.
void apply_environment(const std::map<std::string, std::string>& env) {
    py::object environ = python_module("os").attr("environ");
    for (const auto& [name, value] : env) environ[py::str(name)] = value;
}

// What a confined child keeps of kbench's environment: what its tools need to run. Everything
// else (API keys, tokens, agent sockets, kbench's own settings) is not the candidate's to read.
bool kept_for_sandbox(const std::string& name) {
    static const char* exact[] = {"PATH",
                                  "LD_LIBRARY_PATH",
                                  "LANG",
                                  "LANGUAGE",
                                  "TZ",
                                  "TERM",
                                  "CC",
                                  "CXX",
                                  "CUDAHOSTCXX",
                                  "MAX_JOBS",
                                  "HF_HUB_OFFLINE",
                                  "TRANSFORMERS_OFFLINE"};
    static const char* prefixes[] = {"CUDA",      "NVIDIA_", "TORCH_", "TRITON_", "OMP_", "MKL_",
                                     "OPENBLAS_", "KMP_",    "GOMP_",  "PYTHON",  "LC_",  "NCCL_"};
    // Thread binding would make OpenMP (or glibc's pthread_create for it) call
    // sched_setaffinity, which seccomp refuses in sandboxes and builders: libgomp would then
    // fail to start its threads.
    static const char* binding[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY",
                                    "KMP_AFFINITY"};
    for (const char* b : binding)
        if (name == b) return false;
    for (const char* e : exact)
        if (name == e) return true;
    for (const char* p : prefixes)
        if (name.rfind(p, 0) == 0) return true;
    return false;
}

void scrub_environment() {
    py::object environ = python_module("os").attr("environ");
    py::list names = py::list(environ.attr("keys")());
    for (py::handle name : names)
        if (!kept_for_sandbox(name.cast<std::string>())) environ.attr("pop")(name, py::none());
}

// The body of a confined child: its folder, its environment, then its role.
int run_child(const protocol::ForkRequest& request) {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    int code = 3;
    try {
        if (!request.cwd.empty() && ::chdir(request.cwd.c_str()) != 0)
            throw std::runtime_error("chdir " + request.cwd + ": " + std::strerror(errno));
        scrub_environment();
        apply_environment(request.env);
        if (!request.cwd.empty()) python_module("sys").attr("path").attr("insert")(0, request.cwd);
        code = request.role == "builder" ? builder_main(3) : sandbox_main(3, request.device);
    } catch (const py::error_already_set& e) {
        std::fprintf(stderr, "kbench sandbox: %s\n", describe_python_error(e).c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kbench sandbox: %s\n", e.what());
    }
    try {
        py::module_ sys = python_module("sys");
        sys.attr("stdout").attr("flush")();
        sys.attr("stderr").attr("flush")();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(code);
}

// The layers, in the order they are tried off, that might keep CUDA from starting.
const std::vector<std::string> kCudaSuspects = {
    "landlock",      "event_limits",      "seccomp",       "identity",    "mount_namespace",
    "pid_namespace", "network_namespace", "ipc_namespace", "capabilities"};

class Zygote {
  public:
    Zygote(int fd, DeviceKind device_kind) : fd_(fd), device_kind_(device_kind) {}

    int serve() {
        py::module_ torch = python_module("torch");
        // Imported here, before any fork: a sandbox whose user cannot read them still has them.
        // Nothing that initialises CUDA (torch.utils.cpp_extension does, at import, unless
        // imported through import_before_fork): a child forked after that cannot use the GPU.
        for (const char* module : {"kbench_worker.extensions", "kbench_worker.rules", "copy",
                                   "importlib.util", "inspect", "functools"})
            python_module(module);
        python_module("kbench_worker.extensions").attr("import_before_fork")();
        py::object cuda = torch.attr("version").attr("cuda");
        protocol::ZygoteHello hello{
            ::getpid(), py::str(torch.attr("__version__")).cast<std::string>(),
            cuda.is_none() ? "" : cuda.cast<std::string>(),
            py::str(python_module("sys").attr("version")).cast<std::string>().substr(0, 16)};
        sandbox::send_message(fd_, hello.to_json());
        while (auto message = sandbox::recv_message(fd_)) {
            attribute_signals();
            json reply;
            try {
                Op op = protocol::op_of(message->body);
                if (op == Op::exit) break;
                if (op == Op::fork)
                    reply = protocol::reply_json(
                        fork(protocol::ForkRequest::from_json(message->body), message->fds));
                else if (op == Op::reap)
                    reply =
                        protocol::reply_json(reap(protocol::ReapRequest::from_json(message->body)));
                else
                    throw ProtocolError("a zygote does not serve '" +
                                        std::string(protocol::to_string(op)) + "'");
            } catch (const std::exception& e) {
                reply = protocol::fault_json({FaultKind::harness, e.what(), ""});
            }
            for (int fd : message->fds)
                if (fd >= 0) ::close(fd);
            // A forked process's folders go to kbench, and no longer stay here: a folder is
            // gone once its process and kbench's descriptor are.
            std::vector<int> folders = std::exchange(folders_, {});
            sandbox::send_message(fd_, reply, folders);
            for (int fd : folders) ::close(fd);
        }
        for (auto& [pid, child] : children_) {
            ::kill(-pid, SIGKILL);
            sandbox::wait_confined(child.process);
            cgroups_.remove(child.cgroups);
        }
        return 0;
    }

  private:
    struct Child {
        sandbox::ConfinedProcess process;
        sandbox::Cgroups::Made cgroups;
        std::vector<std::string> signals;  // what its processes sent to the zygote
    };

    // Signals from a sandbox's processes are its own record; others are obeyed.
    void attribute_signals() {
        for (const ReceivedSignal& s : take_signals()) {
            auto it = children_.find(s.root);
            if (s.root > 0 && it != children_.end()) {
                it->second.signals.push_back(std::string(signal_name(s.number)) + " from process " +
                                             std::to_string(s.sender));
                continue;
            }
            obey(s);
        }
    }

    // Whether CUDA starts under spec; the error when it does not.
    std::string cuda_starts_under(const sandbox::LockdownSpec& spec) {
#ifdef KBENCH_WITH_CUDA
        int out[2];
        if (::pipe2(out, O_CLOEXEC) != 0) return "pipe failed";
        int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        std::fflush(nullptr);
        sandbox::ConfinedProcess canary;
        try {
            canary = sandbox::spawn_confined(spec, {null, out[1], out[1]}, nullptr, [] {
                cudaError_t e = cudaSetDevice(0);
                if (e == cudaSuccess) e = cudaFree(nullptr);
                if (e == cudaSuccess) return 0;
                std::string text = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
                (void)!::write(1, text.data(), text.size());
                return 1;
            });
        } catch (const std::exception& e) {
            ::close(out[0]);
            ::close(out[1]);
            ::close(null);
            return e.what();
        }
        ::close(out[1]);
        ::close(null);
        for (int fd : canary.folders) ::close(fd);
        std::string text;
        char buf[512];
        for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
            text.append(buf, std::size_t(n));
        ::close(out[0]);
        sandbox::ConfinedEnd end = sandbox::wait_confined(canary);
        bool ok = end.body_status_known && WIFEXITED(end.wait_status) &&
                  WEXITSTATUS(end.wait_status) == 0;
        return ok ? "" : (text.empty() ? "the CUDA check did not finish" : text);
#else
        (void)spec;
        return "";
#endif
    }

    // On a GPU: the layers CUDA cannot start under here, found once, with a CUDA context made in
    // a confined child under fewer and fewer layers.
    void find_cuda_unusable_layers(const sandbox::LockdownSpec& spec) {
        if (cuda_checked_ || device_kind_ != DeviceKind::cuda) return;
        cuda_checked_ = true;
        std::string error = cuda_starts_under(spec);
        if (error.empty()) return;
        // Where CUDA fails under Landlock for want of writes under /proc (measured on an H100:
        // most likely its threads' names), the sandbox's own folder of its own /proc is
        // granted, else that whole /proc, before Landlock is taken off.
        for (const char* grant : {"own", "all"}) {
            sandbox::LockdownSpec with = spec;
            with.proc_writes = grant;
            if (!spec.allows("landlock") || !cuda_starts_under(with).empty()) continue;
            cuda_proc_writes_ = grant;
            return;
        }
        sandbox::LockdownSpec fewer = spec;
        std::vector<std::string> off;
        for (const std::string& layer : kCudaSuspects) {
            if (!fewer.allows(layer)) continue;
            fewer.off[layer] = "taken off to see whether CUDA starts without it";
            off.push_back(layer);
            if (!cuda_starts_under(fewer).empty()) continue;
            // The last one taken off is needed; each before it is put back where CUDA still
            // starts without it taken off.
            for (std::size_t i = 0; i + 1 < off.size(); ++i) {
                sandbox::LockdownSpec back = fewer;
                back.off.erase(off[i]);
                if (cuda_starts_under(back).empty()) fewer = back;
            }
            for (const std::string& culprit : off)
                if (!fewer.allows(culprit))
                    cuda_unusable_[culprit] =
                        "CUDA cannot start under it on this machine (" + error + ")";
            return;
        }
        // Not a layer's doing: the device itself fails, and sandboxes will say so.
    }

    protocol::Forked fork(const protocol::ForkRequest& request, std::vector<int>& fds) {
        if (fds.size() != 2) throw ProtocolError("fork needs a control socket and an output pipe");
        sandbox::LockdownSpec spec = request.lockdown;
        if (request.role == "sandbox" && request.device == DeviceKind::cuda) {
            find_cuda_unusable_layers(spec);
            spec.proc_writes = cuda_proc_writes_;
        }
        for (const auto& [layer, why] : cuda_unusable_) spec.off.emplace(layer, why);
        // Its memory limit, its task limit, and for a sandbox the count of its CPU time (what
        // it does while the other side's requests are timed).
        Child child;
        child.cgroups = cgroups_.make(spec.allows("memory_limit") ? spec.memory_bytes : 0,
                                      spec.allows("pids_limit") ? sandbox::kMaxTasks : 0,
                                      request.role == "sandbox" && spec.allows("cpu_cgroup"));
        spec.cgroup = child.cgroups.memory;
        spec.cgroup_missing = child.cgroups.memory_missing;
        spec.pids_cgroup = child.cgroups.pids;
        spec.pids_cgroup_missing = child.cgroups.pids_missing;
        spec.cpu_cgroup = child.cgroups.cpu;
        spec.cpu_cgroup_missing = child.cgroups.cpu_missing;
        int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        PyOS_BeforeFork();
        std::fflush(nullptr);
        try {
            // Builders give way to the judge and the sandboxes (a compiler that takes a core
            // from them makes their requests wait on the judge's clock); the zygote that forks
            // them does not, so that nothing starves its start.
            bool builder = request.role == "builder";
            child.process = sandbox::spawn_confined(
                spec, {null, fds[1], fds[1], fds[0]},
                [builder] {
                    PyOS_AfterFork_Child();
                    if (builder) sandbox::give_way_to_others();
                },
                [&request] { return run_child(request); });
        } catch (...) {
            PyOS_AfterFork_Parent();
            ::close(null);
            cgroups_.remove(child.cgroups);
            throw;
        }
        PyOS_AfterFork_Parent();
        ::close(null);
        watch_process(child.process.pid);
        protocol::Forked out{child.process.pid, child.process.body_pid, child.process.layers};
        folders_ = std::exchange(child.process.folders, {});
        children_[child.process.pid] = std::move(child);
        return out;
    }

    protocol::Reaped reap(const protocol::ReapRequest& request) {
        auto it = children_.find(pid_t(request.pid));
        if (it == children_.end())
            throw ProtocolError("no process " + std::to_string(request.pid) + " to reap");
        sandbox::ConfinedEnd end = sandbox::wait_confined(it->second.process);
        attribute_signals();
        std::vector<std::string> signals = it->second.signals;
        unwatch_process(pid_t(request.pid));
        cgroups_.remove(it->second.cgroups);
        children_.erase(it);
        kill_strays();
        protocol::Reaped r;
        r.known = end.body_status_known;
        r.exited = WIFEXITED(end.wait_status);
        r.code = r.exited ? WEXITSTATUS(end.wait_status) : 0;
        r.signal = WIFSIGNALED(end.wait_status) ? WTERMSIG(end.wait_status) : 0;
        r.leftovers = end.leftovers;
        r.signals = signals;
        return r;
    }

    // The zygote is a child subreaper: whatever escaped a confined process's own clean-up comes
    // here, and is killed, until nothing comes; the confined processes still in flight stay.
    void kill_strays() {
        auto start = std::chrono::steady_clock::now();
        for (;;) {
            std::vector<pid_t> strays;
            for (pid_t pid : sandbox::children_of(::getpid()))
                if (!children_.count(pid)) strays.push_back(pid);
            for (pid_t pid : strays) ::kill(pid, SIGKILL);
            for (pid_t pid : strays)
                while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
                }
            if (strays.empty() ||
                std::chrono::steady_clock::now() - start > std::chrono::seconds(10))
                return;
        }
    }

    int fd_;
    DeviceKind device_kind_;
    std::map<pid_t, Child> children_;
    sandbox::Cgroups cgroups_;
    bool cuda_checked_ = false;
    std::string cuda_proc_writes_;  // what of /proc GPU sandboxes may write (LockdownSpec)
    std::vector<int> folders_;      // the last forked process's, sent with its reply
    std::map<std::string, std::string> cuda_unusable_;
};

}  // namespace

int zygote_main(int fd, DeviceKind device_kind) {
    sandbox::make_undumpable();
    watch_signals();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    Zygote zygote(fd, device_kind);
    return zygote.serve();
}

}  // namespace kbench::worker
