import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <algorithm>

// Direct NCHW convolution, stride 1, zero padding `pad`, fused with both biases and ReLU.
// For each (n, oc) the output plane is accumulated tap by tap: the innermost loop runs along a
// contiguous output row, with its valid column range computed once per tap.
at::Tensor conv_bias_relu_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& conv_bias,
                                  const at::Tensor& bias, int64_t pad) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "expected a float CPU tensor");
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && x.size(1) == weight.size(1), "shape mismatch");
    at::Tensor in = x.contiguous();
    at::Tensor w = weight.contiguous();
    at::Tensor cb = conv_bias.contiguous();
    at::Tensor b = bias.contiguous();
    const int64_t N = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
    const int64_t OC = w.size(0), KH = w.size(2), KW = w.size(3);
    const int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
    TORCH_CHECK(cb.numel() == OC && b.numel() == OC, "bias size mismatch");
    at::Tensor out = at::empty({N, OC, OH, OW}, in.options());
    const float* ip = in.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* cbp = cb.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* op = out.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t oc = 0; oc < OC; ++oc) {
            float* plane = op + (n * OC + oc) * OH * OW;
            std::fill(plane, plane + OH * OW, 0.f);
            for (int64_t c = 0; c < C; ++c) {
                const float* src = ip + (n * C + c) * H * W;
                const float* wk = wp + (oc * C + c) * KH * KW;
                for (int64_t kh = 0; kh < KH; ++kh) {
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const float wv = wk[kh * KW + kw];
                        const int64_t ow0 = std::max<int64_t>(0, pad - kw);
                        const int64_t ow1 = std::min<int64_t>(OW, W + pad - kw);
                        for (int64_t oh = 0; oh < OH; ++oh) {
                            const int64_t ih = oh + kh - pad;
                            if (ih < 0 || ih >= H) continue;
                            const float* srow = src + ih * W + (kw - pad);
                            float* orow = plane + oh * OW;
                            for (int64_t ow = ow0; ow < ow1; ++ow) orow[ow] += wv * srow[ow];
                        }
                    }
                }
            }
            const float shift_conv = cbp[oc], shift = bp[oc];
            for (int64_t i = 0; i < OH * OW; ++i) {
                const float v = (plane[i] + shift_conv) + shift;
                plane[i] = v > 0.f ? v : 0.f;
            }
        }
    }
    return out;
}
"""

ext = load_inline(name="suite_l2_p1_conv_bias_relu_cpu", cpp_sources=cpp_source,
                  functions=["conv_bias_relu_forward"], extra_cflags=["-O3"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return ext.conv_bias_relu_forward(x, self.conv.weight, self.conv.bias, self.bias, self.conv.padding[0])
