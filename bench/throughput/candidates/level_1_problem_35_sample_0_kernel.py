# compile_error: GroupNorm, one block per (n, group) for the statistics then a per-channel affine pass; the stats kernel calls block_reduce_sum2 before it is declared (undefined identifier)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor groupnorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                int64_t num_groups, double eps);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <climits>
#include <cstdint>

#define GN_THREADS 512

// One block per (n, g): mean and rstd of the (C / G) * S contiguous values of the group.
__global__ void groupnorm_stats_kernel(const float* __restrict__ x, int64_t group_elems,
                                       float* __restrict__ mean_out, float* __restrict__ rstd_out, float eps) {
    const int64_t ng = blockIdx.x;
    const float* xg = x + ng * group_elems;
    double sum = 0.0, sq = 0.0;
    for (int64_t i = threadIdx.x; i < group_elems; i += blockDim.x) {
        const double v = (double)xg[i];
        sum += v;
        sq += v * v;
    }
    block_reduce_sum2(sum, sq);
    if (threadIdx.x == 0) {
        const double mean = sum / (double)group_elems;
        const double var = fmax(sq / (double)group_elems - mean * mean, 0.0);
        mean_out[ng] = (float)mean;
        rstd_out[ng] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

// Sums a and b over the block; thread 0 ends up with the totals.
__device__ void block_reduce_sum2(double& a, double& b) {
    __shared__ double sa[GN_THREADS];
    __shared__ double sb[GN_THREADS];
    const int tid = threadIdx.x;
    sa[tid] = a;
    sb[tid] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sa[tid] += sa[tid + s];
            sb[tid] += sb[tid + s];
        }
        __syncthreads();
    }
    a = sa[0];
    b = sb[0];
}

__global__ void groupnorm_apply_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total,
                                       int64_t C, int64_t S, int64_t channels_per_group,
                                       const float* __restrict__ mean, const float* __restrict__ rstd,
                                       const float* __restrict__ weight, const float* __restrict__ bias) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t nc = i / S;
        const int64_t c = nc % C;
        const int64_t ng = nc / channels_per_group;
        y[i] = (x[i] - mean[ng]) * rstd[ng] * weight[c] + bias[c];
    }
}

torch::Tensor groupnorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                int64_t num_groups, double eps) {
    TORCH_CHECK(x.is_cuda(), "groupnorm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "groupnorm_forward: expected float32");
    TORCH_CHECK(x.dim() >= 2, "groupnorm_forward: expected (N, C, ...) input");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t N = input.size(0), C = input.size(1);
    TORCH_CHECK(C % num_groups == 0, "groupnorm_forward: channels must divide into groups");
    if (input.numel() == 0) return out;
    const int64_t S = input.numel() / (N * C);
    const int64_t cpg = C / num_groups;
    const int64_t groups_total = N * num_groups;
    TORCH_CHECK(groups_total <= INT_MAX, "groupnorm_forward: too many groups");
    auto mean = torch::empty({groups_total}, input.options());
    auto rstd = torch::empty({groups_total}, input.options());
    auto stream = at::cuda::getCurrentCUDAStream();

    groupnorm_stats_kernel<<<(unsigned int)groups_total, GN_THREADS, 0, stream>>>(
        input.data_ptr<float>(), cpg * S, mean.data_ptr<float>(), rstd.data_ptr<float>(), (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();

    const int64_t total = input.numel();
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, (int64_t)sms * 32));
    groupnorm_apply_kernel<<<blocks, 256, 0, stream>>>(input.data_ptr<float>(), out.data_ptr<float>(), total, C, S,
                                                       cpg, mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                                       weight.contiguous().data_ptr<float>(),
                                                       bias.contiguous().data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

groupnorm_ext = load_inline(
    name="kb_l1_p35_groupnorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["groupnorm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super(ModelNew, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gn = self.gn
        return groupnorm_ext.groupnorm_forward(x, gn.weight, gn.bias, gn.num_groups, float(gn.eps))
