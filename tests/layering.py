#!/usr/bin/env python3
"""Fails when a file of src/ includes a header of a folder that its layer may not include, when
a unit test does not sit where its source does (tests/unit/<folder>/<file>_test.cpp tests
src/<folder>/<file>.hpp or .cpp), and when a verdict's status or blame is assigned anywhere but
src/core/decision.cpp (every other place reports a Decision to decide()); and when a KBENCH_*
environment variable is read with getenv outside src/core/settings.cpp, or named in src/ without
a row in its table; and when C++ imports a Python module anywhere but src/runtime/python.cpp, or
names one (python_module("...")) that its table does not list; and when a program is run to
completion anywhere but src/process/ (kbench's Python scripts and queries go through
run_python(), src/process/python_run.cpp).

The layers are the table between `<!-- layers` and `<!-- /layers -->` in docs/architecture.md:
a row a folder of src/, with the folders it may include. A folder of src/ that the table does not
name is an error too, as is a row for a folder that does not exist.

Usage: layering.py [REPOSITORY]   (default: the repository this file is in)
"""

import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/', re.MULTILINE)
# An assignment of a Status or a Blame to a field: a decision written outside core/decision.cpp.
DECISION = re.compile(r"\.\s*(status|blame)\s*=(?!=)[^;]*\b(Status|Blame)::")
DECIDER = "core/decision.cpp"
# KBENCH_* variables: read only through core/settings (setting()), each in its table.
SETTINGS = "core/settings.cpp"
GETENV = re.compile(r'getenv\(\s*"(KBENCH_[A-Z0-9_]+)"')
VARIABLE = re.compile(r"\bKBENCH_[A-Z0-9_]+\b")
SETTING_ROW = re.compile(r'\{"(KBENCH_[A-Z0-9_]+)",\s*K::')
# Python modules: imported only through runtime/python (python_module()), each in its table.
PYTHON = "runtime/python.cpp"
IMPORT = re.compile(r"module_::import\(")
PYTHON_USE = re.compile(r'python_module\(\s*"([A-Za-z0-9_.]+)"')
PYTHON_ROW = re.compile(r'\{"([A-Za-z0-9_.]+)",\s*"')
# Programs run to completion (kbench's Python scripts among them): only from process/.
RUN = re.compile(r"\brun_to_completion\(")
RUNNERS = "process/"
# Compile definitions of kbench's own build, not environment variables.
NOT_SETTINGS = {"KBENCH_WITH_CUDA", "KBENCH_WITH_CUPTI", "KBENCH_WITH_SERVICE", "KBENCH_SOURCE_DIR"}
ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|(.*)\|\s*$")


def read_layers(page):
    text = page.read_text()
    start = text.find("<!-- layers")
    end = text.find("<!-- /layers -->")
    if start < 0 or end < start:
        raise SystemExit(f"{page}: no layer table (<!-- layers ... <!-- /layers -->)")
    layers = {}
    for line in text[start:end].splitlines():
        match = ROW.match(line)
        if match:
            layers[match.group(1)] = set(re.findall(r"`([a-z_]+)`", match.group(2)))
    return layers


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    src = root / "src"
    layers = read_layers(root / "docs" / "architecture.md")
    errors = []
    folders = {p.name for p in src.iterdir() if p.is_dir()}
    for folder in sorted(folders - layers.keys()):
        errors.append(f"src/{folder}/ is not in the layer table of docs/architecture.md")
    for folder in sorted(layers.keys() - folders):
        errors.append(f"docs/architecture.md names {folder}, which src/ does not have")
    for folder, allowed in sorted(layers.items()):
        for name in sorted(allowed - layers.keys()):
            errors.append(f"docs/architecture.md: {folder} may include {name}, which has no row")
    table = src / SETTINGS
    known = set(SETTING_ROW.findall(table.read_text())) if table.is_file() else set()
    python_table = src / PYTHON
    modules = set(PYTHON_ROW.findall(python_table.read_text())) if python_table.is_file() else set()
    unlisted = {}
    checked = 0
    for path in sorted(src.rglob("*")):
        if path.suffix == ".py" and path.is_file():
            for name in VARIABLE.findall(path.read_text(errors="replace")):
                if name not in known | NOT_SETTINGS:
                    unlisted.setdefault(name, path.relative_to(root))
        if path.suffix not in (".cpp", ".hpp", ".h", ".cu") or not path.is_file():
            continue
        folder = path.relative_to(src).parts[0]
        if folder not in layers:
            continue
        checked += 1
        text = path.read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            if target == folder or target not in folders:
                continue  # its own folder, or a system or generated header
            if target not in layers[folder]:
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: {folder} includes {target}/, "
                              f"which its layer may not (docs/architecture.md, Layers)")
        for name in VARIABLE.findall(text):
            if name not in known | NOT_SETTINGS:
                unlisted.setdefault(name, path.relative_to(root))
        if path.relative_to(src).as_posix() != SETTINGS:
            for match in GETENV.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: {match.group(1)} read with getenv: "
                              f"read it with setting() (src/{SETTINGS})")
        if not path.relative_to(src).as_posix().startswith(RUNNERS):
            for match in RUN.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: a program run directly: run "
                              f"kbench's Python scripts with run_python() (src/process/python_run.hpp)")
        if path.relative_to(src).as_posix() != PYTHON:
            for match in IMPORT.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: a Python module imported "
                              f"directly: use python_module() (src/{PYTHON})")
        for match in PYTHON_USE.finditer(text):
            if match.group(1) not in modules:
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: Python module {match.group(1)} "
                              f"is not in the table of src/{PYTHON}")
        if path.relative_to(src).as_posix() != DECIDER:
            for match in DECISION.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{path.relative_to(root)}:{line}: a {match.group(1)} is assigned "
                              f"outside src/{DECIDER}: report a Decision to decide() instead")
    for name, where in sorted(unlisted.items()):
        errors.append(f"{where}: {name} is not in the settings table of src/{SETTINGS}")
    unit = root / "tests" / "unit"
    for path in sorted(unit.rglob("*_test.cpp")) if unit.is_dir() else []:
        stem = path.relative_to(unit).with_name(path.name[: -len("_test.cpp")])
        if not any((src / stem).with_suffix(s).is_file() for s in (".hpp", ".cpp")):
            errors.append(f"{path.relative_to(root)} tests no file of src/: name it after the "
                          f"file it tests, in that file's folder")
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} layering error(s): move the code, or change the table and the "
              "CMake DEPS together")
        return 1
    print(f"{checked} files of {len(layers)} folders follow the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
