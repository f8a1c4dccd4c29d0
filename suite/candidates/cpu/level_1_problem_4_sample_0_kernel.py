import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <cmath>

// Layer norm over the last dimension: two passes (mean, then variance of the centred values).
at::Tensor layer_norm_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              double eps) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor w = weight.contiguous();
    at::Tensor b = bias.contiguous();
    const int64_t cols = in.size(-1);
    TORCH_CHECK(w.numel() == cols && b.numel() == cols, "weight and bias must match the last dimension");
    const int64_t rows = in.numel() / cols;
    at::Tensor out = at::empty_like(in);
    const float* src = in.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = src + r * cols;
        float* orow = dst + r * cols;
        float sum = 0.f;
        for (int64_t c = 0; c < cols; ++c) sum += row[c];
        const float mean = sum / (float)cols;
        float sq = 0.f;
        for (int64_t c = 0; c < cols; ++c) {
            const float d = row[c] - mean;
            sq += d * d;
        }
        const float rstd = 1.f / std::sqrt(sq / (float)cols + (float)eps);
        for (int64_t c = 0; c < cols; ++c) orow[c] = (row[c] - mean) * rstd * wp[c] + bp[c];
    }
    return out;
}
"""

ext = load_inline(name="suite_l1_p4_layernorm_cpu", cpp_sources=cpp_source, functions=["layer_norm_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return ext.layer_norm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
