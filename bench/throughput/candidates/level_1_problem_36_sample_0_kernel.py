# honest: RMSNorm over dim 1, one thread per (n, spatial) column looping over the channels (coalesced), float accumulation
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor rmsnorm_forward(torch::Tensor x, double eps);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

// x is (N, C, S) contiguous, S = product of the trailing dims. Each thread owns one (n, s)
// column: it reads the C values of the column (stride S, so neighbouring threads read
// neighbouring addresses), computes sqrt(mean(x^2) + eps) and writes x / rms.
__global__ void rmsnorm_columns_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       int64_t N, int64_t C, int64_t S, float eps) {
    const int64_t total = N * S;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const float inv_c = 1.0f / (float)C;
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += stride) {
        const int64_t n = p / S;
        const int64_t s = p - n * S;
        const int64_t base = n * C * S + s;
        float acc = 0.0f;
        for (int64_t c = 0; c < C; ++c) {
            const float v = x[base + c * S];
            acc = fmaf(v, v, acc);
        }
        const float rms = sqrtf(acc * inv_c + eps);
        for (int64_t c = 0; c < C; ++c) {
            y[base + c * S] = x[base + c * S] / rms;
        }
    }
}

torch::Tensor rmsnorm_forward(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "rmsnorm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "rmsnorm_forward: expected float32");
    TORCH_CHECK(x.dim() >= 2, "rmsnorm_forward: expected at least 2 dims (N, C, ...)");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t N = input.size(0);
    const int64_t C = input.size(1);
    if (input.numel() == 0) return out;
    const int64_t S = input.numel() / (N * C);

    const int threads = 256;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t cols = N * S;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((cols + threads - 1) / threads, (int64_t)sms * 32));
    rmsnorm_columns_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), N, C, S, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

rmsnorm_ext = load_inline(
    name="kb_l1_p36_rmsnorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rmsnorm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm_ext.rmsnorm_forward(x, float(self.eps))
