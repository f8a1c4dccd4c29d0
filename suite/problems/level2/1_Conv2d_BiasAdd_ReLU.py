import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 convolution (padding 1), plus a learned per-channel bias, then ReLU."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        # Full fp32 convolution on GPUs (cuDNN would otherwise use TF32, far outside a 1e-4 tolerance).
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            y = self.conv(x)
        return torch.relu(y + self.bias)


batch_size = 8
in_channels = 16
out_channels = 32
height = width = 32
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
