# runtime_error: BatchNorm (training-mode batch statistics, running-stat update) written for (N, C, L) input; a TORCH_CHECK on x.dim() == 3 rejects the real 4-D (N, C, H, W) input
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                torch::Tensor running_mean, torch::Tensor running_var,
                                bool training, double momentum, double eps);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

#define BN_STAT_THREADS 512

// One block per channel c: batch mean and biased variance over the N * L values of channel c
// of an (N, C, L) tensor, accumulated in double. Also updates the running statistics.
__global__ void bn_channel_stats_kernel(const float* __restrict__ x, int64_t N, int64_t C, int64_t L,
                                        float* __restrict__ mean_out, float* __restrict__ invstd_out,
                                        float* __restrict__ running_mean, float* __restrict__ running_var,
                                        float momentum, float eps) {
    __shared__ double s_sum[BN_STAT_THREADS];
    __shared__ double s_sq[BN_STAT_THREADS];
    const int c = blockIdx.x;
    const int tid = threadIdx.x;
    const int64_t count = N * L;

    double sum = 0.0, sq = 0.0;
    for (int64_t i = tid; i < count; i += blockDim.x) {
        const int64_t n = i / L;
        const int64_t l = i - n * L;
        const double v = (double)x[(n * C + c) * L + l];
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
    if (tid == 0) {
        const double mean = s_sum[0] / (double)count;
        const double var = fmax(s_sq[0] / (double)count - mean * mean, 0.0);
        mean_out[c] = (float)mean;
        invstd_out[c] = (float)(1.0 / sqrt(var + (double)eps));
        const double unbiased = count > 1 ? var * (double)count / (double)(count - 1) : var;
        running_mean[c] = (float)((1.0 - momentum) * running_mean[c] + momentum * mean);
        running_var[c] = (float)((1.0 - momentum) * running_var[c] + momentum * unbiased);
    }
}

__global__ void bn_running_invstd_kernel(const float* __restrict__ running_var, float* __restrict__ invstd,
                                         int64_t C, float eps) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) invstd[c] = rsqrtf(running_var[c] + eps);
}

__global__ void bn_apply_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total, int64_t C,
                                int64_t L, const float* __restrict__ mean, const float* __restrict__ invstd,
                                const float* __restrict__ weight, const float* __restrict__ bias) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t c = (i / L) % C;
        y[i] = (x[i] - mean[c]) * invstd[c] * weight[c] + bias[c];
    }
}

torch::Tensor batchnorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                torch::Tensor running_mean, torch::Tensor running_var,
                                bool training, double momentum, double eps) {
    TORCH_CHECK(x.is_cuda(), "batchnorm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "batchnorm_forward: expected float32");
    TORCH_CHECK(x.dim() == 3, "batchnorm_forward: expected input of shape (N, C, L), got ", x.dim(), " dims");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t N = input.size(0), C = input.size(1), L = input.size(2);
    TORCH_CHECK(weight.numel() == C && bias.numel() == C, "batchnorm_forward: parameter size mismatch");
    if (input.numel() == 0) return out;
    auto stream = at::cuda::getCurrentCUDAStream();

    torch::Tensor mean, invstd;
    if (training) {
        mean = torch::empty({C}, input.options());
        invstd = torch::empty({C}, input.options());
        bn_channel_stats_kernel<<<(unsigned int)C, BN_STAT_THREADS, 0, stream>>>(
            input.data_ptr<float>(), N, C, L, mean.data_ptr<float>(), invstd.data_ptr<float>(),
            running_mean.data_ptr<float>(), running_var.data_ptr<float>(), (float)momentum, (float)eps);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        mean = running_mean.contiguous();
        invstd = torch::empty({C}, input.options());
        bn_running_invstd_kernel<<<(unsigned int)((C + 255) / 256), 256, 0, stream>>>(
            running_var.data_ptr<float>(), invstd.data_ptr<float>(), C, (float)eps);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }

    const int64_t total = input.numel();
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, (int64_t)sms * 32));
    bn_apply_kernel<<<blocks, 256, 0, stream>>>(input.data_ptr<float>(), out.data_ptr<float>(), total, C, L,
                                                mean.data_ptr<float>(), invstd.data_ptr<float>(),
                                                weight.contiguous().data_ptr<float>(),
                                                bias.contiguous().data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

batchnorm_ext = load_inline(
    name="kb_l1_p33_batchnorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["batchnorm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        use_batch_stats = bn.training or bn.running_mean is None
        y = batchnorm_ext.batchnorm_forward(
            x, bn.weight, bn.bias, bn.running_mean, bn.running_var,
            use_batch_stats, float(bn.momentum), float(bn.eps))
        if bn.training and bn.num_batches_tracked is not None:
            bn.num_batches_tracked.add_(1)
        return y
