#include "runtime/python.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kbench::worker {

const std::vector<PythonModule>& python_modules() {
    static const std::vector<PythonModule> table = {
        // kbench's own package (src/worker/python/kbench_worker/)
        {"kbench_worker.rules", "KernelBench's rules: seeds, inputs, construction, precision"},
        {"kbench_worker.memory", "the device memory PyTorch's allocator holds, its cap, peaks"},
        {"kbench_worker.extensions", "how candidates' extensions are built and loaded"},
        {"kbench_worker.floor", "the speed-of-light floor: the reference's flops and bytes"},
        // PyTorch
        {"torch", "tensors, devices, versions, torch.compile for baselines"},
        {"torch.cuda", "the device: synchronize, empty_cache, memory"},
        {"torch.cuda.memory", "the caching allocator's own settings"},
        // the standard library
        {"sys", "modules, the interpreter's state"},
        {"builtins", "the built-in functions a candidate cannot replace for kbench"},
        {"types", "fresh modules for reference and candidate programs"},
        {"importlib.util", "modules from files (Triton reads kernel source from them)"},
        {"traceback", "a Python error's text"},
        {"json", "values to and from text"},
        {"gc", "what is still alive"},
        {"os", "the environment of a judge's compile caches"},
        {"tempfile", "a judge's own folder for compile caches"},
        {"shutil", "removing that folder"},
        {"atexit", "removing it at the end"},
        {"copy", "imported before a zygote forks"},
        {"inspect", "imported before a zygote forks"},
        {"functools", "imported before a zygote forks"},
    };
    return table;
}

py::module_ python_module(std::string_view name) {
    const auto& table = python_modules();
    if (std::none_of(table.begin(), table.end(),
                     [&](const PythonModule& m) { return m.name == name; }))
        throw std::logic_error("kbench calls no Python module " + std::string(name) +
                               " (src/runtime/python.cpp lists those it calls)");
    return py::module_::import(std::string(name).c_str());
}

}  // namespace kbench::worker
