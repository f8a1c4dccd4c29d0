import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor mean_forward(torch::Tensor x, int64_t dim);
"""

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define CHECK_INPUT(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == at::kFloat, #t " must be a float CUDA tensor")

// Mean over the middle axis of an (outer, reduced, inner) view. A block covers 32 inner indices
// of one outer index (coalesced reads along inner); its 8 thread rows split the reduced axis and
// their partial sums are combined in shared memory.
__global__ void mean_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t reduced, int64_t inner) {
    __shared__ float partial[8][33];
    const int64_t o = blockIdx.y;
    const int64_t i = blockIdx.x * 32 + threadIdx.x;
    float s = 0.f;
    if (i < inner) {
        const float* base = x + o * reduced * inner + i;
        for (int64_t r = threadIdx.y; r < reduced; r += 8) s += base[r * inner];
    }
    partial[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = 0.f;
        for (int k = 0; k < 8; ++k) t += partial[k][threadIdx.x];
        y[o * inner + i] = t / (float)reduced;
    }
}

torch::Tensor mean_forward(torch::Tensor x, int64_t dim) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dim() >= 1, "expected at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "dim out of range");
    auto in = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= in.size(d);
    for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.size(d);
    const int64_t reduced = in.size(dim);
    std::vector<int64_t> shape(in.sizes().begin(), in.sizes().end());
    shape.erase(shape.begin() + dim);
    auto out = torch::empty(shape, in.options());
    if (out.numel() == 0) return out;
    TORCH_CHECK(outer <= 65535, "too many outer rows for this launch");
    dim3 block(32, 8);
    dim3 grid((unsigned)((inner + 31) / 32), (unsigned)outer);
    mean_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(in.data_ptr<float>(), out.data_ptr<float>(),
                                                                    reduced, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(name="suite_l1_p3_mean_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["mean_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_forward(x, self.dim)
