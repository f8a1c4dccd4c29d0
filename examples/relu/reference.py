import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU: the smallest KernelBench-style problem."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
