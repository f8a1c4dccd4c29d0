import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales each feature, shifts it by a bias, then applies ReLU: y = relu(x * scale + bias)."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.relu(x * self.scale + self.bias)


batch_size = 512
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
