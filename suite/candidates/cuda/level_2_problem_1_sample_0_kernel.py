import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor conv_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor conv_bias, torch::Tensor bias, int64_t pad);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define CHECK_INPUT(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == at::kFloat, #t " must be a float CUDA tensor")

// Direct convolution (stride 1, zero padding), one output pixel per thread. Block (x: pixels,
// y: output channel, z: image); the output channel's filter is staged in shared memory.
__global__ void conv_bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ conv_bias, const float* __restrict__ bias,
                                      float* __restrict__ y, int C, int H, int W, int OC, int KH, int KW,
                                      int OH, int OW, int pad) {
    extern __shared__ float filt[];
    const int oc = blockIdx.y, n = blockIdx.z;
    const int fsize = C * KH * KW;
    for (int i = threadIdx.x; i < fsize; i += blockDim.x) filt[i] = w[(int64_t)oc * fsize + i];
    __syncthreads();
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= OH * OW) return;
    const int oh = p / OW, ow = p % OW;
    const float* img = x + (int64_t)n * C * H * W;
    float acc = 0.f;
    for (int c = 0; c < C; ++c) {
        const float* plane = img + (int64_t)c * H * W;
        const float* f = filt + c * KH * KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh + kh - pad;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow + kw - pad;
                if (iw < 0 || iw >= W) continue;
                acc += f[kh * KW + kw] * plane[ih * W + iw];
            }
        }
    }
    const float v = (acc + conv_bias[oc]) + bias[oc];
    y[(((int64_t)n * OC + oc) * OH + oh) * OW + ow] = v > 0.f ? v : 0.f;
}

torch::Tensor conv_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor conv_bias,
                                     torch::Tensor bias, int64_t pad) {
    CHECK_INPUT(x);
    CHECK_INPUT(weight);
    CHECK_INPUT(conv_bias);
    CHECK_INPUT(bias);
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && x.size(1) == weight.size(1), "shape mismatch");
    auto in = x.contiguous();
    auto w = weight.contiguous();
    auto cb = conv_bias.contiguous();
    auto b = bias.contiguous();
    const int N = (int)in.size(0), C = (int)in.size(1), H = (int)in.size(2), W = (int)in.size(3);
    const int OC = (int)w.size(0), KH = (int)w.size(2), KW = (int)w.size(3);
    const int OH = H + 2 * (int)pad - KH + 1, OW = W + 2 * (int)pad - KW + 1;
    TORCH_CHECK(cb.numel() == OC && b.numel() == OC, "bias size mismatch");
    auto out = torch::empty({N, OC, OH, OW}, in.options());
    if (out.numel() == 0) return out;
    const int threads = 256;
    const size_t smem = (size_t)C * KH * KW * sizeof(float);
    TORCH_CHECK(smem <= 48 * 1024, "filter too large for shared memory");
    dim3 grid((OH * OW + threads - 1) / threads, OC, N);
    conv_bias_relu_kernel<<<grid, threads, smem, at::cuda::getCurrentCUDAStream()>>>(
        in.data_ptr<float>(), w.data_ptr<float>(), cb.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(),
        C, H, W, OC, KH, KW, OH, OW, (int)pad);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="suite_l2_p1_conv_bias_relu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["conv_bias_relu_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return ext.conv_bias_relu_forward(x, self.conv.weight, self.conv.bias, self.bias, self.conv.padding[0])
