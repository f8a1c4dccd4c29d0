import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor scaled_bias_relu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// One pass over memory instead of three: y[i] = relu(x[i] * scale[c] + bias[c]), c = i % features.
__global__ void scaled_bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                        const float* __restrict__ bias, float* __restrict__ y,
                                        int64_t n, int64_t features) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        const int64_t c = i % features;
        const float v = x[i] * scale[c] + bias[c];
        y[i] = v < 0.f ? 0.f : v;
    }
}

torch::Tensor scaled_bias_relu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "x must be a float32 CUDA tensor");
    TORCH_CHECK(scale.is_cuda() && bias.is_cuda(), "scale and bias must be CUDA tensors");
    auto in = x.contiguous();
    auto s = scale.contiguous();
    auto b = bias.contiguous();
    const int64_t features = s.numel();
    TORCH_CHECK(in.dim() >= 1 && in.size(-1) == features && b.numel() == features,
                "scale and bias must match the last dimension of x");
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
    scaled_bias_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        in.data_ptr<float>(), s.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n, features);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="example_scaled_bias_relu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["scaled_bias_relu"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # The same parameters, created in the same order as Model's, so that both start equal.
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scaled_bias_relu(x, self.scale, self.bias)
