import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

// One pass over memory instead of three: y[r][c] = relu(x[r][c] * scale[c] + bias[c]). Rows are
// shared among threads; the inner loop is contiguous, so the compiler vectorises it at -O3.
torch::Tensor scaled_bias_relu(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat, "x must be a float32 CPU tensor");
    auto in = x.contiguous();
    auto s = scale.contiguous();
    auto b = bias.contiguous();
    const int64_t features = s.numel();
    TORCH_CHECK(in.dim() >= 1 && in.size(-1) == features && b.numel() == features,
                "scale and bias must match the last dimension of x");
    auto out = torch::empty_like(in);
    const int64_t rows = features == 0 ? 0 : in.numel() / features;
    const float* xp = in.data_ptr<float>();
    const float* sp = s.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* yp = out.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* xr = xp + r * features;
            float* yr = yp + r * features;
            for (int64_t c = 0; c < features; ++c) {
                const float v = xr[c] * sp[c] + bp[c];
                yr[c] = v < 0.f ? 0.f : v;
            }
        }
    });
    return out;
}
"""

ext = load_inline(name="example_scaled_bias_relu_cpu", cpp_sources=cpp_source, functions=["scaled_bias_relu"],
                  extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # The same parameters, created in the same order as Model's, so that both start equal.
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.scaled_bias_relu(x, self.scale, self.bias)
