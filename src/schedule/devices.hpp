#pragma once

#include <string>

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

}  // namespace kbench::schedule
