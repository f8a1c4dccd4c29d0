#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kbench::sandbox {

// One line of /proc/PID/mountinfo: the mount's root within its filesystem, where it is mounted,
// the filesystem's type and source, and the superblock's options, paths unescaped.
struct MountEntry {
    std::string root, point, type, source;
    std::vector<std::string> options;  // the superblock's: "rw", "size=1024k", ...

    // The value of a superblock option ("size" -> "1024k"); empty where it has none.
    std::string option(std::string_view name) const;
};

// Every well-formed line of a mountinfo text, in order (lines without the "-" separator or its
// three fields after it are skipped).
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// This process's mounts (empty where /proc/self/mountinfo cannot be read).
std::vector<MountEntry> own_mounts();

}  // namespace kbench::sandbox
