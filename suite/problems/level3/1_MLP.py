import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-layer perceptron: Linear+ReLU for each hidden size, then a final Linear."""

    def __init__(self, input_size, hidden_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for hidden in hidden_sizes:
            layers.append(nn.Linear(current, hidden))
            layers.append(nn.ReLU())
            current = hidden
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 64
input_size = 512
hidden_sizes = [512, 256]
output_size = 128


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_sizes, output_size]
