"""Tests of the static analyzer (src/integrity/analyzer: the package kbench_analyzer).

Each rule has positive cases (a cheat, or the construct the rule names) and negative ones
(honest code that looks close and must not fire). No torch is needed: the analyzer only
parses the candidates.
"""

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The analyzer's folder: kbench runs it as python3 -I -S ANALYZER; kbench_analyzer is in it.
ANALYZER = ROOT / "src" / "integrity" / "analyzer"
if str(ANALYZER) not in sys.path:
    sys.path.insert(0, str(ANALYZER))

import kbench_analyzer as sr  # noqa: E402


def analyze(source, precision="fp32", backend="cuda", require_model_new=False):
    return sr.analyze(textwrap.dedent(source), backend, precision, require_model_new)


def findings(source, rule=None, **kwargs):
    out = analyze(source, **kwargs)["findings"]
    return [f for f in out if rule is None or f["rule"] == rule]


def rules(source, **kwargs):
    return {f["rule"] for f in findings(source, **kwargs)}


def fires(source, rule, **kwargs):
    return bool(findings(source, rule, **kwargs))


def lines(source, rule, **kwargs):
    return [f["line"] for f in findings(source, rule, **kwargs)]


# An honest CUDA extension: one kernel, launched, exposed as relu_cuda.
CUDA_EXT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
ext = load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["relu_cuda"])
'''

HONEST_MODEL = '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_cuda(x)
'''
HONEST = CUDA_EXT + HONEST_MODEL

TRITON = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x):
    y = torch.empty_like(x)
    n = y.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    relu_kernel[grid](x, y, n, BLOCK=1024)
    return y
'''

def with_native(code):
    """HONEST with code added to its extension's host function."""
    return HONEST.replace("auto y = torch::empty_like(x);",
                          "auto y = torch::empty_like(x);\n    " + code)


REFERENCE = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
'''


# --------------------------------------------------------------------------------------
# The honest baseline fires nothing


def test_honest_cuda_candidate_has_no_findings():
    result = analyze(HONEST)
    assert result["findings"] == []
    assert result["parsed"] is True
    assert result["kernels"] == {"cuda": ["relu_kernel"], "triton": [],
                                 "extension_functions": ["relu_cuda"]}
    assert result["markers"] == ["load_inline"]


def test_honest_triton_candidate_has_no_findings():
    source = TRITON + '''
class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
'''
    result = analyze(source, backend="triton")
    assert result["findings"] == []
    assert result["kernels"]["triton"] == ["relu_kernel"]
    assert result["markers"] == ["triton"]


def test_honest_cpu_extension_has_no_findings():
    source = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const float* in = input.data_ptr<float>();
    float* o = out.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t i = 0; i < input.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
    return out;
}
"""
relu = load_inline(name="relu_cpu", cpp_sources=source, functions=["relu_forward"],
                   extra_cflags=["-O3", "-fopenmp"])

class ModelNew(nn.Module):
    def forward(self, x):
        return relu.relu_forward(x)
'''
    assert analyze(source, backend="cpu")["findings"] == []


# --------------------------------------------------------------------------------------
# unparsable


def test_unparsable():
    result = analyze("import torch\ndef f(:\n    pass\n")
    assert result["parsed"] is False
    assert [f["rule"] for f in result["findings"]] == ["unparsable"]
    assert result["findings"][0]["line"] == 2
    assert result["kernels"] == {"cuda": [], "triton": [], "extension_functions": []}


def test_a_candidate_that_never_names_model_new_is_refused_before_anything_else():
    source = HONEST.replace("ModelNew", "Model2")
    result = analyze(source, require_model_new=True)
    assert [f["rule"] for f in result["findings"]] == ["no_model_new"]
    assert "no_model_new" not in [f["rule"] for f in analyze(source)["findings"]]
    # Whatever could bind it counts: a star import, globals() by name, an import alias.
    for binding in ("from helpers import *\n", "globals()['ModelNew'] = Model2\n",
                    "from helpers import Model2 as ModelNew\n", "ModelNew = Model2\n"):
        found = [f["rule"] for f in analyze(source + binding, require_model_new=True)["findings"]]
        assert "no_model_new" not in found, binding


def test_markdown_fence_is_unparsable_and_nothing_else_runs():
    result = analyze("```python\nimport threading\n```\n")
    assert [f["rule"] for f in result["findings"]] == ["unparsable"]


def test_parsable_file_is_parsed():
    assert analyze(HONEST)["parsed"] is True


# --------------------------------------------------------------------------------------
# no_backend


def test_no_backend_fires_on_pure_pytorch():
    source = '''
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''
    result = analyze(source)
    assert "no_backend" in {f["rule"] for f in result["findings"]}
    assert result["markers"] == []


@pytest.mark.parametrize("imports, marker", [
    ("import triton", "triton"),
    ("from torch.utils.cpp_extension import load_inline", "load_inline"),
    ("from torch.utils.cpp_extension import load", "cpp_extension"),
    ("from torch.utils import cpp_extension", "cpp_extension"),
    ("import torch.utils.cpp_extension", "cpp_extension"),
    ("import thunderkittens as tk", "thunderkittens"),
    ("import cutlass", "cutlass"),
    ("import cutlass.cute as cute", "cute"),
    ("import tilelang", "tilelang"),
    ("import cupy as cp\nk = cp.RawKernel('extern \"C\" __global__ void k() {}', 'k')", "cupy"),
    ("from numba import cuda", "numba.cuda"),
])
def test_backend_markers(imports, marker):
    source = imports + "\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n"
    result = analyze(source)
    assert marker in result["markers"]
    assert "no_backend" not in {f["rule"] for f in result["findings"]}


def test_plain_cupy_import_is_not_a_backend():
    assert fires("import cupy\n", "no_backend")


# --------------------------------------------------------------------------------------
# no_kernel_call


def test_no_kernel_call_when_forward_uses_pytorch_only():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)

    def forward(self, x):
        x = self.conv(x)
        return torch.relu(x)
'''
    found = findings(source, "no_kernel_call")
    assert [f["line"] for f in found] == [29]
    assert "nn.Conv2d" in found[0]["reason"]


def test_no_kernel_call_when_forward_calls_nothing():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''
    assert fires(source, "no_kernel_call")


def test_no_kernel_call_through_helpers_and_submodules():
    source = CUDA_EXT + '''
def helper(x):
    return F.gelu(x)

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return helper(self.lin(x))

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(3)])

    def forward(self, x):
        return self._run(x)

    def _run(self, x):
        return self.blocks(x).sum(dim=1)
'''
    assert fires(source, "no_kernel_call")


ATEN_WRAPPER = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
torch::Tensor fused(torch::Tensor x, torch::Tensor w) {
    auto y = torch::matmul(x, w);
    return torch::relu(y);
}
"""
ext = load_inline(name="wrapper", cpp_sources=src, functions=["fused"])

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return ext.fused(x, self.w)
'''


def test_no_kernel_call_for_an_extension_that_only_calls_aten():
    found = findings(ATEN_WRAPPER, "no_kernel_call")
    assert len(found) == 1 and "only calls ATen" in found[0]["reason"]
    assert set(lines(ATEN_WRAPPER, "torch_compute")) == {9, 10}


def test_no_kernel_call_for_an_aten_wrapper_with_decoy_kernels():
    source = ATEN_WRAPPER.replace('#include <torch/extension.h>', '''#include <torch/extension.h>
__global__ void decoy(float* y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = 0.f;
}''')
    assert fires(source, "no_kernel_call")
    assert fires(source, "unreachable_kernel")


def test_extension_with_a_host_loop_is_a_kernel():
    source = ATEN_WRAPPER.replace(
        "auto y = torch::matmul(x, w);",
        "auto y = torch::matmul(x, w);\n    for (int i = 0; i < 2; ++i) {}")
    assert not fires(source, "no_kernel_call")


def test_extension_calling_cublas_is_a_kernel():
    source = ATEN_WRAPPER.replace("auto y = torch::matmul(x, w);",
                                  "auto y = torch::empty_like(x);\n    cublasSgemm(h, a, b);")
    assert not fires(source, "no_kernel_call")


@pytest.mark.parametrize("model", [
    # through an attribute holding the extension function
    '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = ext.relu_cuda
    def forward(self, x):
        return self.fn(x)
''',
    # through an attribute holding the module, and a local alias
    '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = ext
    def forward(self, x):
        ops = self.ops
        y = x.contiguous()
        return ops.relu_cuda(y)
''',
    # a lazily compiled extension
    '''
_cache = None
def get_ext():
    global _cache
    if _cache is None:
        _cache = load_inline(name="lazy", cpp_sources=cpp_src, cuda_sources=cuda_src,
                             functions=["relu_cuda"])
    return _cache
class ModelNew(nn.Module):
    def forward(self, x):
        return get_ext().relu_cuda(x) + 1
''',
    # a submodule whose forward calls the kernel, in a ModuleList
    '''
class Block(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList()
        for _ in range(2):
            self.blocks.append(Block())
        self.head = nn.Linear(4, 4)
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)
''',
    # layers built by a helper method
    '''
class Block(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = self._make(Block, 3)
    def _make(self, block, n):
        layers = []
        for _ in range(n):
            layers.append(block())
        return nn.Sequential(*layers)
    def forward(self, x):
        return torch.flatten(self.layer(x), 1)
''',
    # an autograd.Function
    '''
class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return ext.relu_cuda(x)
    @staticmethod
    def backward(ctx, g):
        return g
class ModelNew(nn.Module):
    def forward(self, x):
        return Relu.apply(x)
''',
    # a custom op in torch.ops
    '''
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ops.my_ops.relu(x)
''',
    # a property
    '''
class ModelNew(nn.Module):
    @property
    def out(self):
        return ext.relu_cuda(self.x)
    def forward(self, x):
        self.x = x
        return self.out
''',
    # an extension cached on a class by a classmethod
    '''
class Ops:
    module = None
    @classmethod
    def get(cls):
        if cls.module is None:
            cls.module = load_inline(name="ops", cpp_sources=cpp_src, cuda_sources=cuda_src,
                                     functions=["relu_cuda"])
        return cls.module
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = Ops.get()
    def forward(self, x):
        return self.ops.relu_cuda(x)
''',
    # an attribute set from outside the class
    '''
class Holder:
    fn = None
holder = Holder()
holder.fn = ext.relu_cuda
class ModelNew(nn.Module):
    def forward(self, x):
        return holder.fn(x)
''',
    # a function imported from elsewhere: unknown, so no finding
    '''
from mylib import fast_relu
class ModelNew(nn.Module):
    def forward(self, x):
        return fast_relu(x)
''',
    # a call through a dict: unknown
    '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"relu": torch.relu}
    def forward(self, x):
        return self.table["relu"](x)
''',
    # getattr with a computed name on the extension
    '''
class ModelNew(nn.Module):
    def __init__(self, name="relu_cuda"):
        super().__init__()
        self.name = name
    def forward(self, x):
        return getattr(ext, self.name)(x)
''',
])
def test_no_kernel_call_stays_silent_when_a_kernel_may_be_called(model):
    assert not fires(CUDA_EXT + model, "no_kernel_call")


def test_triton_op_and_wrap_triton_launch_kernels():
    source = TRITON + '''
from torch.library import triton_op, wrap_triton

@triton_op("mylib::relu", mutates_args={})
def relu_op(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    wrap_triton(relu_kernel)[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y

class ModelNew(nn.Module):
    def forward(self, x):
        return relu_op(x)
'''
    assert analyze(source, backend="triton")["findings"] == []


def test_jiterator_is_a_kernel():
    source = '''
import torch
import torch.nn as nn
relu = torch.cuda.jiterator._create_jit_fn(
    "template <typename T> T relu(T x) { return x > 0 ? x : 0; }")
class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
'''
    result = analyze(source)
    assert result["findings"] == [] and result["markers"] == ["jiterator"]


@pytest.mark.parametrize("call", [
    "torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)",
    "torch.func.functional_call(self.block, {}, (x,))",
    "random.choice([self.block, torch.relu])(x)",
    "functools.reduce(lambda acc, f: f(acc), [self.block], x)",
])
def test_callables_handed_to_libraries_count_as_called(call):
    source = CUDA_EXT + '''
import functools
import random
class Block(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
    def forward(self, x):
        return %s
''' % call
    assert not fires(source, "no_kernel_call")


def test_triton_launch_through_wrapper_is_a_kernel_call():
    source = TRITON + '''
class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
'''
    assert not fires(source, "no_kernel_call", backend="triton")


def test_triton_model_using_pytorch_fires():
    source = TRITON + '''
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''
    found = rules(source, backend="triton")
    assert "no_kernel_call" in found and "unreachable_kernel" in found


def test_no_kernel_call_needs_modelnew_and_forward():
    assert not fires(CUDA_EXT, "no_kernel_call")
    assert not fires(CUDA_EXT + "class ModelNew(nn.Module):\n    pass\n", "no_kernel_call")


def test_no_kernel_call_is_silent_with_forward_hooks():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(lambda m, i, o: ext.relu_cuda(o))
    def forward(self, x):
        return x * 1
'''
    assert not fires(source, "no_kernel_call")


def test_the_last_definition_of_modelnew_counts():
    pytorch_model = "class ModelNew(nn.Module):\n    def forward(self, x):\n" \
                    "        return torch.relu(x)\n"
    assert fires(HONEST + pytorch_model, "no_kernel_call")
    assert not fires(CUDA_EXT + pytorch_model + HONEST_MODEL, "no_kernel_call")
    # Defined under a condition: either may be the one that runs.
    conditional = "if True:\n" + textwrap.indent(pytorch_model, "    ")
    assert not fires(HONEST + conditional, "no_kernel_call")


# --------------------------------------------------------------------------------------
# torch_compute


def test_torch_compute_lines():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        y = ext.relu_cuda(x)
        a = torch.matmul(y, self.weight)
        b = F.conv2d(a, self.weight)
        c = a.sum(dim=1)
        d = a @ self.weight
        e = self.conv(x)
        return a, b, c, d, e
'''
    assert lines(source, "torch_compute") == [32, 33, 34, 35, 36]


def test_glue_is_not_torch_compute():
    source = TRITON + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.randn(4).sum()

    def forward(self, x, dim: int = 1):
        b, c = x.shape[0], x.size(1)
        x = x.contiguous().view(b, -1).reshape(b, c, -1).permute(0, 2, 1).transpose(1, 2)
        x = x.unsqueeze(0).squeeze(0).flatten(1).to(x.device).float()
        n = max(int(x.numel()), len(x.shape), min(b, c), triton.cdiv(b, 2))
        out = torch.empty_like(x)
        buf = torch.zeros(n, device=x.device, dtype=x.dtype)
        parts = x.chunk(2, dim=dim)
        y = relu(x[:, :n].clone())
        out.copy_(y)
        return out.detach(), buf, parts
'''
    assert not fires(source, "torch_compute")


def test_unreachable_pytorch_code_is_not_torch_compute():
    source = HONEST + REFERENCE + '''
def get_inputs():
    return [torch.randn(4, 4).sigmoid()]
'''
    assert not fires(source, "torch_compute")


def test_native_aten_compute_and_glue():
    source = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
src = """
torch::Tensor f(torch::Tensor x, torch::Tensor w) {
    auto out = torch::empty({x.size(0), w.size(1)}, x.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    auto s2 = c10::cuda::getCurrentCUDAStream();
    auto v = x.contiguous().view({-1});
    // at::matmul(x, w) in a comment
    auto y = at::matmul(x, w);
    auto z = torch::nn::functional::relu(y);
    return z.sum(1);
}
"""
ext = load_inline(name="e", cpp_sources=src, functions=["f"])
'''
    found = findings(source, "torch_compute")
    assert [f["line"] for f in found] == [11, 12, 13]
    assert "at::matmul" in found[0]["reason"]


# --------------------------------------------------------------------------------------
# try_fallback / try_except


@pytest.mark.parametrize("handler", [
    "except Exception:\n            return torch.relu(x)",
    "except RuntimeError:\n            y = F.relu(x)",
    "except Exception:\n            return x",
    "except Exception:\n            return super().forward(x)",
    "except Exception:\n            return Model()(x)",
    "except Exception:\n            y = self.slow(x)",
    "except Exception:\n            y = x.clamp(min=0)",
    "finally:\n            return torch.relu(x)",
])
def test_try_fallback(handler):
    source = CUDA_EXT + REFERENCE + '''
class ModelNew(Model):
    def slow(self, x):
        return torch.relu(x)

    def forward(self, x):
        try:
            y = ext.relu_cuda(x)
        %s
        return y
''' % handler
    found = findings(source, "try_fallback")
    assert [f["line"] for f in found] == [38]
    assert not fires(source, "try_except")


def test_try_fallback_in_else_clause():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            ext.relu_cuda(x)
        except Exception:
            pass
        else:
            return torch.relu(x)
'''
    assert lines(source, "try_fallback") == [30]


@pytest.mark.parametrize("block", [
    "try:\n    import triton\n    HAS_TRITON = True\nexcept ImportError:\n    HAS_TRITON = False\n",
    "try:\n    ext2 = load_inline(name='x', cpp_sources=cpp_src)\nexcept Exception:\n"
    "    ext2 = None\n",
    "def check(x):\n    try:\n        return ext.relu_cuda(x)\n    except RuntimeError as e:\n"
    "        raise RuntimeError('kernel failed: %s' % e)\n",
    "class M(nn.Module):\n    def forward(self, x):\n        try:\n"
    "            return ext.relu_cuda(x)\n        except RuntimeError:\n"
    "            print('bad input', x.shape, x.abs().max())\n"
    "            raise\n",
    "def load():\n    try:\n        return load_inline(name='x', cpp_sources=cpp_src)\n"
    "    except Exception:\n        print('retrying')\n"
    "        return load_inline(name='y', cpp_sources=cpp_src)\n",
    "def load():\n    try:\n        return load_inline(name='x', cpp_sources=cpp_src)\n"
    "    except Exception:\n        return None\n",
])
def test_try_except_that_is_not_a_fallback(block):
    source = HONEST + block
    assert fires(source, "try_except")
    assert not fires(source, "try_fallback")


def test_contextlib_suppress_is_try_except():
    assert fires(HONEST + "import contextlib\nwith contextlib.suppress(Exception):\n    pass\n",
                 "try_except")


def test_try_finally_without_fallback_fires_nothing():
    source = HONEST + "def f():\n    try:\n        pass\n    finally:\n        print('done')\n"
    assert not ({"try_except", "try_fallback"} & rules(source))


# --------------------------------------------------------------------------------------
# pass_inheritance


@pytest.mark.parametrize("model", [
    "class ModelNew(Model):\n    pass\n",
    "class ModelNew(Model):\n    '''Optimized.'''\n",
    "class ModelNew(Model):\n    def forward(self, x):\n        return super().forward(x)\n",
    "class ModelNew(Model):\n    def forward(self, x):\n        return Model.forward(self, x)\n",
    "class ModelNew(nn.Conv2d):\n    pass\n",
])
def test_pass_inheritance(model):
    source = CUDA_EXT + REFERENCE + model
    assert fires(source, "pass_inheritance")
    assert fires(source, "no_kernel_call")


def test_forward_returning_super_forward_on_a_path():
    source = CUDA_EXT + REFERENCE + '''
class ModelNew(Model):
    def forward(self, x):
        if x.is_cuda:
            return ext.relu_cuda(x)
        return super().forward(x)
'''
    assert lines(source, "pass_inheritance") == [35]


@pytest.mark.parametrize("model", [
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.relu_cuda(x)\n",
    "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
    "        return ext.relu_cuda(x)\n",
    "class ModelNew(Model):\n    def forward(self, x):\n        return ext.relu_cuda(x)\n",
    "class Base(nn.Module):\n    def forward(self, x):\n        return ext.relu_cuda(x)\n"
    "class ModelNew(Base):\n    pass\n",
])
def test_no_pass_inheritance_for_kernels(model):
    assert not fires(CUDA_EXT + REFERENCE + model, "pass_inheritance")


def test_helper_module_returning_super_forward_is_not_pass_inheritance():
    source = CUDA_EXT + '''
class MyConv(nn.Conv2d):
    def forward(self, x):
        return super().forward(x)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = MyConv(3, 3, 3)
    def forward(self, x):
        return ext.relu_cuda(self.conv(x))
'''
    found = rules(source)
    assert "pass_inheritance" not in found and "no_kernel_call" not in found
    assert lines(source, "torch_compute") == [26]


def test_inherited_forward_that_reaches_a_replaced_submodule():
    source = CUDA_EXT + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
    def forward(self, x):
        return self.act(x)

class KernelReLU(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)

class ModelNew(Model):
    def __init__(self):
        super().__init__()
        self.act = KernelReLU()
'''
    assert not ({"pass_inheritance", "no_kernel_call"} & rules(source))


# --------------------------------------------------------------------------------------
# monkeypatch


@pytest.mark.parametrize("code", [
    "torch.cuda.synchronize = lambda: None",
    "torch.cuda.Event.elapsed_time = lambda self, end: 0.001",
    "import time\ntime.perf_counter = lambda: 0.0",
    "import time\nfor name in ('time', 'perf_counter'):\n    setattr(time, name, lambda: 0.0)",
    "torch.Tensor.__eq__ = lambda a, b: True",
    "nn.Module.__call__ = lambda self, *a: a[0]",
    "import sys\nsys.modules['torch.cuda'] = None",
    "torch.__dict__['relu'] = lambda x: x",
    "vars(torch)['relu'] = lambda x: x",
    "del torch.cuda.synchronize",
    "F.relu = lambda x: x",
    "torch.nn.functional.gelu += 0",
    "cuda = torch.cuda\ncuda.synchronize = lambda: None",
    "from torch import Tensor\nTensor.add = lambda a, b: a",
    "lib = torch.library.Library('aten', 'IMPL')",
    "type(torch.zeros(1)).__add__ = lambda a, b: a",
    "delattr(torch.cuda, 'synchronize')",
    "import builtins\nbuiltins.print = lambda *a: None",
    "__builtins__['len'] = lambda x: 0",
])
def test_monkeypatch(code):
    assert fires(HONEST + code + "\n", "monkeypatch")


def test_native_aten_override_is_monkeypatch():
    source = HONEST.replace('cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"',
                            'cpp_src = "TORCH_LIBRARY_IMPL(aten, CUDA, m) '
                            '{ m.impl(\\"relu\\", &relu_cuda); }"')
    assert fires(source, "monkeypatch")


@pytest.mark.parametrize("code", [
    "import os\nos.environ['CUDA_LAUNCH_BLOCKING'] = '1'",
    "torch.backends.cudnn.benchmark = True",
    "torch.backends.cudnn.deterministic = True",
    "class Helper:\n    pass\nHelper.attr = 1",
    "ModelNew.extra = 1",
    "m = ModelNew()\nm.weight = None",
    "lib = torch.library.Library('my_ops', 'DEF')",
])
def test_not_monkeypatch(code):
    assert not fires(HONEST + code + "\n", "monkeypatch")


def test_assignments_to_self_are_not_monkeypatch():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = ext.relu_cuda
        self.torch = torch
    def forward(self, x):
        return self.relu(x)
'''
    assert not fires(source, "monkeypatch")


# --------------------------------------------------------------------------------------
# stream


@pytest.mark.parametrize("code", [
    "s = torch.cuda.Stream()",
    "s = None\nwith torch.cuda.stream(s):\n    pass",
    "g = torch.cuda.CUDAGraph()",
    "g = None\nwith torch.cuda.graph(g):\n    pass",
    "s = torch.cuda.ExternalStream(0)",
    "torch.cuda.set_stream(None)",
])
def test_stream(code):
    assert fires(HONEST + code + "\n", "stream")


@pytest.mark.parametrize("native", [
    "cudaStream_t s; cudaStreamCreate(&s);",
    "cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);",
    "auto s = at::cuda::getStreamFromPool();",
    "cudaGraphLaunch(exec, 0);",
    "cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);",
])
def test_native_stream(native):
    source = with_native(native)
    assert fires(source, "stream")


def test_current_stream_is_not_stream():
    source = HONEST.replace(
        "relu_kernel<<<(n + 255) / 256, 256>>>",
        "auto s = at::cuda::getCurrentCUDAStream();\n"
        "    auto t = c10::cuda::getCurrentCUDAStream();\n"
        "    relu_kernel<<<(n + 255) / 256, 256, 0, s>>>")
    source += "stream = torch.cuda.current_stream()\n"
    assert not fires(source, "stream")


# --------------------------------------------------------------------------------------
# concurrency, subprocess, network


@pytest.mark.parametrize("code, rule", [
    ("import threading", "concurrency"),
    ("from concurrent.futures import ThreadPoolExecutor", "concurrency"),
    ("import multiprocessing as mp", "concurrency"),
    ("import asyncio", "concurrency"),
    ("import os\nif os.fork() == 0:\n    pass", "concurrency"),
    ("import signal", "concurrency"),
    ("import _thread", "concurrency"),
    ("import subprocess", "subprocess"),
    ("import os\nos.system('nvidia-smi')", "subprocess"),
    ("import os\nos.popen('ls')", "subprocess"),
    ("from os import system", "subprocess"),
    ("import os\nos.execv('/bin/true', [])", "subprocess"),
    ("import pty", "subprocess"),
    ("import socket", "network"),
    ("import urllib.request", "network"),
    ("import requests", "network"),
    ("from http.client import HTTPConnection", "network"),
])
def test_python_process_and_network(code, rule):
    assert fires(HONEST + code + "\n", rule)


@pytest.mark.parametrize("native, rule", [
    ("std::thread t([]{}); t.join();", "concurrency"),
    ("pthread_t t; pthread_create(&t, nullptr, f, nullptr);", "concurrency"),
    ("if (fork() == 0) {}", "concurrency"),
    ("auto fut = std::async(f);", "concurrency"),
    ("system(\"ls\");", "subprocess"),
    ("std::system(\"ls\");", "subprocess"),
    ("FILE* p = popen(\"ls\", \"r\");", "subprocess"),
    ("execl(\"/bin/sh\", \"sh\", nullptr);", "subprocess"),
    ("int s = socket(AF_INET, SOCK_STREAM, 0);", "network"),
    ("connect(s, addr, len);", "network"),
])
def test_native_process_and_network(native, rule):
    source = with_native(native)
    assert fires(source, rule)


def test_native_socket_header_is_network():
    source = HONEST.replace("#include <torch/extension.h>",
                            "#include <torch/extension.h>\n#include <sys/socket.h>")
    assert fires(source, "network")


def test_honest_cuda_words_are_not_process_rules():
    source = HONEST.replace("auto y = torch::empty_like(x);", '''auto y = torch::empty_like(x);
    __threadfence_system();
    int thread_count = 4;  // std::thread is not used here
    /* system("ls"); fork(); */
    at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {});''')
    source += "thread_count = 1\nsystem = 'linux'\n"
    assert not ({"concurrency", "subprocess", "network"} & rules(source))


def test_openmp_is_not_concurrency():
    source = HONEST.replace("auto y = torch::empty_like(x);",
                            "auto y = torch::empty_like(x);\n    #pragma omp parallel for\n"
                            "    for (int i = 0; i < 4; ++i) {}")
    assert not fires(source, "concurrency")


# --------------------------------------------------------------------------------------
# file_access


@pytest.mark.parametrize("code", [
    "data = open('answers.bin', 'rb').read()",
    "import io\nio.open('x')",
    "import pathlib\ntext = pathlib.Path('x').read_text()",
    "from pathlib import Path\np = Path('/tmp') / 'x'\nwith p.open() as f:\n    pass",
    "import os\nos.remove('x')",
    "import os\nnames = os.listdir('.')",
    "import shutil\nshutil.copy('a', 'b')",
    "import glob\nfiles = glob.glob('*.pt')",
    "import tempfile\nf = tempfile.NamedTemporaryFile()",
    "ref = torch.load('ref.pt')",
    "maps = '/proc/self/maps'",
    "shm = '/dev/shm/x'",
    "import mmap",
    "import gzip\ngzip.open('x.gz', 'wb').write(b'0')",
    "import zipfile\nz = zipfile.ZipFile('x.zip', 'w')",
    "import sqlite3\nc = sqlite3.connect('x.db')",
    "import lzma",
    "import tarfile",
    "import logging\nh = logging.FileHandler('x.log')",
    "import os\nos.posix_fallocate(3, 0, 1 << 30)",
])
def test_file_access(code):
    assert fires(HONEST + code + "\n", "file_access")


@pytest.mark.parametrize("native", [
    "FILE* f = fopen(\"x\", \"r\");",
    "std::ifstream in(\"x\");",
    "std::ofstream out(path);",
    "int fd = open(\"/tmp/x\", O_RDONLY);",
    "void* p = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);",
    "const char* p = \"/proc/self/maps\";",
    "int fd = creat(path, 0600);",
    "posix_fallocate(fd, 0, 1L << 30);",
    "long r = syscall(SYS_openat, AT_FDCWD, name, 0101, 0600);",
    "long r = syscall(__NR_write, fd, buf, n);",
    "long r = syscall(257, -100, name, 0101, 0600);",
    "FILE* f = tmpfile();",
])
def test_native_file_access(native):
    source = with_native(native)
    assert fires(source, "file_access")


def test_paths_and_build_directories_are_not_file_access():
    source = HONEST + '''
import os
import tempfile
here = os.path.dirname(os.path.abspath(__file__))
build = os.path.join(here, "build")
os.makedirs(build, exist_ok=True)
tmp = tempfile.mkdtemp()
os.environ["TORCH_EXTENSIONS_DIR"] = tmp
ext2 = load_inline(name="relu2", cpp_sources=cpp_src, cuda_sources=cuda_src,
                   functions=["relu_cuda"], build_directory=build)
exists = os.path.exists(build)
'''
    source = source.replace('relu_kernel<<<', '// fopen("x") in a comment\n    relu_kernel<<<')
    assert not fires(source, "file_access")


# --------------------------------------------------------------------------------------
# native_access


@pytest.mark.parametrize("code", [
    "import ctypes",
    "from ctypes import CDLL",
    "import cffi",
    "rt = torch.cuda.cudart()",
    "s = torch._C._cuda_getCurrentRawStream(0)",
    "import importlib.util\nspec = importlib.util.spec_from_file_location('m', 'm.so')",
    "torch.ops.load_library('libx.so')",
])
def test_native_access(code):
    assert fires(HONEST + code + "\n", "native_access")


def test_native_dlopen_is_native_access():
    source = with_native("void* h = dlopen(\"libcuda.so\", RTLD_NOW);\n"
                         "    void* f = dlsym(h, \"cuLaunchKernel\");")
    assert lines(source, "native_access") == [15, 16]


def test_public_torch_is_not_native_access():
    source = HONEST + ("s = torch.cuda.current_stream().cuda_stream\n"
                       "p = torch.cuda.get_device_properties(0)\n")
    assert not fires(source, "native_access")


# --------------------------------------------------------------------------------------
# introspection


@pytest.mark.parametrize("code", [
    "import gc",
    "import inspect",
    "import sys\nframe = sys._getframe(1)",
    "def f():\n    import sys\n    return sys._getframe().f_back.f_locals",
    "g = ext.relu_cuda.__globals__",
    "subs = object.__subclasses__()",
    "import sys\nmods = list(sys.modules)",
    "globals()['ext'] = None",
    "globals().update(x=1)",
    "import weakref\nweakref.finalize(ext, print)",
    "import atexit",
    "import sys\nsys.settrace(None)",
    "b = __builtins__",
    "import builtins",
    "v = vars(torch)",
])
def test_introspection(code):
    assert fires(HONEST + code + "\n", "introspection")


def test_harmless_reflection_is_not_introspection():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.name = self.__class__.__name__ + type(self).__name__
        self.attrs = vars(self)
    def forward(self, x):
        if "ext" not in globals():
            raise RuntimeError("no extension")
        return ext.relu_cuda(x)
'''
    assert not fires(source, "introspection")


# --------------------------------------------------------------------------------------
# dynamic_code


@pytest.mark.parametrize("code", [
    "y = eval('1 + 1')",
    "exec('x = 1')",
    "c = compile('x', 'f', 'eval')",
    "m = __import__('os')",
    "import importlib\nm = importlib.import_module('os')",
    "import pickle\nobj = pickle.loads(b'')",
    "import marshal",
    "import runpy",
    "name = 'relu'\nf = getattr(torch, name)",
    "f = getattr(F, 'gel' + 'u')",
])
def test_dynamic_code(code):
    assert fires(HONEST + code + "\n", "dynamic_code")


def test_not_dynamic_code():
    source = CUDA_EXT + '''
import re
pattern = re.compile("x")
fn = torch.compile(lambda x: x)
relu = getattr(torch, "relu")
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(2):
            setattr(self, "w%d" % i, nn.Parameter(torch.zeros(1)))
        self.eval()
    def forward(self, x):
        w = getattr(self, "w%d" % 0)
        return ext.relu_cuda(x)
'''
    assert not fires(source, "dynamic_code")


# --------------------------------------------------------------------------------------
# tensor_subclass


@pytest.mark.parametrize("code", [
    "class Lazy(torch.Tensor):\n    pass",
    "class P(nn.Parameter):\n    pass",
    "class Mode:\n    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "class Mode:\n    @classmethod\n"
    "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "from torch.utils._python_dispatch import TorchDispatchMode",
    "from torch.overrides import TorchFunctionMode",
    "t = torch.Tensor._make_subclass(object, torch.zeros(1))",
    "def f(x, cls):\n    return x.as_subclass(cls)",
    "def f(x, cls):\n    x.__class__ = cls",
])
def test_tensor_subclass(code):
    assert fires(HONEST + code + "\n", "tensor_subclass")


def test_tensor_annotations_and_parameters_are_not_subclasses():
    source = CUDA_EXT + '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4))
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert isinstance(x, torch.Tensor)
        return ext.relu_cuda(x)
'''
    assert not fires(source, "tensor_subclass")


# --------------------------------------------------------------------------------------
# precision_downgrade


@pytest.mark.parametrize("code", [
    "y = torch.zeros(2).half()",
    "y = torch.zeros(2).bfloat16()",
    "y = torch.zeros(2).to(torch.float16)",
    "y = torch.zeros(2).to(dtype=torch.bfloat16)",
    "y = torch.empty(4, dtype=torch.half)",
    "ctx = torch.autocast('cuda')",
    "from torch.cuda.amp import autocast",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "torch.backends.cudnn.allow_tf32 = True",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True",
    "torch.set_float32_matmul_precision('high')",
    "torch.set_float32_matmul_precision('medium')",
])
def test_precision_downgrade(code):
    assert fires(HONEST + code + "\n", "precision_downgrade")
    assert not fires(HONEST + code + "\n", "precision_downgrade", precision="fp16")


@pytest.mark.parametrize("native", [
    "__half h = __float2half(1.0f);",
    "half2 h2;",
    "__nv_bfloat16 b = __float2bfloat16(1.0f);",
    "wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;",
    "float t = wmma::__float_to_tf32(1.0f);",
    "asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, {%1}, {%2}, {%3};\");",
    "cublasGemmEx(h, a, b, CUBLAS_COMPUTE_32F_FAST_TF32, algo);",
    "cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH);",
])
def test_native_precision_downgrade(native):
    source = with_native(native)
    assert fires(source, "precision_downgrade")
    assert not fires(source, "precision_downgrade", precision="bf16")


def test_triton_tf32_flags():
    source = TRITON + "@triton.jit\ndef mm(a, b):\n    return tl.dot(a, b, allow_tf32=True)\n"
    assert fires(source, "precision_downgrade", backend="triton")
    source = TRITON + ("@triton.jit\ndef mm(a, b):\n"
                       "    return tl.dot(a, b, input_precision='tf32')\n")
    assert fires(source, "precision_downgrade", backend="triton")


def test_full_precision_is_not_a_downgrade():
    source = CUDA_EXT + '''
@torch.autocast("cuda", enabled=False)
def exact(x):
    return x
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
class ModelNew(nn.Module):
    def forward(self, x):
        if x.dtype == torch.float16:
            raise TypeError("fp32 only")
        y = x.float().to(torch.float32).double()
        return ext.relu_cuda(y)
'''
    source = source.replace("auto y = torch::empty_like(x);",
                            "auto y = torch::empty_like(x);  // no __half here\n"
                            "    cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);")
    assert not fires(source, "precision_downgrade")


# --------------------------------------------------------------------------------------
# unreachable_kernel


def test_unreachable_cuda_kernel():
    source = HONEST.replace("#include <torch/extension.h>", '''#include <torch/extension.h>
__global__ void decoy_kernel(float* y) { y[0] = 1.f; }''')
    found = findings(source, "unreachable_kernel")
    assert [f["line"] for f in found] == [9]
    assert "decoy_kernel" in found[0]["reason"]


@pytest.mark.parametrize("launch", [
    "relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);",
    "void* args[] = {&n}; cudaLaunchKernel((void*)relu_kernel, 1, 1, args, 0, 0);",
    "auto k = n > 4 ? relu_kernel : relu_kernel; k<<<1, 1>>>(nullptr, nullptr, n);",
    "LAUNCH(relu_kernel);",
])
def test_launched_kernels_are_reachable(launch):
    source = HONEST.replace(
        "relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);",
        launch)
    assert not fires(source, "unreachable_kernel")


def test_template_kernel_launch_is_reachable():
    source = HONEST.replace("__global__ void relu_kernel(const float* x",
                            "template <typename T>\n__global__ void relu_kernel(const T* x")
    source = source.replace("relu_kernel<<<", "relu_kernel<float><<<")
    assert not fires(source, "unreachable_kernel")


def test_unreachable_extension_function():
    source = HONEST.replace('functions=["relu_cuda"]', 'functions=["relu_cuda", "relu_backward"]')
    found = findings(source, "unreachable_kernel")
    assert len(found) == 1 and "relu_backward" in found[0]["reason"]
    assert found[0]["line"] == 22


def test_pybind_functions_are_extension_functions():
    source = HONEST.replace(
        'cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"',
        'cpp_src = """\ntorch::Tensor relu_cuda(torch::Tensor x);\n'
        'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n'
        '    m.def("relu_cuda", &relu_cuda);\n    m.def("unused", &relu_cuda);\n}\n"""')
    result = analyze(source)
    assert "unused" in result["kernels"]["extension_functions"]
    assert [f["line"] for f in result["findings"] if f["rule"] == "unreachable_kernel"] == [24]


def test_unreachable_triton_kernel_and_device_function():
    source = TRITON + '''
@triton.jit
def helper(x):
    return x * 2

@triton.jit
def uses_helper(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))

class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
'''
    found = findings(source, "unreachable_kernel", backend="triton")
    assert [f["line"] for f in found] == [29]
    assert "uses_helper" in found[0]["reason"]


# --------------------------------------------------------------------------------------
# Line numbers of native findings


def test_native_lines_follow_escapes_and_continuations():
    source = '''
from torch.utils.cpp_extension import load_inline
src = (
    "#include <torch/extension.h>\\n"
    "__global__ void a_kernel(float* y) { y[0] = 1.f; }\\n"
)
src2 = """
#define CHECK(x) \\
    do { } while (0)
__global__ void b_kernel(float* y) {
    y[0] = __float2half(1.f);
}
"""
ext = load_inline(name="x", cpp_sources="", cuda_sources=[src, src2])
'''
    result = analyze(source)
    unreachable = [f["line"] for f in result["findings"] if f["rule"] == "unreachable_kernel"]
    assert unreachable == [5, 10]
    assert [f["line"] for f in result["findings"] if f["rule"] == "precision_downgrade"] == [11]


def test_bare_strings_are_not_native_sources():
    source = HONEST + '''
"""
Previous attempt, not compiled:
__global__ void old_kernel(__half* y) { y[0] = 0; }
"""
'''
    result = analyze(source)
    assert result["findings"] == []
    assert result["kernels"]["cuda"] == ["relu_kernel"]


def test_kernels_in_dedented_and_stripped_strings():
    source = '''
import textwrap
from torch.utils.cpp_extension import load_inline
src = textwrap.dedent("""
    #include <torch/extension.h>
    __global__ void k(float* y) { y[0] = 1.f; }
""").strip()
ext = load_inline(name="x", cpp_sources="", cuda_sources=src)
'''
    result = analyze(source)
    assert result["kernels"]["cuda"] == ["k"]
    assert [f["line"] for f in result["findings"] if f["rule"] == "unreachable_kernel"] == [6]


# --------------------------------------------------------------------------------------
# Output contract


def test_findings_are_sorted_deduplicated_and_capped():
    source = "\n".join("import threading, socket" for _ in range(250)) + "\n"
    result = analyze(source)
    found = result["findings"]
    assert len(found) == sr.MAX_FINDINGS
    keys = [(f["line"], f["rule"]) for f in found]
    assert keys == sorted(keys)
    assert len(set((f["rule"], f["line"]) for f in found)) == len(found)


def test_finding_fields():
    long_line = "x = open('" + "a" * 300 + "')\n"
    result = analyze(HONEST + long_line)
    for finding in result["findings"]:
        assert set(finding) == {"rule", "line", "evidence", "reason"}
        assert finding["rule"] in sr.RULES
        assert isinstance(finding["line"], int)
        assert len(finding["evidence"]) <= 160
        assert "\n" not in finding["reason"] and finding["reason"]


def test_rules_cover_every_id():
    # The static rules of kbench's table: the analyzer's own, and the two kbench reports about
    # the analyzer's run (unanalyzable, oversized).
    assert set(sr.RULES) - {"unanalyzable", "oversized"} == {
        "unparsable", "no_model_new", "no_backend", "no_kernel_call", "torch_compute", "try_fallback",
        "try_except", "pass_inheritance", "monkeypatch", "stream", "concurrency", "subprocess",
        "network", "file_access", "native_access", "introspection", "dynamic_code",
        "tensor_subclass", "precision_downgrade", "unreachable_kernel"}


def test_empty_source():
    result = analyze("")
    assert result["parsed"] is True
    assert [f["rule"] for f in result["findings"]] == ["no_backend"]


def run_script(stdin, *args):
    return subprocess.run([sys.executable, "-I", "-S", str(ANALYZER), *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_script_contract():
    request = {"source": HONEST + "import threading\n", "backend": "cuda", "precision": "fp32"}
    done = run_script(json.dumps(request))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"findings", "kernels", "markers", "parsed"}
    assert [f["rule"] for f in result["findings"]] == ["concurrency"]
    assert result["kernels"]["cuda"] == ["relu_kernel"]


def test_script_with_empty_fields():
    done = run_script(json.dumps({"source": "x = 1\n", "backend": "", "precision": "bf16"}))
    assert done.returncode == 0
    assert json.loads(done.stdout)["parsed"] is True


def test_script_rejects_bad_input():
    done = run_script("not json")
    assert done.returncode == 2 and done.stderr
    assert run_script("[1, 2]").returncode == 2


def test_script_prints_rules():
    done = run_script("", "--rules")
    assert done.returncode == 0
    assert json.loads(done.stdout) == sr.RULES


def test_script_on_unparsable_source():
    done = run_script(json.dumps({"source": "def (:\n", "precision": "fp32"}))
    assert done.returncode == 0
    result = json.loads(done.stdout)
    assert result["parsed"] is False and result["findings"][0]["rule"] == "unparsable"


def test_the_analyzer_never_runs_the_candidate(tmp_path):
    marker = tmp_path / "ran"
    source = "open(%r, 'w').write('x')\nimport os\nos.system('touch %s')\n" % (str(marker), marker)
    analyze(source)
    run_script(json.dumps({"source": source}))
    assert not marker.exists()
