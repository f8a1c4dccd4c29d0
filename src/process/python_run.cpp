#include "process/python_run.hpp"

namespace kbench::sandbox {

namespace {

// -c puts the current folder first on the module path ('', none under PYTHONSAFEPATH): dropped
// before anything is imported from there.
constexpr const char* kNoCurrentFolder =
    "import sys\nif sys.path and sys.path[0] == '':\n    del sys.path[0]\n";
// Then runs the script as __main__ (the same as `python SCRIPT ARGS`, but for its folder, which
// runpy does not put on the module path).
constexpr const char* kRunner =
    "import runpy\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n";

}  // namespace

CommandOutput run_python(const PythonRun& run) {
    std::vector<std::string> argv;
    if (!run.env_set.empty()) {
        argv.push_back("env");
        for (const auto& [name, value] : run.env_set) argv.push_back(name + "=" + value);
    }
    argv.push_back(run.python);
    if (run.isolation == PythonIsolation::standard_library) {
        argv.insert(argv.end(), {"-I", "-S", "-B"});
        if (run.code) argv.push_back("-c");
        argv.push_back(run.script);
    } else {
        argv.insert(argv.end(),
                    {"-c", std::string(kNoCurrentFolder) + (run.code ? run.script : kRunner)});
        if (!run.code) argv.push_back(run.script);
    }
    argv.insert(argv.end(), run.args.begin(), run.args.end());
    return run_to_completion(argv, run.timeout_s, run.input);
}

}  // namespace kbench::sandbox
