import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>

// y[r][c] = x[r][c] + bias[c] over a row-major (rows, features) view.
at::Tensor bias_add_forward(const at::Tensor& x, const at::Tensor& bias) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor b = bias.contiguous();
    const int64_t cols = b.numel();
    TORCH_CHECK(in.dim() >= 1 && in.size(-1) == cols, "bias must match the last dimension");
    const int64_t rows = in.numel() / cols;
    at::Tensor out = at::empty_like(in);
    const float* src = in.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r * cols + c] + bp[c];
    return out;
}
"""

ext = load_inline(name="suite_l1_p6_biasadd_cpu", cpp_sources=cpp_source, functions=["bias_add_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.bias_add_forward(x, self.bias)
