import torch
import torch.nn as nn


class Model(nn.Module):
    """Transformer feed-forward block: x + Linear(GELU(Linear(LayerNorm(x))))."""

    def __init__(self, embed_dim, hidden_dim):
        super().__init__()
        self.ln = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, embed_dim)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc1(self.ln(x)))
        return x + self.fc2(h)


batch_size = 4
seq_len = 64
embed_dim = 128
hidden_dim = 512


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, hidden_dim]
