# An honest CUDA candidate for KernelBench level 1 problem 19 (ReLU): a grid-stride loop over
# float4 vectors, with a scalar tail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void relu_vec4(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = in[i];
        v.x = fmaxf(v.x, 0.f);
        v.y = fmaxf(v.y, 0.f);
        v.z = fmaxf(v.z, 0.f);
        v.w = fmaxf(v.w, 0.f);
        out[i] = v;
    }
}

__global__ void relu_tail(const float* __restrict__ in, float* __restrict__ out, int64_t start,
                          int64_t n) {
    int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(in[i], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "expects a float32 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    int64_t n = input.numel();
    int64_t n4 = n / 4;
    int threads = 256;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, input.get_device());
    int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n4 + threads - 1) / threads, (int64_t)sms * 16));
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0)
        relu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(input.data_ptr<float>()),
                                                  reinterpret_cast<float4*>(out.data_ptr<float>()), n4);
    if (n % 4)
        relu_tail<<<1, 4, 0, stream>>>(input.data_ptr<float>(), out.data_ptr<float>(), n4 * 4, n);
    return out;
}
"""

ext = load_inline(name="kbench_bench_relu_vec4", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["relu_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_forward(x)
