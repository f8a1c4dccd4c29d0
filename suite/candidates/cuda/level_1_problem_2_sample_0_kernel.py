import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor softmax_forward(torch::Tensor x);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define CHECK_INPUT(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == at::kFloat, #t " must be a float CUDA tensor")

// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffff, v, off);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffff, v, off);
        if (lane == 0) total = v;
    }
    __syncthreads();
    const float r = total;
    __syncthreads();  // partial/total may be reused by the next call
    return r;
}

// Maximum of `v` over the block; every thread gets the result.
__device__ float block_max(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, off));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? partial[lane] : -INFINITY;
        for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, off));
        if (lane == 0) total = v;
    }
    __syncthreads();
    const float r = total;
    __syncthreads();
    return r;
}

// One block per row: row maximum, sum of exp(x - max), then the normalised values.
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (int64_t)blockIdx.x * cols;
    float* out = y + (int64_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_max(m);
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    const float inv = 1.f / block_sum(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

torch::Tensor softmax_forward(torch::Tensor x) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0, "expected a non-empty last dimension");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int cols = (int)in.size(-1);
    const int64_t rows = in.numel() / cols;
    if (rows == 0) return out;
    softmax_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(in.data_ptr<float>(),
                                                                              out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="suite_l1_p2_softmax_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
