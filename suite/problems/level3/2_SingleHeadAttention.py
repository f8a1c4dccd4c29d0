import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Single-head self-attention: fused QKV projection, softmax(QK^T / sqrt(d)) V, output projection."""

    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.embed_dim)
        attn = torch.softmax(scores, dim=-1)
        return self.proj(torch.matmul(attn, v))


batch_size = 2
seq_len = 256
embed_dim = 128


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim]
