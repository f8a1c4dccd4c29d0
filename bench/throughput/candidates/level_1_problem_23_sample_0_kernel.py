# compile_error: Softmax over dim 1, one block per row with float4 loads; the row pointer is a plain float*, so `float4 v = xr4[i]` is a type error
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor softmax_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cfloat>
#include <climits>
#include <cstdint>

#define SOFTMAX_THREADS 512

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

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

// cols must be a multiple of 4 (checked on the host).
__global__ void softmax_rows_vec4_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float scratch[32];
    const int64_t row = blockIdx.x;
    const int64_t cols4 = cols / 4;
    const float* xr4 = x + row * cols;
    float4* yr4 = reinterpret_cast<float4*>(y + row * cols);

    float m = -FLT_MAX;
    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = xr4[i];
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    m = block_max(m, scratch);

    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = xr4[i];
        s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
    }
    s = block_sum(s, scratch);
    const float inv = 1.0f / s;

    for (int64_t i = threadIdx.x; i < cols4; i += blockDim.x) {
        float4 v = xr4[i];
        v.x = __expf(v.x - m) * inv;
        v.y = __expf(v.y - m) * inv;
        v.z = __expf(v.z - m) * inv;
        v.w = __expf(v.w - m) * inv;
        yr4[i] = v;
    }
}

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softmax_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "softmax_forward: expected float32");
    TORCH_CHECK(x.dim() == 2, "softmax_forward: expected a (batch, features) tensor");
    TORCH_CHECK(x.size(1) % 4 == 0, "softmax_forward: features must be a multiple of 4");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t rows = input.size(0);
    if (input.numel() == 0) return out;
    TORCH_CHECK(rows <= INT_MAX, "softmax_forward: too many rows");
    softmax_rows_vec4_kernel<<<(unsigned int)rows, SOFTMAX_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), input.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

softmax_ext = load_inline(
    name="kb_l1_p23_softmax",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softmax_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_forward(x)
