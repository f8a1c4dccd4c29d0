import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_bias_relu_kernel(x_ptr, scale_ptr, bias_ptr, y_ptr, n_elements, features, BLOCK: tl.constexpr):
    # One pass over memory instead of three: y = relu(x * scale[c] + bias[c]), c = offset % features.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    cols = offsets % features
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.load(scale_ptr + cols, mask=mask)
    b = tl.load(bias_ptr + cols, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x * s + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # The same parameters, created in the same order as Model's, so that both start equal.
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        assert x.is_cuda and x.dtype == torch.float32
        x = x.contiguous()
        scale = self.scale.contiguous()
        bias = self.bias.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        scaled_bias_relu_kernel[grid](x, scale, bias, y, n, scale.numel(), BLOCK=BLOCK)
        return y
