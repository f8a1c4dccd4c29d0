#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::orchestrator {

// NVIDIA GPUs the driver lists, counted without creating a CUDA context.
int count_gpus();

// The compute capabilities ("9.0") of the physical GPUs given, from the CUDA driver through
// kbench_worker/gpu_probe.py (no CUDA context, no PyTorch: a fraction of a second); empty with
// the reason in `why` when the driver cannot say (no driver, no such GPU).
std::vector<std::string> gpu_capabilities(const std::string& python, const fs::path& probe,
                                          const std::vector<std::string>& gpus, std::string& why);

// The physical GPU behind "cuda:N", honouring a CUDA_VISIBLE_DEVICES the user already set.
std::string physical_gpu(int ordinal);

// "cpu", "cuda" or "cuda:N"; "auto" becomes cuda when a GPU is present, else cpu.
struct DeviceChoice {
    DeviceKind kind = DeviceKind::cpu;
    int ordinal = 0;
    std::string label;  // as the user would write it
};
DeviceChoice parse_device(const std::string& text);

// The cores this process may run on (its affinity), in order.
std::vector<int> usable_cores();

// On GPUs: a core for each device's timing (both sandboxes are pinned to it while
// a candidate is timed, so that the candidate's and the baseline's launches take the same CPU
// path), from the end of the usable cores, and the cores left to the builders, which never run
// there. None (both empty) with fewer than 2 cores a device plus 2.
struct TimingCores {
    std::vector<int> timing;    // one a device, in device order
    std::vector<int> builders;  // the rest
};
TimingCores timing_cores(const std::vector<int>& usable, std::size_t devices);

// Cores dealt into `shares` contiguous groups whose sizes differ by one at most. Throws a
// UsageError when there are fewer cores than shares.
std::vector<std::vector<int>> split_cores(const std::vector<int>& cores, int shares);

}  // namespace kbench::orchestrator
