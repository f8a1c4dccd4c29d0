#include "process/python_run.hpp"

namespace kbench::sandbox {

namespace {

// Drops the script's folder from the module path, then runs the script as __main__ (the same
// as `python SCRIPT ARGS` otherwise).
constexpr const char* kRunner =
    "import runpy, sys; del sys.path[0]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')";

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
    } else if (run.code) {
        // -c puts the current folder first on the module path: dropped before the code runs.
        argv.insert(argv.end(), {"-c", "import sys; del sys.path[0]\n" + run.script});
    } else {
        argv.insert(argv.end(), {"-c", kRunner, run.script});
    }
    argv.insert(argv.end(), run.args.begin(), run.args.end());
    return run_to_completion(argv, run.timeout_s, run.input);
}

}  // namespace kbench::sandbox
