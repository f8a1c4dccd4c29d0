import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over one dimension (dim removed from the output)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


batch_size = 16
dim1 = 1024
dim2 = 128
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
