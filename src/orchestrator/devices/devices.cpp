#include "orchestrator/devices/devices.hpp"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "process/python_run.hpp"

namespace kbench::orchestrator {

int count_gpus() {
    std::error_code ec;
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
        (void)entry;
        ++count;
    }
    if (count > 0) return count;
    FILE* pipe = ::popen("nvidia-smi -L 2>/dev/null", "r");
    if (!pipe) return 0;
    char line[512];
    while (std::fgets(line, sizeof(line), pipe))
        if (std::string(line).rfind("GPU ", 0) == 0) ++count;
    ::pclose(pipe);
    return count;
}

std::vector<std::string> gpu_capabilities(const std::string& python, const fs::path& probe,
                                          const std::vector<std::string>& gpus, std::string& why) {
    std::string list;
    for (const auto& gpu : gpus) list += (list.empty() ? "" : ",") + gpu;
    std::vector<std::string> out;
    try {
        auto result = sandbox::run_python({python,
                                           probe.string(),
                                           false,
                                           {list},
                                           sandbox::PythonIsolation::standard_library,
                                           30});
        if (!result.status.exited || result.status.code != 0) {
            why = result.err.empty() ? result.status.describe() : result.err;
            while (!why.empty() && why.back() == '\n') why.pop_back();
            return {};
        }
        std::stringstream in(result.out);
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(line);
    } catch (const std::exception& e) {
        why = e.what();
        return {};
    }
    if (out.size() != gpus.size()) {
        why = "the driver named " + std::to_string(out.size()) + " capabilities for " +
              std::to_string(gpus.size()) + " GPU(s)";
        return {};
    }
    return out;
}

std::string physical_gpu(int ordinal) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (!visible || !*visible) return std::to_string(ordinal);
    std::vector<std::string> ids;
    std::stringstream in(visible);
    for (std::string id; std::getline(in, id, ',');) ids.push_back(id);
    if (ordinal >= int(ids.size()))
        throw UsageError(
            "cuda:" + std::to_string(ordinal) + " is not among CUDA_VISIBLE_DEVICES=" + visible,
            "pick an ordinal below " + std::to_string(ids.size()));
    return ids[std::size_t(ordinal)];
}

std::vector<int> usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cores;
    if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cores.push_back(c);
    return cores;
}

TimingCores timing_cores(const std::vector<int>& usable, std::size_t devices) {
    TimingCores out;
    if (devices == 0 || usable.size() < 2 * devices + 2) return out;
    out.builders.assign(usable.begin(), usable.end() - std::ptrdiff_t(devices));
    for (std::size_t d = 0; d < devices; ++d) out.timing.push_back(usable[usable.size() - 1 - d]);
    return out;
}

std::vector<std::vector<int>> split_cores(const std::vector<int>& cores, int shares) {
    if (shares < 1 || std::size_t(shares) > cores.size())
        throw UsageError(std::to_string(shares) +
                             " CPU judges need as many cores; this process may use " +
                             std::to_string(cores.size()),
                         "ask for at most " + std::to_string(cores.size()) + " judges");
    std::vector<std::vector<int>> out(static_cast<std::size_t>(shares));
    std::size_t base = cores.size() / std::size_t(shares),
                extra = cores.size() % std::size_t(shares);
    std::size_t next = 0;
    for (std::size_t s = 0; s < out.size(); ++s)
        for (std::size_t i = 0; i < base + (s < extra ? 1 : 0); ++i)
            out[s].push_back(cores[next++]);
    return out;
}

DeviceChoice parse_device(const std::string& text) {
    if (text == "auto") return count_gpus() > 0 ? parse_device("cuda") : parse_device("cpu");
    if (text == "cpu") return {DeviceKind::cpu, 0, "cpu"};
    if (text == "cuda") return {DeviceKind::cuda, 0, "cuda:0"};
    if (text.rfind("cuda:", 0) == 0) {
        try {
            std::size_t used = 0;
            int ordinal = std::stoi(text.substr(5), &used);
            if (used == text.size() - 5 && ordinal >= 0) return {DeviceKind::cuda, ordinal, text};
        } catch (const std::exception&) {
        }
    }
    throw UsageError("unknown device '" + text + "'", "use cpu, cuda or cuda:N");
}

}  // namespace kbench::orchestrator
