import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalization over the features, then a fully connected layer."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.ln = nn.LayerNorm(in_features)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(self.ln(x))


batch_size = 256
in_features = 512
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
