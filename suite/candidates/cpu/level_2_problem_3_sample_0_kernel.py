import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <cmath>
#include <vector>

// y = x @ w^T + b for x (rows, K), w (O, K). w is transposed once so that the innermost loop
// runs over contiguous outputs (i-k-j order), which the compiler vectorises.
static void linear_rows(const float* x, const float* w, const float* b, float* y,
                        int64_t rows, int64_t K, int64_t O) {
    std::vector<float> wt(K * O);
    for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < K; ++k) wt[k * O + o] = w[o * K + k];
    for (int64_t r = 0; r < rows; ++r) {
        float* __restrict__ yr = y + r * O;
        for (int64_t o = 0; o < O; ++o) yr[o] = 0.f;
        for (int64_t k = 0; k < K; ++k) {
            const float a = x[r * K + k];
            const float* __restrict__ wr = wt.data() + k * O;
            for (int64_t o = 0; o < O; ++o) yr[o] += a * wr[o];
        }
        for (int64_t o = 0; o < O; ++o) yr[o] += b[o];
    }
}

// y = scale * (x @ w^T + b) + x
at::Tensor linear_scale_residual_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                         double scale) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor w = weight.contiguous();
    at::Tensor b = bias.contiguous();
    const int64_t K = w.size(1), O = w.size(0);
    TORCH_CHECK(O == K && in.size(-1) == K && b.numel() == O, "shape mismatch");
    const int64_t rows = in.numel() / K;
    at::Tensor out = at::empty_like(in);
    const float* xp = in.data_ptr<float>();
    float* y = out.data_ptr<float>();
    linear_rows(xp, w.data_ptr<float>(), b.data_ptr<float>(), y, rows, K, O);
    const float s = (float)scale;
    for (int64_t i = 0; i < rows * O; ++i) y[i] = y[i] * s + xp[i];
    return out;
}
"""

ext = load_inline(name="suite_l2_p3_linear_scale_residual_cpu", cpp_sources=cpp_source,
                  functions=["linear_scale_residual_forward"], extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        return ext.linear_scale_residual_forward(x, self.linear.weight, self.linear.bias, self.scale)
