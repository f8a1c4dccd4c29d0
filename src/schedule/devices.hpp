#pragma once

#include <string>
#include <vector>

namespace kbench::schedule {

// NVIDIA GPUs the driver lists, counted without creating a CUDA context.
int count_gpus();

// The physical GPU behind "cuda:N", honouring a CUDA_VISIBLE_DEVICES the user already set.
std::string physical_gpu(int ordinal);

// "cpu", "cuda" or "cuda:N"; "auto" becomes cuda when a GPU is present, else cpu.
struct DeviceChoice {
    std::string kind;  // "cpu" or "cuda"
    int ordinal = 0;
    std::string label;  // as the user would write it
};
DeviceChoice parse_device(const std::string& text);

// The cores this process may run on (its affinity), in order.
std::vector<int> usable_cores();

// Cores dealt into `shares` contiguous groups whose sizes differ by one at most. Throws a
// UsageError when there are fewer cores than shares.
std::vector<std::vector<int>> split_cores(const std::vector<int>& cores, int shares);

}  // namespace kbench::schedule
