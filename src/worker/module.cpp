// The kbench worker extension module: judge, zygote and sandbox live here; their Python entry
// point (python -m kbench_worker ROLE FD DEVICE) only calls main().
#include <unistd.h>

#include "sandbox/framing.hpp"
#include "worker/device.hpp"
#include "worker/judge.hpp"
#include "worker/torch_common.hpp"
#include "worker/zygote.hpp"

namespace kbench::worker {
namespace {

int main(const std::string& role, int fd, const std::string& device) {
    try {
        if (role == "judge") return judge_main(fd, device);
        if (role == "zygote") return zygote_main(fd, device);
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

}  // namespace
}  // namespace kbench::worker

PYBIND11_MODULE(_kbench_worker, m) {
    m.doc() = "kbench worker: judge, zygote and sandbox";
    m.def("main", &kbench::worker::main, "Serve as ROLE on the socket FD for DEVICE");
    m.def("built_with_cuda", &kbench::worker::built_with_cuda);
}
