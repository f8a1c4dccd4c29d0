# honest: Frobenius-norm normalisation, two-stage deterministic sum of squares in double, then x / norm (norm kept on the device)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor frobenius_normalize(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

#define SUMSQ_THREADS 256
#define FINAL_THREADS 1024

// Stage 1: every block writes the sum of squares of its grid-stride share into partial[blockIdx.x].
__global__ void sumsq_partial_kernel(const float* __restrict__ x, int64_t n, double* __restrict__ partial) {
    __shared__ double sdata[SUMSQ_THREADS];
    const int tid = threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        const double v = (double)x[i];
        acc += v * v;
    }
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}

// Stage 2: one block adds the partial sums and stores the norm as a float.
__global__ void __launch_bounds__(FINAL_THREADS) sumsq_final_kernel(const double* __restrict__ partial, int num_partial, float* __restrict__ norm) {
    __shared__ double sdata[FINAL_THREADS];
    const int tid = threadIdx.x;
    double acc = 0.0;
    for (int i = tid; i < num_partial; i += blockDim.x) acc += partial[i];
    sdata[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) norm[0] = (float)sqrt(sdata[0]);
}

// Stage 3: y = x / norm.
__global__ void divide_by_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                      const float* __restrict__ norm) {
    const float d = norm[0];
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[i] / d;
    }
}

torch::Tensor frobenius_normalize(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "frobenius_normalize: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "frobenius_normalize: expected float32");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = input.numel();
    if (n == 0) return out;

    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n + SUMSQ_THREADS - 1) / SUMSQ_THREADS, (int64_t)sms * 8));
    auto partial = torch::empty({blocks}, input.options().dtype(torch::kDouble));
    auto norm = torch::empty({1}, input.options());
    auto stream = at::cuda::getCurrentCUDAStream();

    sumsq_partial_kernel<<<blocks, SUMSQ_THREADS, 0, stream>>>(input.data_ptr<float>(), n, partial.data_ptr<double>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    sumsq_final_kernel<<<1, FINAL_THREADS, 0, stream>>>(partial.data_ptr<double>(), blocks, norm.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int div_blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, (int64_t)sms * 32));
    divide_by_norm_kernel<<<div_blocks, 256, 0, stream>>>(input.data_ptr<float>(), out.data_ptr<float>(), n,
                                                          norm.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

frobenius_ext = load_inline(
    name="kb_l1_p37_frobenius_norm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["frobenius_normalize"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return frobenius_ext.frobenius_normalize(x)
