#include "process/python_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kbench::sandbox {
namespace {

namespace fs = std::filesystem;

// A folder holding a script, a json.py beside it that would shadow the standard library's, and a
// module only PYTHONPATH reaches.
struct Scripts {
    fs::path dir = fs::temp_directory_path() / ("kbench-python-run-" + std::to_string(::getpid()));
    Scripts() {
        fs::create_directories(dir / "extra");
        std::ofstream(dir / "json.py") << "raise SystemExit('the script folder is on the path')\n";
        std::ofstream(dir / "runpy.py")
            << "raise SystemExit('the current folder is on the path')\n";
        std::ofstream(dir / "extra" / "kbench_extra.py") << "VALUE = 7\n";
        std::ofstream(dir / "probe.py")
            << "import json, sys\n"
               "try:\n"
               "    import kbench_extra\n"
               "    extra = kbench_extra.VALUE\n"
               "except ImportError:\n"
               "    extra = None\n"
               "print(json.dumps({'extra': extra, 'args': sys.argv[1:], 'input': "
               "sys.stdin.read(),\n"
               "                  'bytecode': sys.dont_write_bytecode}))\n";
    }
    ~Scripts() { fs::remove_all(dir); }
};

TEST(PythonRun, EachIsolationSeesWhatItSays) {
    Scripts s;
    std::vector<std::pair<std::string, std::string>> env{
        {"PYTHONPATH", (s.dir / "extra").string()}};
    PythonRun alone{KBENCH_TEST_PYTHON,
                    (s.dir / "probe.py").string(),
                    false,
                    {"a", "b c"},
                    PythonIsolation::standard_library,
                    30,
                    "in",
                    env};
    CommandOutput out = run_python(alone);
    ASSERT_TRUE(out.status.exited && out.status.code == 0) << out.err;
    // Neither the script's folder (json.py) nor PYTHONPATH; its arguments and input as given;
    // no bytecode written.
    EXPECT_EQ(out.out,
              "{\"extra\": null, \"args\": [\"a\", \"b c\"], \"input\": \"in\", "
              "\"bytecode\": true}\n");
    PythonRun with = alone;
    with.isolation = PythonIsolation::packages;
    out = run_python(with);
    ASSERT_TRUE(out.status.exited && out.status.code == 0) << out.err;
    // The user's environment, but still not the script's folder.
    EXPECT_EQ(out.out.rfind("{\"extra\": 7, \"args\": [\"a\", \"b c\"], \"input\": \"in\", ", 0),
              0u)
        << out.out;
    // Where PYTHONSAFEPATH already keeps the current folder off the path, the user's first
    // PYTHONPATH entry stays.
    with.env_set.push_back({"PYTHONSAFEPATH", "1"});
    out = run_python(with);
    ASSERT_TRUE(out.status.exited && out.status.code == 0) << out.err;
    EXPECT_EQ(out.out.rfind("{\"extra\": 7,", 0), 0u) << out.out;
}

TEST(PythonRun, NothingInTheCurrentFolderShadowsAModule) {
    Scripts s;
    for (PythonIsolation isolation :
         {PythonIsolation::standard_library, PythonIsolation::packages}) {
        // From the script folder, whose json.py must not be imported.
        PythonRun run{KBENCH_TEST_PYTHON,
                      "import json, sys; print(json.dumps(sys.argv[1:]))",
                      true,
                      {"x"},
                      isolation,
                      30,
                      {},
                      {}};
        struct InFolder {
            fs::path was = fs::current_path();
            explicit InFolder(const fs::path& dir) { fs::current_path(dir); }
            ~InFolder() { fs::current_path(was); }
        };
        CommandOutput out, script;
        {
            InFolder there(s.dir);
            out = run_python(run);
            // A script run from a folder whose files would shadow the runner's modules.
            script = run_python({KBENCH_TEST_PYTHON,
                                 (s.dir / "probe.py").string(),
                                 false,
                                 {},
                                 isolation,
                                 30,
                                 {},
                                 {}});
        }
        EXPECT_TRUE(script.status.exited && script.status.code == 0) << script.err;
        ASSERT_TRUE(out.status.exited && out.status.code == 0) << out.err;
        EXPECT_EQ(out.out, "[\"x\"]\n");
    }
}

}  // namespace
}  // namespace kbench::sandbox
