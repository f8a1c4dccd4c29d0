#include "confinement/mountinfo.hpp"

#include <gtest/gtest.h>

namespace kbench::sandbox {
namespace {

TEST(Mountinfo, FieldsOptionalFieldsAndEscapes) {
    std::string text =
        "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 shared:7 - ext3 /dev/root "
        "rw,errors=continue\n"
        "40 22 0:35 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
        "41 22 0:36 / /tmp/kbench-x/scratch rw - tmpfs tmpfs rw,size=1048576k,mode=700\n"
        "garbage without the separator\n"
        "42 22 0:37 / /half rw - tmpfs\n"
        "43 22 0:38 /a\\134b /back\\011tab rw - tmpfs none rw\n";
    std::vector<MountEntry> mounts = parse_mountinfo(text);
    ASSERT_EQ(mounts.size(), 4u);
    EXPECT_EQ(mounts[0].root, "/mnt1");
    EXPECT_EQ(mounts[0].point, "/mnt/with space");
    EXPECT_EQ(mounts[0].type, "ext3");
    EXPECT_EQ(mounts[0].source, "/dev/root");
    EXPECT_EQ(mounts[0].options, (std::vector<std::string>{"rw", "errors=continue"}));
    EXPECT_EQ(mounts[1].type, "cgroup2");
    EXPECT_EQ(mounts[2].option("size"), "1048576k");
    EXPECT_EQ(mounts[2].option("mode"), "700");
    EXPECT_EQ(mounts[2].option("siz"), "");
    EXPECT_EQ(mounts[2].option("rw"), "");
    EXPECT_EQ(mounts[3].root, "/a\\b");
    EXPECT_EQ(mounts[3].point, "/back\ttab");
}

TEST(Mountinfo, ABackslashWithoutThreeOctalDigitsStaysAsItIs) {
    auto mounts =
        parse_mountinfo("1 2 0:1 / /p\\09x rw - tmpfs none rw\n3 4 0:1 / /q\\ rw - tmpfs none rw");
    ASSERT_EQ(mounts.size(), 2u);
    EXPECT_EQ(mounts[0].point, "/p\\09x");
    EXPECT_EQ(mounts[1].point, "/q\\");
}

TEST(Mountinfo, ThisProcessSeesItsRoot) {
    bool root = false;
    for (const MountEntry& m : own_mounts()) root = root || m.point == "/";
    EXPECT_TRUE(root);
}

}  // namespace
}  // namespace kbench::sandbox
