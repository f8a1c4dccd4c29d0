# honest: Softplus (beta 1, threshold 20), log1p(exp(x)), one thread per element
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor softplus_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void softplus_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = in[i];
        out[i] = (v > 20.0f) ? v : log1pf(expf(v));
    }
}

torch::Tensor softplus_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softplus_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "softplus_forward: expected float32");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = input.numel();
    if (n == 0) return out;

    const int threads = 256;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, (int64_t)sms * 32));
    softplus_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

softplus_ext = load_inline(
    name="kb_l1_p29_softplus",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softplus_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softplus_ext.softplus_forward(x)
