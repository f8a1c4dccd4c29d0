import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <vector>

// Mean over `dim`: the input is viewed as (outer, reduced, inner); for each outer index the
// reduced rows are accumulated into an inner-sized buffer, so the inner loop is contiguous.
at::Tensor mean_forward(const at::Tensor& x, int64_t dim) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    TORCH_CHECK(x.dim() >= 1, "expected at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "dim out of range");
    at::Tensor in = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= in.size(d);
    for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.size(d);
    const int64_t reduced = in.size(dim);
    std::vector<int64_t> shape(in.sizes().begin(), in.sizes().end());
    shape.erase(shape.begin() + dim);
    at::Tensor out = at::empty(shape, in.options());
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    std::vector<float> acc(inner);
    for (int64_t o = 0; o < outer; ++o) {
        std::fill(acc.begin(), acc.end(), 0.f);
        const float* block = src + o * reduced * inner;
        for (int64_t r = 0; r < reduced; ++r) {
            const float* row = block + r * inner;
            for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        }
        for (int64_t i = 0; i < inner; ++i) dst[o * inner + i] = acc[i] / (float)reduced;
    }
    return out;
}
"""

ext = load_inline(name="suite_l1_p3_mean_cpu", cpp_sources=cpp_source, functions=["mean_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_forward(x, self.dim)
