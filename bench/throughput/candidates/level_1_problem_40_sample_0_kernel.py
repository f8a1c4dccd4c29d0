# wrong: LayerNorm over the trailing (64, 256, 256), one block per row, double sums; the variance is (sum_sq - mean^2) / n instead of sum_sq / n - mean^2, so it is E[x^2] (~1/3) not Var (~1/12)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <climits>
#include <cstdint>

#define LN_THREADS 1024

// One block per row of n = prod(normalized_shape) values.
__global__ void __launch_bounds__(LN_THREADS) layernorm_rows_kernel(const float* __restrict__ x, float* __restrict__ y,
                                      const float* __restrict__ weight, const float* __restrict__ bias,
                                      int64_t n, float eps) {
    __shared__ double s_sum[LN_THREADS];
    __shared__ double s_sq[LN_THREADS];
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x;
    const float* xr = x + row * n;
    float* yr = y + row * n;

    double sum = 0.0, sq = 0.0;
    for (int64_t j = tid; j < n; j += blockDim.x) {
        const double v = (double)xr[j];
        sum += v;
        sq += v * v;
    }
    s_sum[tid] = sum;
    s_sq[tid] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            s_sum[tid] += s_sum[tid + s];
            s_sq[tid] += s_sq[tid + s];
        }
        __syncthreads();
    }
    const double inv_n = 1.0 / (double)n;
    const double mean = s_sum[0] * inv_n;
    const double var = (s_sq[0] - mean * mean) * inv_n;
    const float meanf = (float)mean;
    const float rstd = (float)(1.0 / sqrt(var + (double)eps));

    for (int64_t j = tid; j < n; j += blockDim.x) {
        yr[j] = (xr[j] - meanf) * rstd * weight[j] + bias[j];
    }
}

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda(), "layernorm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "layernorm_forward: expected float32");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto w = weight.contiguous();
    auto b = bias.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = w.numel();
    TORCH_CHECK(n > 0 && input.numel() % n == 0, "layernorm_forward: input does not end in normalized_shape");
    if (input.numel() == 0) return out;
    const int64_t rows = input.numel() / n;
    TORCH_CHECK(rows <= INT_MAX, "layernorm_forward: too many rows");
    layernorm_rows_kernel<<<(unsigned int)rows, LN_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), n, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

layernorm_ext = load_inline(
    name="kb_l1_p40_layernorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layernorm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ln = self.ln
        return layernorm_ext.layernorm_forward(x, ln.weight, ln.bias, float(ln.eps))
