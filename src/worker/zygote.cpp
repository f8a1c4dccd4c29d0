#include "worker/zygote.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sandbox/framing.hpp"
#include "worker/sandbox_main.hpp"
#include "worker/torch_common.hpp"

namespace kbench::worker {
namespace {

// Sets variables through os.environ, so that Python code (torch's extension builder among it)
// sees them as well as C code.
void apply_environment(const json& env) {
    py::object environ = py::module_::import("os").attr("environ");
    for (const auto& [name, value] : env.items()) environ[py::str(name)] = value.get<std::string>();
}

[[noreturn]] void run_child(const json& request, int zygote_fd, int control_fd, int output_fd) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the zygote
    ::close(zygote_fd);
    ::dup2(output_fd, STDOUT_FILENO);
    ::dup2(output_fd, STDERR_FILENO);
    ::close(output_fd);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    int code = 3;
    try {
        std::string cwd = request.value("cwd", std::string());
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
            throw std::runtime_error("chdir " + cwd + ": " + std::strerror(errno));
        apply_environment(request.value("env", json::object()));
        if (!cwd.empty()) py::module_::import("sys").attr("path").attr("insert")(0, cwd);
        std::string role = request.value("role", std::string("sandbox"));
        code = role == "builder"
                   ? builder_main(control_fd)
                   : sandbox_main(control_fd, request.value("device", std::string("cpu")));
    } catch (const py::error_already_set& e) {
        std::fprintf(stderr, "kbench sandbox: %s\n", describe_python_error(e).c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kbench sandbox: %s\n", e.what());
    }
    try {
        py::module_ sys = py::module_::import("sys");
        sys.attr("stdout").attr("flush")();
        sys.attr("stderr").attr("flush")();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(code);
}

// Sandboxes forked and not yet reaped. Any other child of the zygote is a stray: a process a
// candidate started and orphaned (the zygote is a child subreaper, so orphans of its sandboxes
// come to it instead of to init).
std::set<pid_t> sandboxes;

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream fields(stat.substr(close + 1));
        std::string state;
        pid_t ppid = 0;
        if (fields >> state >> ppid && ppid == parent) out.push_back(std::stoi(name));
    }
    return out;
}

// Kills and reaps every stray, and the strays' own children as they come to the zygote in turn,
// so that nothing a candidate started runs on beside the next candidate's timing.
void kill_strays() {
    for (int round = 0; round < 64; ++round) {
        bool found = false;
        for (pid_t pid : children_of(::getpid())) {
            if (sandboxes.count(pid)) continue;
            found = true;
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
        if (!found) return;
    }
}

json fork_child(const json& request, std::vector<int> fds, int zygote_fd) {
    if (fds.size() != 2) {
        for (int fd : fds) ::close(fd);
        return {{"ok", false}, {"error", "fork needs a control socket and an output pipe"}};
    }
    PyOS_BeforeFork();
    pid_t pid = ::fork();
    if (pid == 0) {
        PyOS_AfterFork_Child();
        run_child(request, zygote_fd, fds[0], fds[1]);
    }
    int saved = errno;
    PyOS_AfterFork_Parent();
    ::close(fds[0]);
    ::close(fds[1]);
    if (pid < 0) return {{"ok", false}, {"error", std::string("fork: ") + std::strerror(saved)}};
    sandboxes.insert(pid);
    return {{"ok", true}, {"pid", pid}};
}

json reap(const json& request) {
    pid_t pid = request.at("pid").get<pid_t>();
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return {{"ok", false}, {"error", std::string("waitpid: ") + std::strerror(errno)}};
    sandboxes.erase(pid);
    kill_strays();
    json out = {{"ok", true}, {"exited", bool(WIFEXITED(status))}};
    out["code"] = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    out["signal"] = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return out;
}

}  // namespace

int zygote_main(int fd, const std::string& device_kind) {
    (void)device_kind;
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    py::module_ torch = py::module_::import("torch");
    py::object cuda = torch.attr("version").attr("cuda");
    // The toolchain that builds candidates: part of every build key.
    sandbox::send_message(
        fd,
        {{"role", "zygote"},
         {"pid", ::getpid()},
         {"torch", py::str(torch.attr("__version__")).cast<std::string>()},
         {"cuda", cuda.is_none() ? "" : cuda.cast<std::string>()},
         {"python",
          py::str(py::module_::import("sys").attr("version")).cast<std::string>().substr(0, 16)}});
    while (auto message = sandbox::recv_message(fd)) {
        const json& request = message->body;
        std::string op = request.value("op", std::string());
        if (op == "exit") break;
        json reply;
        if (op == "fork")
            reply = fork_child(request, std::move(message->fds), fd);
        else if (op == "reap")
            reply = reap(request);
        else
            reply = {{"ok", false}, {"error", "unknown request " + op}};
        sandbox::send_message(fd, reply);
    }
    kill_strays();
    return 0;
}

}  // namespace kbench::worker
