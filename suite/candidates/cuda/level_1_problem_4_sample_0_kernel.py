import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);
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

// One block per row: mean, then the variance of the centred values, then the affine output.
__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
    const float* row = x + (int64_t)blockIdx.x * cols;
    float* out = y + (int64_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
    const float mean = block_sum(s) / (float)cols;
    float sq = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = row[c] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
}

torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    CHECK_INPUT(x);
    CHECK_INPUT(weight);
    CHECK_INPUT(bias);
    auto in = x.contiguous();
    auto g = weight.contiguous();
    auto b = bias.contiguous();
    const int cols = (int)in.size(-1);
    TORCH_CHECK(g.numel() == cols && b.numel() == cols, "weight and bias must match the last dimension");
    const int64_t rows = in.numel() / cols;
    auto out = torch::empty_like(in);
    if (rows == 0) return out;
    layer_norm_kernel<<<(unsigned)rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        in.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), cols, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="suite_l1_p4_layernorm_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["layer_norm_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return ext.layer_norm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
