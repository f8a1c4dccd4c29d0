#include "orchestrator/builds/build_support.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

namespace kbench::orchestrator {
namespace {

void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// A maker that writes one file and its manifest, as kbench_worker/build_support.py does.
BuildSupportOptions options_in(const fs::path& root) {
    write(root / "maker.py",
          "import hashlib, json, os, sys\n"
          "out = sys.argv[1]\n"
          "os.makedirs(out)\n"
          "data = b'header' * 1000\n"
          "open(os.path.join(out, 'h.gch'), 'wb').write(data)\n"
          "json.dump({'files': {'h.gch': hashlib.sha256(data).hexdigest()}},\n"
          "          open(os.path.join(out, 'manifest.json'), 'w'))\n");
    BuildSupportOptions o;
    o.python = KBENCH_TEST_PYTHON;
    o.script = root / "maker.py";
    o.root = root / "support";
    o.device_kind = DeviceKind::cpu;
    o.toolchain = "test toolchain";
    o.limit_s = 60;
    return o;
}

TEST(BuildSupport, IsHashedWhenMadeAndAgainOnlyWhenItsInodesChange) {
    fs::path root = make_temp_dir("kbench-test-support-");
    BuildSupportOptions o = options_in(root);

    BuildSupport first(o);
    const BuildSupportState& made = first.get();
    ASSERT_FALSE(made.dir.empty()) << made.why_none;
    EXPECT_GT(made.made_s, 0);
    EXPECT_EQ(made.files_hashed, 1);

    BuildSupport second(o);  // another process: its inodes are as checked
    EXPECT_EQ(second.get().files_hashed, 0);
    EXPECT_EQ(second.get().digest, made.digest);
    EXPECT_EQ(second.get().made_s, 0);

    // Touched, not changed: hashed again, still good.
    fs::last_write_time(made.dir / "h.gch",
                        fs::last_write_time(made.dir / "h.gch") + std::chrono::seconds(5));
    BuildSupport touched(o);
    EXPECT_EQ(touched.get().files_hashed, 1);
    EXPECT_FALSE(touched.get().dir.empty());
    BuildSupport after(o);
    EXPECT_EQ(after.get().files_hashed, 0);

    // Changed in place at the same size with its mtime set back: the ctime still moves.
    fs::path header = made.dir / "h.gch";
    struct stat before {};
    ASSERT_EQ(::stat(header.c_str(), &before), 0);
    std::string forged(std::size_t(before.st_size), 'x');
    write(header, forged);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, header.c_str(), times, 0), 0);
    BuildSupport tampered(o);
    EXPECT_TRUE(tampered.get().dir.empty());
    EXPECT_NE(tampered.get().why_none.find("did not match its manifest"), std::string::npos);
    EXPECT_FALSE(fs::exists(made.dir));

    BuildSupport remade(o);  // the next process makes it again
    ASSERT_FALSE(remade.get().dir.empty());
    EXPECT_GT(remade.get().made_s, 0);

    // A header added beside the others (a build's -I would find it) is not in the manifest.
    fs::create_directories(remade.get().dir / "shadow" / "torch");
    write(remade.get().dir / "shadow" / "torch" / "types.h", "#error planted\n");
    BuildSupport planted(o);
    EXPECT_TRUE(planted.get().dir.empty());
    EXPECT_NE(planted.get().why_none.find("shadow/torch/types.h"), std::string::npos)
        << planted.get().why_none;
    fs::remove_all(root);
}

}  // namespace
}  // namespace kbench::orchestrator
