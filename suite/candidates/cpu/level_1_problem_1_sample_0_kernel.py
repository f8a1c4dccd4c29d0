import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>

at::Tensor relu_forward(const at::Tensor& x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    at::Tensor in = x.contiguous();
    at::Tensor out = at::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > 0.f ? src[i] : 0.f;
    return out;
}
"""

ext = load_inline(name="suite_l1_p1_relu_cpu", cpp_sources=cpp_source, functions=["relu_forward"],
                  extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_forward(x)
