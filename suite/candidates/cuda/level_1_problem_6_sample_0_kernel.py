import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor bias_add_forward(torch::Tensor x, torch::Tensor bias);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define CHECK_INPUT(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == at::kFloat, #t " must be a float CUDA tensor")

// y[i] = x[i] + bias[i % cols], grid-stride over the flattened (rows, cols) tensor.
__global__ void bias_add_kernel(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                int64_t n, int64_t cols) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] + bias[i % cols];
}

torch::Tensor bias_add_forward(torch::Tensor x, torch::Tensor bias) {
    CHECK_INPUT(x);
    CHECK_INPUT(bias);
    auto in = x.contiguous();
    auto b = bias.contiguous();
    const int64_t cols = b.numel();
    TORCH_CHECK(in.dim() >= 1 && in.size(-1) == cols, "bias must match the last dimension");
    auto out = torch::empty_like(in);
    const int64_t n = in.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
    bias_add_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        in.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="suite_l1_p6_biasadd_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["bias_add_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.bias_add_forward(x, self.bias)
