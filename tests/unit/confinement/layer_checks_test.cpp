// Each layer's check from outside: it confirms what a confined process has, and contradicts a
// process that has none of it.
#include "confinement/layer_checks.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "confinement/lockdown.hpp"

namespace kbench::sandbox {
namespace {

namespace fs = std::filesystem;

TEST(LayerChecks, EveryLayerOfTheTableHasACheck) {
    for (const std::string& layer : lockdown_layers()) EXPECT_TRUE(layer_has_check(layer)) << layer;
    EXPECT_FALSE(layer_has_check("no_such_layer"));
}

// A confined process: every layer it reports applied is confirmed (spawn_confined has checked
// them already; each check again here), and the layers that CI's machine is known to give are
// among them where it asks (KBENCH_TEST_REQUIRE_LAYERS, checked by the trust test).
TEST(LayerChecks, EveryLayerAConfinedProcessReportsAppliedIsConfirmed) {
    // A space in its folder's name: /proc/PID/mountinfo writes it as \040.
    fs::path scratch =
        fs::temp_directory_path() / ("kbench-layer checks-" + std::to_string(::getpid()));
    fs::create_directories(scratch);
    LockdownSpec spec;
    spec.writable = {scratch.string()};
    spec.disk_bytes = std::uint64_t(64) << 20;
    if (::geteuid() == 0) {
        spec.uid = spec.gid = 65534;
        fs::permissions(scratch, fs::perms::all);
    }
    int wait_fd[2];
    ASSERT_EQ(::pipe(wait_fd), 0);
    int null = ::open("/dev/null", O_RDONLY);
    ConfinedProcess p = spawn_confined(spec, {wait_fd[0], null, null}, nullptr, [] {
        char c;
        return int(::read(0, &c, 1));  // until the test is done looking
    });
    ::close(wait_fd[0]);
    ::close(null);
    EXPECT_FALSE(p.layers.applied.empty());
    for (const std::string& layer : p.layers.applied) {
        LayerCheck c = check_layer(layer, p.body_pid, spec);
        EXPECT_EQ(c.result, LayerCheck::confirmed) << layer << ": " << c.why;
    }
    for (const auto& [layer, why] : p.layers.missing)
        EXPECT_EQ(why.find("its step reported no error"), std::string::npos)
            << layer << ": " << why;
    ::close(wait_fd[1]);
    for (int fd : p.folders) ::close(fd);
    wait_confined(p);
    fs::remove_all(scratch);
}

// A process under no layer: every check that can read it says so.
TEST(LayerChecks, AProcessUnderNoLayerContradictsEachCheck) {
    pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    LockdownSpec spec;
    spec.writable = {"/tmp"};
    spec.uid = spec.gid = 65534;
    spec.cgroup = spec.pids_cgroup = spec.cpu_cgroup = "/sys/fs/cgroup/kbench-0-none";
    for (const std::string& layer : lockdown_layers()) {
        if (layer == "identity" && ::geteuid() != 0) continue;  // its user namespace is ours
        LayerCheck c = check_layer(layer, child, spec);
        EXPECT_EQ(c.result, LayerCheck::contradicted) << layer << ": " << c.why;
        EXPECT_FALSE(c.why.empty()) << layer;
    }
    // A report that calls them applied loses them, each with what was seen.
    LayerReport report;
    report.applied = {"seccomp", "pid_namespace"};
    check_layers(report, child, spec);
    EXPECT_TRUE(report.applied.empty());
    EXPECT_NE(report.missing["seccomp"].find("its status says Seccomp 0"), std::string::npos)
        << report.missing["seccomp"];
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    // A process that is gone is unreadable, not contradicted: its report stays.
    EXPECT_EQ(check_layer("seccomp", child, spec).result, LayerCheck::unreadable);
}

}  // namespace
}  // namespace kbench::sandbox
