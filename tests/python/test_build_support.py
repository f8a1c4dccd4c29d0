"""Tests of kbench's build shortcuts: kbench_worker/extensions.py (which builds get the
precompiled torch/extension.h and the lighter CUDA header, and that a build failing with them is
built again as written) and kbench_worker/build_support.py (the support it makes, and a real
build with it).

Run from the repository root:
    python3 -m pytest -q -p no:cacheprovider tests/python/test_build_support.py
"""

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "worker" / "python" / "kbench_worker"


def load(name):
    spec = importlib.util.spec_from_file_location("kbench_" + name, PACKAGE / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


extensions = load("extensions")


@pytest.fixture
def support(tmp_path):
    """A support folder laid out as build_support.py lays it out (files empty)."""
    for level in ("O0", "O2", "O3"):
        (tmp_path / "pch" / level).mkdir(parents=True)
        (tmp_path / "pch" / level / "kbench_torch_extension.h.gch").write_bytes(b"")
    return str(tmp_path)


def added(arguments, support, inline=True):
    return extensions._shortcuts(arguments, inline, support)


def test_no_support_no_shortcut():
    args = {"name": "m", "cpp_sources": "int f();", "cuda_sources": "__global__ void k() {}"}
    assert added(args, "") == (args, [])


def test_load_inline_gets_the_precompiled_header_at_its_level(support):
    for flags, level in ((None, "O0"), (["-O3"], "O3"), (["-O2", "-g"], "O2"),
                         (["-O3", "-O0"], "O0")):
        args = {"name": "m", "cpp_sources": "int f();", "extra_cflags": flags}
        shortcut, what = added(args, support)
        header = os.path.join(support, "pch", level, "kbench_torch_extension.h")
        assert shortcut["extra_cflags"][:2] == ["-include", header], flags
        assert shortcut["extra_cflags"][2:] == list(flags or [])
        assert what == ["precompiled torch/extension.h"]
        assert args["extra_cflags"] == flags  # the call's own arguments are left alone


def test_levels_without_a_header_build_as_written(support):
    for flags in (["-O1"], ["-Os"], ["-Ofast"], ["-O3", "-Og"]):
        shortcut, what = added({"name": "m", "cpp_sources": "int f();", "extra_cflags": flags},
                               support)
        assert what == [] and shortcut["extra_cflags"] == flags


def test_no_implicit_headers_only_when_the_source_starts_with_the_header(support):
    starts = {"name": "m", "no_implicit_headers": True,
              "cpp_sources": "// mine\n\n#include <torch/extension.h>\nint f();"}
    assert added(starts, support)[1] == ["precompiled torch/extension.h"]
    later = {"name": "m", "no_implicit_headers": True,
             "cpp_sources": "#include <vector>\n#include <torch/extension.h>\nint f();"}
    assert added(later, support)[1] == []
    without = {"name": "m", "no_implicit_headers": True, "cpp_sources": "#include <ATen/ATen.h>"}
    assert added(without, support)[1] == []


def test_load_never_gets_the_precompiled_header(support, tmp_path):
    source = tmp_path / "m.cpp"
    source.write_text("#include <torch/extension.h>\n")
    shortcut, what = added({"name": "m", "sources": [str(source)]}, support, inline=False)
    assert what == [] and "extra_cflags" not in shortcut


def light_folder(flags):
    assert flags[0].startswith("-I"), flags
    folder = flags[0][2:]
    header = open(os.path.join(folder, "torch", "types.h")).read()
    extension = open(os.path.join(folder, "torch", "extension.h")).read()
    assert extension == "#pragma once\n#include <torch/types.h>\n"
    return folder, header


def test_cuda_files_get_a_header_of_their_own_unless_they_use_pybind11(support, tmp_path):
    plain = {"name": "m", "cpp_sources": "int f();", "extra_cuda_cflags": ["-O3"],
             "cuda_sources": "__global__ void k() {}\n"
                             "torch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }"}
    shortcut, what = added(plain, support)
    folder, header = light_folder(shortcut["extra_cuda_cflags"])
    assert shortcut["extra_cuda_cflags"][1:] == ["-O3"]
    assert "a torch/types.h of the operators it calls in CUDA files" in what
    assert "#include <ATen/ops/empty_like.h>" in header
    assert "#include <ATen/core/Tensor.h>" in header and "constexpr auto kFloat32" in header
    # The operators it includes (and empty_like, Tensor's operators') through lean headers of
    # PyTorch's inline functions, without ATen/Context.h and the rest.
    lean = open(os.path.join(folder, "ATen", "ops", "empty_like.h")).read()
    assert "#include <ATen/ops/empty_like_ops.h>" in lean and "ATen/Context.h" not in lean
    assert "inline at::Tensor empty_like(" in lean
    assert "#define AT_PER_OPERATOR_HEADERS" in header
    # The same code, the same folder; other code, another.
    assert added(dict(plain), support)[0]["extra_cuda_cflags"][0] == "-I" + folder
    other = added(dict(plain, cuda_sources="void g() { at::zeros({1}); }"), support)[0]
    assert other["extra_cuda_cflags"][0] != "-I" + folder
    for uses in ("PYBIND11_MODULE(m, m) {}", "namespace py = pybind11;", "py::object o;",
                 "auto t = torch::tensor({1.0, 2.0});",
                 "auto z = torch::zeros({2}, torch::TensorOptions().requires_grad(true));"):
        shortcut, what = added(dict(plain, cuda_sources="__global__ void k() {}\n" + uses),
                               support)
        assert shortcut["extra_cuda_cflags"] == ["-O3"], uses
    cu = tmp_path / "k.cu"
    cu.write_text("#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n")
    shortcut, _ = added({"name": "m", "sources": [str(cu)]}, support, inline=False)
    assert "extra_cuda_cflags" not in shortcut
    cu.write_text("#include <torch/extension.h>\n__global__ void k() {}\n")
    shortcut, _ = added({"name": "m", "sources": [str(cu)]}, support, inline=False)
    assert len(shortcut["extra_cuda_cflags"]) == 1
    light_folder(shortcut["extra_cuda_cflags"])


def light_header_of(tmp_path, operators, code):
    """The light header of code against an include folder whose ATen/ops holds a header for each
    operator given, and the operators it includes."""
    include = tmp_path / "include"
    (include / "ATen" / "ops").mkdir(parents=True)
    for op in operators:
        (include / "ATen" / "ops" / (op + ".h")).write_text("")
    header = extensions.light_header([code], str(include))
    ops = sorted(line.split("/")[-1][:-3] for line in header.splitlines()
                 if line.startswith("#include <ATen/ops/"))
    assert header == extensions.light_header([code], str(include))
    return ops


def test_the_light_header_names_the_operators_the_code_calls(tmp_path):
    code = """
__global__ void k(float* y, const float* x) { y[0] = max(x[0], 0.f); }
torch::Tensor f(torch::Tensor x) {
    auto y = torch :: empty_like (x);
    auto z = at::zeros({2}, x.options());
    x.relu();              // a method: the Tensor has it
    p->relu();             // a member
    std::vector<int> v; v.empty();
    return torch::not_an_op(y);
}"""
    ops = light_header_of(tmp_path, ("empty", "empty_like", "max", "zeros", "relu"), code)
    assert ops == ["empty_like", "max", "zeros"]


def test_out_and_in_place_forms_bring_their_operators_header(tmp_path):
    # ATen declares at::add_out, at::add_outf and at::relu_ in add.h and relu.h: without them a
    # build with the light header fails and is built again as written (a minute on a GPU).
    code = """
torch::Tensor f(torch::Tensor x, torch::Tensor y, torch::Tensor out) {
    at::add_out(out, x, y);
    at::mm_outf(x, y, out);
    torch::relu_(x);
    at::clamp_min_out(out, x, 0);
    at::_softmax_out(out, x, 1, false);
    at::nothing_out(out);
    my_helper_(x);
    return out;
}"""
    ops = light_header_of(tmp_path, ("add", "relu", "mm", "clamp_min", "_softmax"), code)
    assert ops == ["_softmax", "add", "clamp_min", "mm", "relu"]


NVCC_UNDEFINED = ("Error building extension 'm': [1/3] nvcc cuda.cu\nFAILED: cuda.cuda.o\n"
                  "cuda.cu(12): error: identifier \"C10_CUDA_KERNEL_LAUNCH_CHECK\" is undefined\n"
                  "cuda.cu(30): error: identifier \"CUBLAS_FILL_UPPER\" is undefined\n"
                  "2 errors detected in the compilation of \"cuda.cu\".\n")


def test_only_names_no_pytorch_header_declares_fail_as_written_too(support):
    assert extensions._fails_as_written_too(NVCC_UNDEFINED, support) == [], "no identifiers file"
    (pathlib.Path(support) / "cuda").mkdir()
    (pathlib.Path(support) / "cuda" / "identifiers.txt").write_text("TORCH_CHECK\nat\nempty_like\n")
    assert extensions._fails_as_written_too(NVCC_UNDEFINED, support) == [
        "C10_CUDA_KERNEL_LAUNCH_CHECK", "CUBLAS_FILL_UPPER"]
    declared = NVCC_UNDEFINED.replace("CUBLAS_FILL_UPPER", "empty_like")
    assert extensions._fails_as_written_too(declared, support) == []
    other = NVCC_UNDEFINED + "cuda.cu(40): error: namespace \"at\" has no member \"foo\"\n"
    assert extensions._fails_as_written_too(other, support) == []
    assert extensions._fails_as_written_too("Error building extension 'm'", support) == []


def test_a_build_failing_on_undeclared_names_is_not_built_again(support, tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    (pathlib.Path(support) / "cuda").mkdir()
    (pathlib.Path(support) / "cuda" / "identifiers.txt").write_text("TORCH_CHECK\n")
    calls = []

    def load_inline(name, cpp_sources, cuda_sources=None, extra_cflags=None,
                    extra_cuda_cflags=None, verbose=False):
        calls.append(verbose)
        # PyTorch puts ninja's output in the message only when it captured it (not verbose).
        raise RuntimeError(NVCC_UNDEFINED if not verbose else "Error building extension 'm'")

    build = extensions._wrap(load_inline, "", "", "cuda", support, FakeVersioner())
    with pytest.raises(RuntimeError, match="C10_CUDA_KERNEL_LAUNCH_CHECK"):
        build("m", "int f();", cuda_sources="__global__ void k() {}", verbose=True)
    assert calls == [False], "the build with the shortcuts is quiet, whatever the call asked"
    assert "not built again as written" in capsys.readouterr().err


class FakeVersioner:
    def __init__(self):
        self.entries = {}


def test_a_build_failing_with_the_shortcuts_is_built_again_as_written(support, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []
    versioner = FakeVersioner()
    message = ["Error building extension 'm':\nFAILED: cuda.cuda.o\nerror"]

    def load_inline(name, cpp_sources, cuda_sources=None, extra_cflags=None,
                    extra_cuda_cflags=None, extra_ldflags=None, build_directory=None):
        calls.append({"extra_cflags": extra_cflags, "extra_cuda_cflags": extra_cuda_cflags})
        versioner.entries[name] = "built once"
        (tmp_path / "ext" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "ext" / name / "main.o").write_text("stale")
        if len(calls) == 1:
            raise RuntimeError(message[0])
        return "module"

    build = extensions._wrap(load_inline, "", "", "cuda", support, versioner)
    assert build("m", "int f();", cuda_sources="__global__ void k() {}") == "module"
    assert len(calls) == 2
    assert calls[0]["extra_cflags"][0] == "-include" and calls[0]["extra_cuda_cflags"]
    # Host files keep their precompiled header, the very header they include first.
    assert calls[1] == {"extra_cflags": calls[0]["extra_cflags"], "extra_cuda_cflags": None}
    assert "building it again as written" in capsys.readouterr().err
    # Where the output does not say what failed, all of it is built again as written.
    calls.clear()
    versioner.entries.clear()
    message[0] = "Error building extension 'm'"
    assert build("m", "int f();", cuda_sources="__global__ void k() {}") == "module"
    assert calls[1] == {"extra_cflags": None, "extra_cuda_cflags": None}


def test_a_build_failing_as_written_fails(support, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []

    def load_inline(name, cpp_sources, extra_cflags=None):
        calls.append(extra_cflags)
        raise RuntimeError("Error building extension 'm': " + str(len(calls)))

    build = extensions._wrap(load_inline, "", "", "cpu", support, FakeVersioner())
    with pytest.raises(RuntimeError, match="extension 'm': 2"):
        build("m", "int f();")
    assert len(calls) == 2 and calls[1] is None


def test_without_shortcuts_a_failure_is_not_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []

    def load_inline(name, cpp_sources, extra_cflags=None):
        calls.append(1)
        raise RuntimeError("broken")

    build = extensions._wrap(load_inline, "", "", "cpu", "", FakeVersioner())
    with pytest.raises(RuntimeError):
        build("m", "int f();")
    assert len(calls) == 1


@pytest.mark.skipif(not os.environ.get("KBENCH_SLOW_TESTS") and os.environ.get("CI") is None,
                    reason="makes precompiled headers (about a minute on two cores): set "
                           "KBENCH_SLOW_TESTS=1 (CI runs it)")
def test_a_real_support_and_a_build_that_uses_it(tmp_path):
    out = tmp_path / "support"
    made = subprocess.run([sys.executable, str(PACKAGE / "build_support.py"), str(out), "cpu"],
                          capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) >= {"pch/O0/kbench_torch_extension.h.gch",
                                      "pch/O3/kbench_torch_extension.h.gch"}
    assert manifest["version"] == 2
    assert not any(f.startswith("-DTORCH_EXTENSION_NAME") for f in manifest["cflags"])
    for name in manifest["files"]:
        assert not os.access(out / name, os.W_OK) or os.geteuid() == 0
        assert (os.stat(out / name).st_mode & 0o222) == 0
    # A build with it reads the precompiled header, not the text: in a copy whose text header is
    # an #error, the build still succeeds, and not by being built again as written.
    checked = tmp_path / "checked"
    shutil.copytree(out, checked)
    text = checked / "pch" / "O3" / "kbench_torch_extension.h"
    os.chmod(text, 0o644)
    text.write_text('#error "kbench test: the text header was parsed, not its precompiled form"\n')
    script = tmp_path / "build.py"
    script.write_text(f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ext", {str(PACKAGE / "extensions.py")!r})
ext = importlib.util.module_from_spec(spec); spec.loader.exec_module(ext)
ext.install("", "cpu")
from torch.utils.cpp_extension import load_inline
import torch
m = load_inline(name="kbench_pch_probe", cpp_sources="torch::Tensor twice(torch::Tensor x) {{ return x * 2; }}",
                functions=["twice"], extra_cflags=["-O3", "-Winvalid-pch"], verbose=True)
print("result", m.twice(torch.ones(3)).tolist())
""")
    env = dict(os.environ, KBENCH_BUILD_SUPPORT=str(checked),
               TORCH_EXTENSIONS_DIR=str(tmp_path / "ext"))
    built = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "result [2.0, 2.0, 2.0]" in built.stdout
    assert "building it again as written" not in built.stderr, built.stderr[-3000:]
    ninja = (tmp_path / "ext" / "kbench_pch_probe" / "build.ninja").read_text()
    assert "-include " + str(text) in ninja


def test_a_host_object_that_failed_is_not_built_again(support, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []

    def load_inline(name, cpp_sources, cuda_sources=None, extra_cflags=None,
                    extra_cuda_cflags=None):
        calls.append(1)
        raise RuntimeError("Error building extension 'm': [1/3] c++ main.cpp\n"
                           "FAILED: main.o\nmain.cpp:3: error: expected ';'\n")

    build = extensions._wrap(load_inline, "", "", "cuda", support, FakeVersioner())
    with pytest.raises(RuntimeError, match="FAILED: main.o"):
        build("m", "int f()", cuda_sources="__global__ void k() {}")
    assert len(calls) == 1


def test_a_cuda_object_that_failed_is_built_again(support, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []

    def load_inline(name, cpp_sources, cuda_sources=None, extra_cflags=None,
                    extra_cuda_cflags=None):
        calls.append(1)
        raise RuntimeError("Error building extension 'm': FAILED: cuda.cuda.o\n"
                           "cuda.cu(5): error: identifier \"at::foo\" is undefined\n")

    build = extensions._wrap(load_inline, "", "", "cuda", support, FakeVersioner())
    with pytest.raises(RuntimeError):
        build("m", "int f();", cuda_sources="__global__ void k() {}")
    assert len(calls) == 2


NVCC_PROBE = r"""
import importlib.util, json, os, shlex, subprocess, sys, tempfile, time
def load(name):
    spec = importlib.util.spec_from_file_location("kbench_" + name, os.path.join(sys.argv[1], name + ".py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
support, extensions = load("build_support"), load("extensions")
work = tempfile.mkdtemp()
v = support._torch_flags(True, work)
nvcc = shlex.split(v.get("nvcc", "nvcc"))
flags = support._without_extension_name(shlex.split(v["cuda_cflags"])) + ["-DTORCH_EXTENSION_NAME=probe"]
post = support._without_extension_name(shlex.split(v["cuda_post_cflags"]))
code = open(sys.argv[2]).read()
source = os.path.join(work, "cuda.cu")
open(source, "w").write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + code)
folder = extensions._light_folder([code])
start = time.monotonic()
done = subprocess.run(nvcc + ["-I" + folder] + flags + ["-c", source, "-o", source + ".o"] + post,
                      capture_output=True, text=True)
seconds = time.monotonic() - start
made = os.path.join(work, "support")
support._cuda_identifiers(v, os.path.join(made, "cuda"))
print(json.dumps({"rc": done.returncode, "seconds": seconds, "err": done.stderr[-3000:],
                  "as_written_too": extensions._fails_as_written_too(done.stderr, made)}))
"""

# What model-written CUDA code does with PyTorch's C++ types, in one file.
TYPICAL_CUDA = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>
#define CHECK_INPUT(x) TORCH_CHECK(x.is_cuda() && x.is_contiguous(), #x " must be a contiguous CUDA tensor")
template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > scalar_t(0) ? x[i] : scalar_t(0);
}
torch::Tensor relu_cuda(torch::Tensor x) {
    CHECK_INPUT(x);
    auto y = torch::empty_like(x);
    auto z = torch::zeros({x.size(0)}, torch::TensorOptions().dtype(torch::kFloat32).device(x.device()));
    const int64_t n = x.numel();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "relu", [&] {
        relu_kernel<scalar_t><<<(n + 255) / 256, 256>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    });
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
    return y.view({-1}).reshape(x.sizes()) + z.sum() * 0;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"),
                    reason="no nvcc")
def test_typical_cuda_code_compiles_with_its_own_header(tmp_path):
    """nvcc, with load_inline's flags, compiles model-style CUDA code with the light header
    first on its include path (no GPU needed: compile only)."""
    source = tmp_path / "typical.cu"
    source.write_text(TYPICAL_CUDA)
    env = dict(os.environ, TORCH_CUDA_ARCH_LIST="9.0", TMPDIR=str(tmp_path))
    env["PATH"] = env.get("PATH", "") + ":/usr/local/cuda/bin"
    done = subprocess.run([sys.executable, "-c", NVCC_PROBE, str(PACKAGE), str(source)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0, result["err"]
    # A macro PyTorch's extension headers do not define (c10/cuda/CUDAException.h's) fails with
    # the light header and would as written: no second build.
    source.write_text(TYPICAL_CUDA + "\nvoid g() { C10_CUDA_KERNEL_LAUNCH_CHECK(); }\n")
    done = subprocess.run([sys.executable, "-c", NVCC_PROBE, str(PACKAGE), str(source)],
                          capture_output=True, text=True, env=env, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rc"] != 0 and "C10_CUDA_KERNEL_LAUNCH_CHECK" in result["err"]
    assert result["as_written_too"] == ["C10_CUDA_KERNEL_LAUNCH_CHECK"]
    # A name the light header leaves out and PyTorch's declares (ATen/Functions.h's at::sigmoid
    # through a bare call is found; at::native's is not): built again as written.
    source.write_text(TYPICAL_CUDA + "\nvoid g(at::Tensor x) { at::cuda::getCurrentCUDAStream(); }\n")
    done = subprocess.run([sys.executable, "-c", NVCC_PROBE, str(PACKAGE), str(source)],
                          capture_output=True, text=True, env=env, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rc"] != 0 and result["as_written_too"] == [], result["err"]
    # Out= and in-place forms find their operator's header (they were built again as written).
    source.write_text(TYPICAL_CUDA + "\nvoid g(at::Tensor x, at::Tensor y, at::Tensor out) {\n"
                      "    at::add_out(out, x, y); torch::relu_(x); at::mm_outf(x, y, out);\n}\n")
    done = subprocess.run([sys.executable, "-c", NVCC_PROBE, str(PACKAGE), str(source)],
                          capture_output=True, text=True, env=env, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0, result["err"]


def test_import_before_fork_leaves_cuda_unasked():
    """The zygote imports torch.utils.cpp_extension before it forks sandboxes: the import must
    not ask torch.cuda.is_available() (which starts the driver), and leaves it as it was."""
    program = f"""
import importlib.util, sys, torch
asked = []
real = torch.cuda.is_available
def watched():
    asked.append(1)
    return real()
torch.cuda.is_available = watched
spec = importlib.util.spec_from_file_location("kbench_extensions", {str(PACKAGE / "extensions.py")!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
assert "torch.utils.cpp_extension" not in sys.modules
module.import_before_fork()
assert "torch.utils.cpp_extension" in sys.modules
assert torch.cuda.is_available is watched
print("asked", len(asked))
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "asked 0"
