# wrong: InstanceNorm, one block per (n, c) plane; the block reduction keeps only warp 0's partial sums, so mean/variance come from 1/8 of the plane divided by the full count
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor instancenorm_forward(torch::Tensor x, double eps);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <climits>
#include <cstdint>

#define IN_THREADS 256

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// One block normalises one (n, c) plane of hw contiguous values.
__global__ void instancenorm_plane_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t hw,
                                          float eps) {
    __shared__ float s_mean;
    __shared__ float s_rstd;
    const int64_t plane = blockIdx.x;
    const float* xp = x + plane * hw;
    float* yp = y + plane * hw;

    float sum = 0.0f, sq = 0.0f;
    for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) {
        const float v = xp[i];
        sum += v;
        sq = fmaf(v, v, sq);
    }
    sum = warp_reduce_sum(sum);
    sq = warp_reduce_sum(sq);
    if (threadIdx.x == 0) {
        const float mean = sum / (float)hw;
        const float var = fmaxf(sq / (float)hw - mean * mean, 0.0f);
        s_mean = mean;
        s_rstd = rsqrtf(var + eps);
    }
    __syncthreads();
    const float mean = s_mean;
    const float rstd = s_rstd;

    for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) yp[i] = (xp[i] - mean) * rstd;
}

torch::Tensor instancenorm_forward(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "instancenorm_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "instancenorm_forward: expected float32");
    TORCH_CHECK(x.dim() >= 3, "instancenorm_forward: expected (N, C, ...) input");
    const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    if (input.numel() == 0) return out;
    const int64_t planes = input.size(0) * input.size(1);
    const int64_t hw = input.numel() / planes;
    TORCH_CHECK(planes <= INT_MAX, "instancenorm_forward: too many planes");
    instancenorm_plane_kernel<<<(unsigned int)planes, IN_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), hw, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

instancenorm_ext = load_inline(
    name="kb_l1_p34_instancenorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["instancenorm_forward"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        # affine=False, track_running_stats=False: no parameters, statistics always from the input
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return instancenorm_ext.instancenorm_forward(x, float(self.inorm.eps))
