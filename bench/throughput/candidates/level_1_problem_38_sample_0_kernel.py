# honest: L1 normalisation x / mean(|x|, dim=1), one block per row, shared-memory tree reduction in float
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor l1norm_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <climits>
#include <cstdint>

#define L1_THREADS 512

__global__ void l1norm_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float sdata[L1_THREADS];
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float acc = 0.0f;
    for (int64_t j = tid; j < cols; j += blockDim.x) acc += fabsf(xr[j]);
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    const float mean = sdata[0] / (float)cols;

    for (int64_t j = tid; j < cols; j += blockDim.x) yr[j] = xr[j] / mean;
}

torch::Tensor l1norm_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "l1norm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "l1norm_forward: expected float32");
    TORCH_CHECK(x.dim() == 2, "l1norm_forward: expected a (batch, dim) tensor");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t rows = input.size(0);
    const int64_t cols = input.size(1);
    if (input.numel() == 0) return out;
    TORCH_CHECK(rows <= INT_MAX, "l1norm_forward: too many rows");
    l1norm_rows_kernel<<<(unsigned int)rows, L1_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

l1norm_ext = load_inline(
    name="kb_l1_p38_l1norm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["l1norm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return l1norm_ext.l1norm_forward(x)
