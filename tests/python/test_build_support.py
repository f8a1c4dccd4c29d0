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
    (tmp_path / "shadow" / "torch").mkdir(parents=True)
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


def test_cuda_files_get_the_lighter_header_unless_they_use_pybind11(support, tmp_path):
    shadow = "-I" + os.path.join(support, "shadow")
    plain = {"name": "m", "cpp_sources": "int f();", "cuda_sources": "__global__ void k() {}",
             "extra_cuda_cflags": ["-O3"]}
    shortcut, what = added(plain, support)
    assert shortcut["extra_cuda_cflags"] == [shadow, "-O3"]
    assert "torch/extension.h without the C++ frontend in CUDA files" in what
    for uses in ("PYBIND11_MODULE(m, m) {}", "namespace py = pybind11;", "py::object o;"):
        shortcut, what = added(dict(plain, cuda_sources="__global__ void k() {}\n" + uses),
                               support)
        assert shortcut["extra_cuda_cflags"] == ["-O3"], uses
    cu = tmp_path / "k.cu"
    cu.write_text("#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n")
    shortcut, _ = added({"name": "m", "sources": [str(cu)]}, support, inline=False)
    assert "extra_cuda_cflags" not in shortcut
    cu.write_text("#include <torch/extension.h>\n__global__ void k() {}\n")
    shortcut, _ = added({"name": "m", "sources": [str(cu)]}, support, inline=False)
    assert shortcut["extra_cuda_cflags"] == [shadow]


class FakeVersioner:
    def __init__(self):
        self.entries = {}


def test_a_build_failing_with_the_shortcuts_is_built_again_as_written(support, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    calls = []
    versioner = FakeVersioner()

    def load_inline(name, cpp_sources, cuda_sources=None, extra_cflags=None,
                    extra_cuda_cflags=None, extra_ldflags=None, build_directory=None):
        calls.append({"extra_cflags": extra_cflags, "extra_cuda_cflags": extra_cuda_cflags})
        versioner.entries[name] = "built once"
        (tmp_path / "ext" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "ext" / name / "main.o").write_text("stale")
        if len(calls) == 1:
            raise RuntimeError("Error building extension 'm'")
        return "module"

    build = extensions._wrap(load_inline, "", "", "cuda", support, versioner)
    assert build("m", "int f();", cuda_sources="__global__ void k() {}") == "module"
    assert len(calls) == 2
    assert calls[0]["extra_cflags"][0] == "-include" and calls[0]["extra_cuda_cflags"]
    assert calls[1] == {"extra_cflags": None, "extra_cuda_cflags": None}
    assert "building it again as written" in capsys.readouterr().err


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
                                      "pch/O3/kbench_torch_extension.h.gch",
                                      "shadow/torch/extension.h"}
    assert not any(f.startswith("-DTORCH_EXTENSION_NAME") for f in manifest["cflags"])
    for name in manifest["files"]:
        assert not os.access(out / name, os.W_OK) or os.geteuid() == 0
        assert (os.stat(out / name).st_mode & 0o222) == 0
    # A build with it: GCC says which precompiled header it read (-H marks it with "!").
    script = tmp_path / "build.py"
    script.write_text(f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ext", {str(PACKAGE / "extensions.py")!r})
ext = importlib.util.module_from_spec(spec); spec.loader.exec_module(ext)
ext.install("", "cpu")
from torch.utils.cpp_extension import load_inline
import torch
m = load_inline(name="kbench_pch_probe", cpp_sources="torch::Tensor twice(torch::Tensor x) {{ return x * 2; }}",
                functions=["twice"], extra_cflags=["-O3", "-H"], verbose=True)
print("result", m.twice(torch.ones(3)).tolist())
""")
    env = dict(os.environ, KBENCH_BUILD_SUPPORT=str(out),
               TORCH_EXTENSIONS_DIR=str(tmp_path / "ext"))
    built = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "result [2.0, 2.0, 2.0]" in built.stdout
    log = built.stdout + built.stderr
    assert "! " + str(out / "pch" / "O3" / "kbench_torch_extension.h.gch") in log


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
