#include "orchestrator/workers/worker_process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "build/worker_package.hpp"
#include "core/error.hpp"

namespace kbench::orchestrator {

WorkerProcess::WorkerProcess(const WorkerEnvironment& env, const std::string& role,
                             const std::string& name)
    : role_(name.empty() ? role : name), log_path_(env.log_dir / (role_ + ".log")) {
    // A worker runs what is in the package folder: it must be what kbench built.
    if (env.verify_package)
        build::verify_worker_package(env.worker_package_dir, build::built_worker_package());
    fs::create_directories(env.log_dir);
    int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw InfraError("cannot open worker log " + log_path_.string());
    auto [ours, theirs] = sandbox::make_socket_pair();

    sandbox::SpawnSpec spec;
    spec.argv = {env.python, "-m", "kbench_worker",
                 role,       "3",  std::string(to_string(env.device_kind))};
    std::string pythonpath = env.worker_package_dir.string();
    if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
        pythonpath += std::string(":") + existing;
    // No bytecode written into the package folder: it holds exactly what kbench built.
    spec.env_set = {
        {"PYTHONPATH", pythonpath}, {"PYTHONUNBUFFERED", "1"}, {"PYTHONDONTWRITEBYTECODE", "1"}};
    // No downloads at run time unless the user asks for them.
    for (const char* offline : {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"})
        if (!std::getenv(offline)) spec.env_set.emplace_back(offline, "1");
    if (env.device_kind == DeviceKind::cuda)
        spec.env_set.emplace_back("CUDA_VISIBLE_DEVICES", env.visible_gpu);
    if (env.device_share > 1)
        spec.env_set.emplace_back("KBENCH_DEVICE_SHARE", std::to_string(env.device_share));
    // On a CPU the judge and the sandbox take turns on the same cores: PyTorch's threads must
    // sleep when idle, not spin on the core the other process waits for (judge and sandboxes
    // alike, so baseline and candidate are timed the same way).
    if (env.device_kind == DeviceKind::cpu && !std::getenv("OMP_WAIT_POLICY"))
        spec.env_set.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
    if (!env.cpu_cores.empty()) {
        // The worker pins itself (and so every sandbox it forks) to these cores before torch
        // starts its thread pools, sized to match.
        std::string cores;
        for (int c : env.cpu_cores) cores += (cores.empty() ? "" : ",") + std::to_string(c);
        std::string threads = std::to_string(env.cpu_cores.size());
        spec.env_set.emplace_back("KBENCH_CPU_CORES", cores);
        spec.env_set.emplace_back("OMP_NUM_THREADS", threads);
        spec.env_set.emplace_back("MKL_NUM_THREADS", threads);
    }
    spec.nice = env.nice;
    spec.fds = {{3, theirs}};
    spec.stdin_null = true;
    spec.stdout_fd = log_fd;
    spec.stderr_fd = log_fd;
    try {
        pid_ = sandbox::spawn_process(spec);
    } catch (...) {
        ::close(log_fd);
        ::close(ours);
        ::close(theirs);
        throw;
    }
    ::close(log_fd);
    ::close(theirs);
    channel_ = std::make_unique<sandbox::Channel>(ours, -1, 32 << 10, true);
}

WorkerProcess::~WorkerProcess() {
    if (!alive()) return;  // gone, and already reaped
    try {
        channel_->send({{"op", "exit"}});
    } catch (...) {
    }
    // A short grace period, then the process group goes.
    for (int i = 0; i < 50; ++i) {
        if (sandbox::try_wait_process(pid_)) return;
        ::usleep(20000);
    }
    sandbox::kill_process_tree(pid_);
    sandbox::wait_process(pid_);
}

bool WorkerProcess::alive() {
    if (pid_ <= 0) return false;
    if (sandbox::try_wait_process(pid_)) {
        pid_ = -1;
        return false;
    }
    return true;
}

std::string WorkerProcess::log_tail(std::size_t bytes) const {
    std::ifstream in(log_path_, std::ios::binary | std::ios::ate);
    if (!in) return {};
    auto size = std::size_t(in.tellg());
    std::size_t start = size > bytes ? size - bytes : 0;
    in.seekg(std::streamoff(start));
    std::string text(size - start, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    return text;
}

const json& WorkerProcess::hello(double timeout_s) {
    if (hello_) return *hello_;
    auto reply = channel_->receive(sandbox::Clock::now() +
                                   std::chrono::milliseconds(long(timeout_s * 1000)));
    if (reply.event != sandbox::Channel::Event::message || reply.body.contains("error")) {
        std::string detail = reply.event == sandbox::Channel::Event::message
                                 ? reply.body.value("error", std::string())
                                 : log_tail();
        throw InfraError("the " + role_ + " process did not start: " + detail,
                         "check that the Python given by --python / KBENCH_PYTHON imports torch "
                         "and the kbench worker module; its log is " +
                             log_path_.string());
    }
    hello_ = reply.body;
    return *hello_;
}

json WorkerProcess::request(const json& body, double timeout_s, const std::vector<int>& fds,
                            std::vector<int>* received) {
    std::lock_guard<std::mutex> guard(request_mutex_);
    hello();
    try {
        channel_->send(body, fds);
    } catch (const std::exception& e) {
        throw InfraError("the " + role_ + " process is gone (" + e.what() + ")\n" + log_tail());
    }
    auto reply = channel_->receive(sandbox::Clock::now() +
                                   std::chrono::milliseconds(long(timeout_s * 1000)));
    if (reply.event == sandbox::Channel::Event::message) {
        if (received)
            *received = std::move(reply.fds);
        else
            for (int fd : reply.fds) ::close(fd);
        return reply.body;
    }
    std::string what = reply.event == sandbox::Channel::Event::timed_out
                           ? "did not answer '" + body.value("op", std::string()) + "' within " +
                                 std::to_string(int(timeout_s)) + " s"
                           : "died during '" + body.value("op", std::string()) + "'";
    throw InfraError("the " + role_ + " process " + what + "; the end of its log (" +
                     log_path_.string() + "):\n" + log_tail());
}

}  // namespace kbench::orchestrator
