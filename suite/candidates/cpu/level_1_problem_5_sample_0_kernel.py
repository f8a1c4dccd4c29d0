import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>

// C = A @ B. Loop order i-k-j so the innermost loop streams contiguous rows of B and C; four rows
// of C are updated together so each row of B loaded from cache serves four multiply-adds.
at::Tensor matmul_forward(const at::Tensor& a, const at::Tensor& b) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "expected CPU tensors");
    TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "expected float tensors");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "shape mismatch");
    at::Tensor A = a.contiguous();
    at::Tensor B = b.contiguous();
    const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
    at::Tensor C = at::zeros({M, N}, A.options());
    const float* ap = A.data_ptr<float>();
    const float* bp = B.data_ptr<float>();
    float* cp = C.data_ptr<float>();
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) {
        float* __restrict__ c0 = cp + i * N;
        float* __restrict__ c1 = c0 + N;
        float* __restrict__ c2 = c1 + N;
        float* __restrict__ c3 = c2 + N;
        for (int64_t k = 0; k < K; ++k) {
            const float a0 = ap[i * K + k], a1 = ap[(i + 1) * K + k];
            const float a2 = ap[(i + 2) * K + k], a3 = ap[(i + 3) * K + k];
            const float* __restrict__ brow = bp + k * N;
            for (int64_t j = 0; j < N; ++j) {
                const float bv = brow[j];
                c0[j] += a0 * bv;
                c1[j] += a1 * bv;
                c2[j] += a2 * bv;
                c3[j] += a3 * bv;
            }
        }
    }
    for (; i < M; ++i) {
        float* crow = cp + i * N;
        for (int64_t k = 0; k < K; ++k) {
            const float av = ap[i * K + k];
            const float* brow = bp + k * N;
            for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
        }
    }
    return C;
}
"""

ext = load_inline(name="suite_l1_p5_matmul_cpu", cpp_sources=cpp_source, functions=["matmul_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul_forward(A, B)
