import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <cmath>
#include <vector>

// Layer norm of each row of x (rows, C) into y: mean, variance of the centred values, affine.
static void layer_norm_rows(const float* x, const float* g, const float* beta, float* y,
                            int64_t rows, int64_t C, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x + r * C;
        float* out = y + r * C;
        float sum = 0.f;
        for (int64_t c = 0; c < C; ++c) sum += row[c];
        const float mean = sum / (float)C;
        float sq = 0.f;
        for (int64_t c = 0; c < C; ++c) {
            const float d = row[c] - mean;
            sq += d * d;
        }
        const float rstd = 1.f / std::sqrt(sq / (float)C + eps);
        for (int64_t c = 0; c < C; ++c) out[c] = (row[c] - mean) * rstd * g[c] + beta[c];
    }
}

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

at::Tensor layer_norm_linear_forward(const at::Tensor& x, const at::Tensor& ln_weight, const at::Tensor& ln_bias,
                                     double eps, const at::Tensor& weight, const at::Tensor& bias) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor g = ln_weight.contiguous();
    at::Tensor beta = ln_bias.contiguous();
    at::Tensor w = weight.contiguous();
    at::Tensor b = bias.contiguous();
    const int64_t K = w.size(1), O = w.size(0);
    TORCH_CHECK(in.size(-1) == K && g.numel() == K && beta.numel() == K && b.numel() == O, "shape mismatch");
    const int64_t rows = in.numel() / K;
    std::vector<float> normed(rows * K);
    layer_norm_rows(in.data_ptr<float>(), g.data_ptr<float>(), beta.data_ptr<float>(), normed.data(), rows, K,
                    (float)eps);
    std::vector<int64_t> shape(in.sizes().begin(), in.sizes().end());
    shape.back() = O;
    at::Tensor out = at::empty(shape, in.options());
    linear_rows(normed.data(), w.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), rows, K, O);
    return out;
}
"""

ext = load_inline(name="suite_l2_p4_layernorm_linear_cpu", cpp_sources=cpp_source,
                  functions=["layer_norm_linear_forward"], extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.ln = nn.LayerNorm(in_features)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.layer_norm_linear_forward(x, self.ln.weight, self.ln.bias, self.ln.eps,
                                             self.linear.weight, self.linear.bias)
