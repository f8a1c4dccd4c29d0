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

// Exact GELU: 0.5 v (1 + erf(v / sqrt(2))).
static inline float gelu(float v) { return 0.5f * v * (1.f + std::erf(v * 0.70710678118654752f)); }

// x + fc2(gelu(fc1(layer_norm(x)))) over the rows of x (..., E).
at::Tensor ffn_forward(const at::Tensor& x, const at::Tensor& ln_weight, const at::Tensor& ln_bias, double eps,
                       const at::Tensor& w1, const at::Tensor& b1, const at::Tensor& w2, const at::Tensor& b2) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor g = ln_weight.contiguous(), beta = ln_bias.contiguous();
    at::Tensor W1 = w1.contiguous(), B1 = b1.contiguous(), W2 = w2.contiguous(), B2 = b2.contiguous();
    const int64_t E = in.size(-1), H = W1.size(0);
    TORCH_CHECK(W1.size(1) == E && W2.size(0) == E && W2.size(1) == H && g.numel() == E, "shape mismatch");
    const int64_t rows = in.numel() / E;
    const float* xp = in.data_ptr<float>();
    std::vector<float> normed(rows * E), hidden(rows * H);
    layer_norm_rows(xp, g.data_ptr<float>(), beta.data_ptr<float>(), normed.data(), rows, E, (float)eps);
    linear_rows(normed.data(), W1.data_ptr<float>(), B1.data_ptr<float>(), hidden.data(), rows, E, H);
    for (auto& v : hidden) v = gelu(v);
    at::Tensor out = at::empty_like(in);
    float* y = out.data_ptr<float>();
    linear_rows(hidden.data(), W2.data_ptr<float>(), B2.data_ptr<float>(), y, rows, H, E);
    for (int64_t i = 0; i < rows * E; ++i) y[i] = xp[i] + y[i];
    return out;
}
"""

ext = load_inline(name="suite_l3_p3_prenorm_ffn_cpu", cpp_sources=cpp_source, functions=["ffn_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, embed_dim, hidden_dim):
        super().__init__()
        self.ln = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, embed_dim)

    def forward(self, x):
        return ext.ffn_forward(x, self.ln.weight, self.ln.bias, self.ln.eps,
                               self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias)
