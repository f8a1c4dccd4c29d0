#pragma once

#include <string_view>
#include <vector>

#include "runtime/torch_common.hpp"

// The one way kbench's C++ reaches Python: a module by name, from the table of the modules it
// uses (python.cpp): its own package's, PyTorch's and the standard library's, each with what it
// is used for. A name that is not in the table is refused: a new use of Python adds its row.
// tests/layering.py fails on py::module_::import anywhere else in src/.
namespace kbench::worker {

struct PythonModule {
    std::string_view name;
    std::string_view use;
};
const std::vector<PythonModule>& python_modules();

// The module, imported (once; Python keeps it). Throws std::logic_error for a name that is not
// in the table.
py::module_ python_module(std::string_view name);

}  // namespace kbench::worker
