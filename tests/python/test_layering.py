"""tests/layering.py: an include across the layers of docs/architecture.md fails the check."""

import pathlib
import subprocess
import sys

CHECK = pathlib.Path(__file__).parents[1] / "layering.py"

PAGE = """# Architecture
<!-- layers: folder | may include -->
| folder | may include |
| --- | --- |
| `core` | |
| `judge` | `core` |
<!-- /layers -->
"""


def tree(tmp_path, files, page=PAGE):
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "architecture.md").write_text(page)
    for name, text in files.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return subprocess.run([sys.executable, str(CHECK), str(tmp_path)], capture_output=True,
                          text=True)


def test_includes_down_the_layers_pass(tmp_path):
    run = tree(tmp_path, {"core/a.hpp": "#include <vector>\n",
                          "judge/b.cpp": '#include "core/a.hpp"\n#include "judge/b.hpp"\n'})
    assert run.returncode == 0, run.stdout
    assert "2 files of 2 folders" in run.stdout


def test_an_include_up_the_layers_fails_with_file_and_line(tmp_path):
    run = tree(tmp_path, {"core/a.cpp": '#include <vector>\n#include "judge/b.hpp"\n',
                          "judge/b.hpp": "\n"})
    assert run.returncode == 1
    assert "src/core/a.cpp:2: core includes judge/" in run.stdout


def test_a_folder_missing_from_the_table_fails(tmp_path):
    run = tree(tmp_path, {"core/a.hpp": "\n", "judge/b.hpp": "\n", "extra/c.hpp": "\n"})
    assert run.returncode == 1
    assert "src/extra/ is not in the layer table" in run.stdout


def test_a_row_without_a_folder_fails(tmp_path):
    run = tree(tmp_path, {"core/a.hpp": "\n"})
    assert run.returncode == 1
    assert "names judge, which src/ does not have" in run.stdout


def test_a_unit_test_sits_where_its_source_does(tmp_path):
    files = {"core/a.hpp": "\n", "judge/b.hpp": "\n"}
    (tmp_path / "tests" / "unit" / "core").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "core" / "a_test.cpp").write_text("\n")
    assert tree(tmp_path, files).returncode == 0
    (tmp_path / "tests" / "unit" / "core" / "b_test.cpp").write_text("\n")
    run = subprocess.run([sys.executable, str(CHECK), str(tmp_path)], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "tests/unit/core/b_test.cpp tests no file of src/" in run.stdout


def test_a_status_is_written_only_by_the_decision_module(tmp_path):
    files = {"core/decision.cpp": "void decide(Verdict& v) { v.status = Status::correct; }\n",
             "judge/b.cpp": "bool f(const Verdict& v) { return v.status == Status::correct; }\n"}
    assert tree(tmp_path / "one", files).returncode == 0
    files["judge/c.cpp"] = "void g(Verdict& v) {\n    v.status =\n        Status::rejected;\n}\n"
    run = tree(tmp_path / "two", files)
    assert run.returncode == 1
    assert "src/judge/c.cpp:2: a status is assigned outside src/core/decision.cpp" in run.stdout


def test_kbench_variables_are_read_through_the_settings_table(tmp_path):
    table = '{"KBENCH_CACHE", K::user, "", "", "the cache"},\n'
    files = {"core/settings.cpp": table + 'std::getenv(std::string(name).c_str());\n',
             "judge/b.cpp": 'auto dir = setting("KBENCH_CACHE");\n',
             "judge/c.py": 'os.environ.get("KBENCH_CACHE")\n'}
    assert tree(tmp_path / "one", files).returncode == 0
    files["judge/d.cpp"] = 'const char* x = std::getenv("KBENCH_CACHE");\n'
    files["judge/e.py"] = 'os.environ.get("KBENCH_SECRET")\n'
    run = tree(tmp_path / "two", files)
    assert run.returncode == 1
    assert "src/judge/d.cpp:1: KBENCH_CACHE read with getenv" in run.stdout
    assert "src/judge/e.py: KBENCH_SECRET is not in the settings table" in run.stdout
