#include "process/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "confinement/lockdown.hpp"
#include "core/error.hpp"
#include "process/bounded_output.hpp"
#include "process/process_tree.hpp"

namespace kbench::sandbox {

ExitStatus ExitStatus::from_wait_status(int status) {
    ExitStatus s;
    if (WIFEXITED(status)) {
        s.exited = true;
        s.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        s.signal = WTERMSIG(status);
    }
    return s;
}

std::string describe_signal(int signal) {
    const char* abbrev = sigabbrev_np(signal);
    const char* text = sigdescr_np(signal);
    std::string out = "signal " + std::to_string(signal);
    if (abbrev) out += std::string(" (SIG") + abbrev + (text ? std::string(", ") + text : "") + ")";
    return out;
}

std::string ExitStatus::describe() const {
    return exited ? "exit code " + std::to_string(code) : describe_signal(signal);
}

namespace {

// The parent-death signal fires when the thread that forked a child ends, not the process. So
// every child is forked by one thread that lives as long as the process does.
class Launcher {
  public:
    static Launcher& instance() {
        static Launcher* launcher = new Launcher();  // never destroyed: it must outlive callers
        return *launcher;
    }

    pid_t run(const std::function<pid_t()>& fork_and_exec) {
        if (std::this_thread::get_id() == thread_id_) return fork_and_exec();
        std::packaged_task<pid_t()> task(fork_and_exec);
        auto result = task.get_future();
        {
            std::lock_guard<std::mutex> guard(mutex_);
            tasks_.push_back(std::move(task));
        }
        wake_.notify_one();
        return result.get();
    }

  private:
    Launcher() {
        std::thread thread([this] { loop(); });
        thread_id_ = thread.get_id();
        thread.detach();
    }

    void loop() {
        for (;;) {
            std::packaged_task<pid_t()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [this] { return !tasks_.empty(); });
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            task();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::packaged_task<pid_t()>> tasks_;
    std::thread::id thread_id_;
};

pid_t fork_and_exec(const SpawnSpec& spec) {
    auto [report_read, report_write] = make_pipe();
    int null = spec.stdin_null ? ::open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    std::vector<char*> argv;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) throw InfraError(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
        // Child: only async-signal-safe work and exec from here on.
        if (spec.new_process_group) ::setpgid(0, 0);
        if (spec.nice != 0)
            ::setpriority(PRIO_PROCESS, 0, ::getpriority(PRIO_PROCESS, 0) + spec.nice);
        if (spec.idle) give_way_to_others();
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the orchestrator
        for (const auto& [name, value] : spec.env_set) ::setenv(name.c_str(), value.c_str(), 1);
        if (null >= 0) ::dup2(null, STDIN_FILENO);
        if (spec.stdout_fd >= 0) ::dup2(spec.stdout_fd, STDOUT_FILENO);
        if (spec.stderr_fd >= 0) ::dup2(spec.stderr_fd, STDERR_FILENO);
        for (const auto& [child_fd, parent_fd] : spec.fds) {
            if (child_fd == parent_fd) {
                ::fcntl(child_fd, F_SETFD, 0);  // keep it across exec
            } else {
                ::dup2(parent_fd, child_fd);
            }
        }
        ::execvp(argv[0], argv.data());
        int err = errno;
        ssize_t ignored = ::write(report_write, &err, sizeof(err));
        (void)ignored;
        ::_exit(127);
    }
    ::close(report_write);
    if (null >= 0) ::close(null);
    int err = 0;
    ssize_t n;
    do {
        n = ::read(report_read, &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    ::close(report_read);
    if (n == sizeof(err)) {
        ::waitpid(pid, nullptr, 0);
        throw InfraError("cannot run " + spec.argv[0] + ": " + std::strerror(err),
                         "check the path, or pass --python / set KBENCH_PYTHON");
    }
    return pid;
}

}  // namespace

namespace {

// Every child not yet reaped, for kill_every_child.
std::mutex children_mutex;
std::set<pid_t> children;

void forget_child(pid_t pid) {
    std::lock_guard<std::mutex> guard(children_mutex);
    children.erase(pid);
}

}  // namespace

pid_t spawn_process(const SpawnSpec& spec) {
    if (spec.argv.empty()) throw InfraError("spawn_process: empty argv");
    pid_t pid = Launcher::instance().run([&spec] { return fork_and_exec(spec); });
    std::lock_guard<std::mutex> guard(children_mutex);
    children.insert(pid);
    return pid;
}

void kill_every_child() {
    std::lock_guard<std::mutex> guard(children_mutex);
    for (pid_t pid : children) kill_process_tree(pid);
}

ExitStatus wait_process(pid_t pid) {
    if (pid <= 0) throw std::invalid_argument("wait_process needs a process id");
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return ExitStatus{true, -1, 0};
    }
    forget_child(pid);
    return ExitStatus::from_wait_status(status);
}

std::optional<ExitStatus> try_wait_process(pid_t pid) {
    if (pid <= 0) throw std::invalid_argument("try_wait_process needs a process id");
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == 0) return std::nullopt;
    if (r < 0) return ExitStatus{true, -1, 0};
    forget_child(pid);
    return ExitStatus::from_wait_status(status);
}

CommandOutput run_to_completion(const std::vector<std::string>& argv, double timeout_s,
                                const std::string& input) {
    int in = ::memfd_create("kbench-input", MFD_CLOEXEC);
    if (in < 0) throw InfraError(std::string("memfd_create failed: ") + std::strerror(errno));
    for (std::size_t done = 0; done < input.size();) {
        ssize_t n = ::write(in, input.data() + done, input.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(in);
            throw InfraError(std::string("could not write a program's input: ") +
                             std::strerror(errno));
        }
        done += std::size_t(n);
    }
    ::lseek(in, 0, SEEK_SET);
    auto [out_read, out_write] = make_pipe();
    auto [err_read, err_write] = make_pipe();
    SpawnSpec spec{argv};
    spec.stdout_fd = out_write;
    spec.stderr_fd = err_write;
    spec.fds = {{STDIN_FILENO, in}};
    pid_t pid;
    try {
        pid = spawn_process(spec);
    } catch (...) {
        for (int fd : {in, out_read, out_write, err_read, err_write}) ::close(fd);
        throw;
    }
    ::close(in);
    ::close(out_write);
    ::close(err_write);
    CommandOutput result;
    BoundedOutput err(16 << 10, 16 << 10);
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(long(timeout_s * 1000));
    pollfd fds[2] = {{out_read, POLLIN, 0}, {err_read, POLLIN, 0}};
    int open_fds = 2;
    char buffer[1 << 16];
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            kill_process_tree(pid);
            break;
        }
        if (::poll(fds, 2, int(left.count())) < 0 && errno != EINTR) break;
        for (auto& f : fds) {
            if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = ::read(f.fd, buffer, sizeof(buffer));
            if (n > 0) {
                if (f.fd == out_read)
                    result.out.append(buffer, std::size_t(n));
                else
                    err.append(std::string_view(buffer, std::size_t(n)));
            } else if (n == 0) {
                ::close(f.fd);
                f.fd = -1;
                --open_fds;
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    result.status = wait_process(pid);
    result.err = err.text();
    return result;
}

void kill_process_tree(pid_t pid) {
    if (pid <= 0) return;
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
}

std::pair<int, int> make_socket_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        throw InfraError(std::string("socketpair failed: ") + std::strerror(errno));
    return {fds[0], fds[1]};
}

std::pair<int, int> make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw InfraError(std::string("pipe failed: ") + std::strerror(errno));
    return {fds[0], fds[1]};
}

}  // namespace kbench::sandbox
