# wrong: LogSoftmax, one block per row, max / sum-exp / write passes; the write pass drops the row max (x - log(sum) instead of x - max - log(sum)), off by ~1.0
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor log_softmax_lastdim(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cfloat>
#include <climits>
#include <cstdint>

#define LSM_THREADS 512

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Block-wide max / sum through shared memory; the result is returned to every thread.
__device__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? scratch[threadIdx.x] : -FLT_MAX;
    v = warp_max(v);
    __syncthreads();
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

__device__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? scratch[threadIdx.x] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

__global__ void log_softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float scratch[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float m = -FLT_MAX;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_max(m, scratch);

    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
    s = block_sum(s, scratch);
    const float log_sum = logf(s);

    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - log_sum;
}

torch::Tensor log_softmax_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "log_softmax_lastdim: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "log_softmax_lastdim: expected float32");
    TORCH_CHECK(x.dim() >= 1, "log_softmax_lastdim: expected at least one dim");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    if (input.numel() == 0) return out;
    const int64_t cols = input.size(-1);
    const int64_t rows = input.numel() / cols;
    TORCH_CHECK(rows <= INT_MAX, "log_softmax_lastdim: too many rows");
    log_softmax_rows_kernel<<<(unsigned int)rows, LSM_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

log_softmax_ext = load_inline(
    name="kb_l1_p24_log_softmax",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["log_softmax_lastdim"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim % x.dim()
        if d == x.dim() - 1:
            return log_softmax_ext.log_softmax_lastdim(x)
        y = log_softmax_ext.log_softmax_lastdim(x.transpose(d, -1).contiguous())
        return y.transpose(d, -1)
