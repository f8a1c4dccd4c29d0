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

// Single-head self-attention for x (B, S, E): qkv = x Wqkv^T + bqkv, scores = (q k^T) / sqrt(E),
// row softmax, ctx = P v, out = ctx Wproj^T + bproj.
at::Tensor attention_forward(const at::Tensor& x, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                             const at::Tensor& proj_weight, const at::Tensor& proj_bias) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    TORCH_CHECK(x.dim() == 3, "expected (batch, seq, embed)");
    at::Tensor in = x.contiguous();
    at::Tensor wqkv = qkv_weight.contiguous();
    at::Tensor bqkv = qkv_bias.contiguous();
    at::Tensor wp = proj_weight.contiguous();
    at::Tensor bp = proj_bias.contiguous();
    const int64_t B = in.size(0), S = in.size(1), E = in.size(2);
    TORCH_CHECK(wqkv.size(0) == 3 * E && wqkv.size(1) == E && wp.size(0) == E && wp.size(1) == E, "shape mismatch");
    std::vector<float> qkv(B * S * 3 * E);
    linear_rows(in.data_ptr<float>(), wqkv.data_ptr<float>(), bqkv.data_ptr<float>(), qkv.data(), B * S, E, 3 * E);
    const float inv_sqrt = 1.f / std::sqrt((float)E);
    std::vector<float> kt(E * S), probs(S), ctx(B * S * E);
    for (int64_t b = 0; b < B; ++b) {
        const float* base = qkv.data() + b * S * 3 * E;
        // k transposed to (E, S) so each score row is built with contiguous multiply-adds.
        for (int64_t j = 0; j < S; ++j)
            for (int64_t d = 0; d < E; ++d) kt[d * S + j] = base[j * 3 * E + E + d];
        for (int64_t i = 0; i < S; ++i) {
            const float* q = base + i * 3 * E;
            float* __restrict__ p = probs.data();
            for (int64_t j = 0; j < S; ++j) p[j] = 0.f;
            for (int64_t d = 0; d < E; ++d) {
                const float qv = q[d];
                const float* __restrict__ krow = kt.data() + d * S;
                for (int64_t j = 0; j < S; ++j) p[j] += qv * krow[j];
            }
            float m = -INFINITY;
            for (int64_t j = 0; j < S; ++j) {
                p[j] = p[j] * inv_sqrt;
                m = p[j] > m ? p[j] : m;
            }
            float sum = 0.f;
            for (int64_t j = 0; j < S; ++j) {
                p[j] = std::exp(p[j] - m);
                sum += p[j];
            }
            const float inv = 1.f / sum;
            float* __restrict__ c = ctx.data() + (b * S + i) * E;
            for (int64_t d = 0; d < E; ++d) c[d] = 0.f;
            for (int64_t j = 0; j < S; ++j) {
                const float pj = p[j] * inv;
                const float* __restrict__ v = base + j * 3 * E + 2 * E;
                for (int64_t d = 0; d < E; ++d) c[d] += pj * v[d];
            }
        }
    }
    at::Tensor out = at::empty({B, S, E}, in.options());
    linear_rows(ctx.data(), wp.data_ptr<float>(), bp.data_ptr<float>(), out.data_ptr<float>(), B * S, E, E);
    return out;
}
"""

ext = load_inline(name="suite_l3_p2_attention_cpu", cpp_sources=cpp_source, functions=["attention_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return ext.attention_forward(x, self.qkv.weight, self.qkv.bias, self.proj.weight, self.proj.bias)
