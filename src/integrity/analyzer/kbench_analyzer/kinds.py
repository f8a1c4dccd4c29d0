"""The kinds of values (what a Python value can be, as far as the analysis can tell) and the
tables of PyTorch, standard-library and builtin names that say which calls are compute.
"""

import builtins

from .native import NATIVE_COMPUTE_METHODS


# ======================================================================================
# Kinds: what a Python value can be, as far as the analysis can tell
#
# A kind is a small tuple; an expression evaluates to a frozenset of kinds (any of them).
#   ("tensor",)                     a tensor (or a tuple/list of tensors)
#   ("scalar",)                     a number, string, None, shape, dtype...
#   ("safe",)                       an object known to hold no kernel (stream, exception, ...)
#   ("unknown",)                    anything
#   ("module", qual)                an imported module or a member of one; builtins.<name>
#   ("ext", load id)                an extension module returned by load_inline/load
#   ("extfn", load id, name)        one of its functions
#   ("jit", backend, name, launch)  a @triton.jit (or other DSL) kernel; launch: k[grid]
#   ("rawk",) ("rawmod",) ("rawget",)  CuPy raw kernels
#   ("class", cid) ("inst", cid)    a class defined in the file / an instance of one
#   ("super", cid, self kind)
#   ("func", fid, bound self kind or None, parent context id)
#   ("nnmod", qual) ("nnattr", qual, attr)  a torch.nn module instance / its attribute
#   ("tmethod", name)               a bound tensor method
#   ("container", elements, sequential)  list/tuple/ModuleList; Sequential is sequential
#   ("tuple", (element kind sets...))
#   ("dict",)                       calls through dicts are unknown

T = ("tensor",)
S = ("scalar",)
SAFE = ("safe",)
U = ("unknown",)
FT, FS, FSAFE, FU = frozenset([T]), frozenset([S]), frozenset([SAFE]), frozenset([U])
EMPTY = frozenset()
MAX_KINDS = 24


def _depth(kind):
    if kind[0] == "container":
        return 1 + max((_depth(k) for k in kind[1]), default=0)
    if kind[0] == "tuple":
        return 1 + max((_depth(k) for ks in kind[1] for k in ks), default=0)
    return 0


def norm(kinds):
    kinds = frozenset(kinds)
    return FU if len(kinds) > MAX_KINDS else kinds


def container(elements, sequential=False):
    kind = ("container", norm(elements), bool(sequential))
    return frozenset([kind]) if _depth(kind) <= 3 else FU


def tuple_kind(element_sets):
    kind = ("tuple", tuple(norm(e) for e in element_sets))
    if len(kind[1]) > 16 or _depth(kind) > 3:
        return container(frozenset().union(*element_sets) if element_sets else EMPTY)
    return frozenset([kind])


def iter_kinds(kinds):
    if not kinds:
        return EMPTY        # not known yet (see Engine._compute_table)
    out = set()
    for kind in kinds:
        tag = kind[0]
        if tag == "container":
            out |= kind[1]
        elif tag == "tuple":
            for ks in kind[1]:
                out |= ks
        elif tag in ("tensor", "scalar", "safe"):
            out.add(kind)
        else:
            out.add(U)
    return norm(out) or FU


def unpack(kinds, path):
    for step in path:
        out = set()
        for kind in kinds:
            tag = kind[0]
            if tag == "tuple":
                if isinstance(step, int) and step < len(kind[1]):
                    out |= kind[1][step]
                else:
                    for ks in kind[1]:
                        out |= ks
            elif tag == "container":
                out.add(kind) if step == "*" else out.update(kind[1])
            elif tag in ("tensor", "scalar", "safe"):
                out.add(kind)
            else:
                out.add(U)
        if not kinds:
            return EMPTY
        kinds = norm(out) or FU
    return kinds


# ======================================================================================
# What PyTorch calls are: glue (no compute) or compute

TORCH_ALLOC = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "tensor", "as_tensor", "asarray", "from_numpy",
    "frombuffer", "arange", "range", "linspace", "logspace", "eye", "rand", "rand_like",
    "randn", "randn_like", "randint", "randint_like", "randperm", "scalar_tensor", "Tensor",
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "BoolTensor", "ByteTensor", "detach", "clone",
}
TORCH_VIEWS = {
    "reshape", "flatten", "unflatten", "permute", "transpose", "t", "adjoint", "squeeze",
    "unsqueeze", "narrow", "select", "split", "tensor_split", "chunk", "unbind", "movedim",
    "moveaxis", "swapaxes", "swapdims", "as_strided", "broadcast_to", "view_as_real",
    "view_as_complex", "atleast_1d", "atleast_2d", "atleast_3d", "hsplit", "vsplit", "dsplit",
    "squeeze_copy", "expand_copy",
}
TORCH_META = {
    "is_tensor", "is_storage", "is_floating_point", "is_complex", "numel", "result_type",
    "promote_types", "can_cast", "get_default_dtype", "get_default_device", "finfo", "iinfo",
    "broadcast_shapes", "typename", "is_grad_enabled", "is_inference_mode_enabled",
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision", "get_num_threads",
    "is_autocast_enabled", "initial_seed", "sym_int", "sym_float", "is_nonzero",
}
TORCH_MISC = {
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed", "seed",
    "get_rng_state", "set_rng_state", "set_default_dtype", "set_default_device",
    "set_printoptions", "set_num_threads", "use_deterministic_algorithms", "_assert",
    "set_float32_matmul_precision", "device", "dtype", "Size", "Generator", "autocast",
    "set_autocast_enabled", "cdiv",
}
TORCH_TRANSPARENT = {
    "torch.compile", "torch.jit.script", "torch.jit.trace", "torch.cuda.make_graphed_callables",
    "torch.vmap", "torch.func.vmap", "torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
    "torch.compiler.disable", "torch._dynamo.disable", "torch.library.custom_op",
    "torch.library.triton_op", "torch.library.wrap_triton",
}
# Submodules whose calls return nothing that can run code of the candidate's.
TORCH_INERT_SUBMODULES = {"cuda", "backends", "random", "testing", "profiler", "amp", "cpu",
                          "mps", "xpu", "accelerator", "version", "autograd", "library",
                          "overrides", "_logging", "types"}
TORCH_NOT_COMPUTE_SUBMODULES = {
    "cuda", "backends", "utils", "jit", "library", "testing", "random", "profiler", "_dynamo",
    "_inductor", "distributed", "multiprocessing", "amp", "cpu", "overrides", "fx", "compiler",
    "autograd", "mps", "xpu", "accelerator", "types", "serialization", "storage",
    "_utils", "version", "hub", "export", "cpp", "classes", "_logging", "ao",
}
TORCH_OP_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "_c10d_functional",
                       "c10d_functional", "_c10d_functional_autograd", "higher_order", "rngprims",
                       "inductor", "_nested_tensor", "debugprims", "profiler"}
TENSOR_GLUE_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "permute", "transpose",
    "t", "contiguous", "unsqueeze", "squeeze", "unsqueeze_", "squeeze_", "transpose_", "t_",
    "expand", "expand_as", "narrow", "select", "split", "split_with_sizes", "tensor_split",
    "chunk", "unbind", "movedim", "moveaxis", "swapaxes", "swapdims", "as_strided", "unfold",
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "get_device", "to",
    "cuda", "cpu", "float", "double", "half", "bfloat16", "int", "long", "short", "bool",
    "byte", "char", "type", "type_as", "detach", "detach_", "clone", "copy_", "zero_", "fill_",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided",
    "requires_grad_", "item", "tolist", "numpy", "untyped_storage", "storage", "pin_memory",
    "share_memory_", "record_stream", "is_pinned", "dim_order", "resize_", "resize_as_",
    "retain_grad", "__len__", "is_set_to", "is_shared", "set_", "nbytes", "itemsize",
    "is_same_size", "is_nonzero", "view_as_real", "view_as_complex", "as_subclass",
}
TENSOR_SCALAR_METHODS = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "get_device", "item",
    "tolist", "is_pinned", "dim_order", "is_set_to", "is_shared", "nbytes", "itemsize",
    "is_same_size", "is_nonzero", "__len__", "type", "untyped_storage", "storage", "numpy",
}
TENSOR_SCALAR_ATTRS = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad",
    "is_leaf", "layout", "names", "is_sparse", "is_quantized", "is_mkldnn", "grad_fn",
    "is_nested", "itemsize", "nbytes", "output_nr", "_version",
}
TENSOR_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
CONTAINER_METHODS = {"append", "extend", "insert", "index", "count", "clear", "reverse", "sort",
                     "remove", "__len__", "__contains__", "pop", "get", "keys", "values", "items",
                     "setdefault", "update", "popitem", "copy", "add", "discard"}
INVOKING_TENSOR_METHODS = {"apply_", "map_", "map2_", "register_hook"}
NN_GLUE_MODULES = {"Identity", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d",
                   "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
NN_MODULE_METHODS = {
    "parameters", "named_parameters", "buffers", "named_buffers", "children",
    "named_children", "modules", "named_modules", "train", "eval", "to", "cuda", "cpu",
    "float", "double", "half", "bfloat16", "register_buffer", "register_parameter",
    "add_module", "register_module", "state_dict", "load_state_dict", "zero_grad",
    "requires_grad_", "extra_repr", "type", "get_parameter", "get_buffer", "get_submodule",
    "flatten_parameters", "reset_parameters", "__init__", "_get_name", "to_empty",
}
NN_INVOKING_METHODS = {"apply", "register_forward_hook", "register_forward_pre_hook",
                       "register_full_backward_hook", "register_backward_hook"}
# Methods whose name alone says "tensor compute" (used where the receiver is unknown).
TENSOR_COMPUTE_NAMES = set(NATIVE_COMPUTE_METHODS) | {
    "softmax", "matmul", "relu", "sigmoid", "tanh", "conv2d", "bmm", "baddbmm", "addmm",
    "mean", "sum", "var", "std", "layer_norm", "batch_norm", "group_norm", "instance_norm",
    "gelu", "silu", "mish", "hardswish", "hardsigmoid", "logsumexp", "cumsum", "einsum",
}

# Standard-library modules whose calls neither launch kernels nor return callables.
STDLIB_SAFE = {
    "math", "cmath", "time", "random", "os", "sys", "re", "string", "textwrap", "json",
    "warnings", "logging", "numbers", "statistics", "struct", "hashlib", "enum",
    "abc", "numpy", "platform", "datetime", "decimal", "fractions", "heapq", "bisect",
    "array", "pathlib", "shutil", "glob", "tempfile", "io", "hmac", "uuid", "base64",
    "binascii", "zlib", "pprint", "traceback", "dataclasses", "secrets", "locale",
}
# Standard-library modules whose calls do not launch kernels but may return callables.
STDLIB_OTHER = {
    "functools", "operator", "itertools", "collections", "contextlib", "types", "copy",
    "inspect", "weakref", "importlib", "pickle", "marshal", "gc", "threading",
    "multiprocessing", "concurrent", "asyncio", "subprocess", "ctypes", "signal", "atexit",
    "builtins", "socket", "urllib", "http", "queue", "sched", "runpy", "codecs", "ast",
    "typing",
}
CALLABLE_TAGS = ("func", "jit", "extfn", "rawk", "inst", "class", "nnmod", "module")
TRANSPARENT_QUALS = {"functools.partial", "copy.copy", "copy.deepcopy", "functools.wraps",
                     "functools.lru_cache", "functools.cache", "cutlass.cute.compile",
                     "cute.compile"}
LOAD_QUALS = {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}
BUILTIN_NAMES = set(dir(builtins))
REFERENCE_CLASS_NAMES = {"Model"}

# Decorators that keep a function what it is.
TRANSPARENT_DECORATORS = {
    "staticmethod", "classmethod", "property", "functools.wraps", "functools.lru_cache",
    "functools.cache", "functools.cached_property", "torch.no_grad", "torch.inference_mode",
    "torch.enable_grad", "torch.compile", "torch.jit.script", "torch.jit.ignore",
    "torch.jit.unused", "torch.jit.export", "torch.autocast", "torch.cuda.amp.autocast",
    "torch.amp.autocast", "torch.amp.custom_fwd", "torch.amp.custom_bwd",
    "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd", "typing.overload",
    "abc.abstractmethod", "torch._dynamo.disable", "torch.compiler.disable",
    "torch.autograd.function.once_differentiable", "torch.library.custom_op",
    "torch._disable_dynamo", "torch.library.triton_op",
}
JIT_DECORATORS = {
    "triton.jit": "triton", "triton.language.jit": "triton", "triton.autotune": "triton",
    "triton.heuristics": "triton", "triton.runtime.jit.jit": "triton",
    "numba.cuda.jit": "numba", "cutlass.cute.jit": "cute", "cutlass.cute.kernel": "cute",
    "cute.jit": "cute", "cute.kernel": "cute", "tilelang.jit": "tilelang",
    "tilelang.language.prim_func": "tilelang", "tvm.script.tir.prim_func": "tilelang",
}
