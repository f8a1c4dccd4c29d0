import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <cmath>

// Softmax over the last dimension: subtract the row maximum, exponentiate, normalise.
at::Tensor softmax_forward(const at::Tensor& x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0, "expected a non-empty last dimension");
    at::Tensor in = x.contiguous();
    at::Tensor out = at::empty_like(in);
    const int64_t cols = in.size(-1);
    const int64_t rows = in.numel() / cols;
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = src + r * cols;
        float* orow = dst + r * cols;
        float m = row[0];
        for (int64_t c = 1; c < cols; ++c) m = row[c] > m ? row[c] : m;
        float sum = 0.f;
        for (int64_t c = 0; c < cols; ++c) {
            orow[c] = std::exp(row[c] - m);
            sum += orow[c];
        }
        const float inv = 1.f / sum;
        for (int64_t c = 0; c < cols; ++c) orow[c] *= inv;
    }
    return out;
}
"""

ext = load_inline(name="suite_l1_p2_softmax_cpu", cpp_sources=cpp_source, functions=["softmax_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
