#include "confinement/landlock.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kbench::sandbox {
namespace {

// The kernel's ABI, written out here so that older system headers do not limit what is used.
struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};
struct PathBeneathAttr {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
} __attribute__((packed));
struct NetPortAttr {
    std::uint64_t allowed_access;
    std::uint64_t port;
};

constexpr std::uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

constexpr std::uint64_t kExecute = 1ull << 0;
constexpr std::uint64_t kWriteFile = 1ull << 1;
constexpr std::uint64_t kReadFile = 1ull << 2;
constexpr std::uint64_t kReadDir = 1ull << 3;
constexpr std::uint64_t kRemoveDir = 1ull << 4;
constexpr std::uint64_t kRemoveFile = 1ull << 5;
constexpr std::uint64_t kMakeChar = 1ull << 6;
constexpr std::uint64_t kMakeDir = 1ull << 7;
constexpr std::uint64_t kMakeReg = 1ull << 8;
constexpr std::uint64_t kMakeSock = 1ull << 9;
constexpr std::uint64_t kMakeFifo = 1ull << 10;
constexpr std::uint64_t kMakeBlock = 1ull << 11;
constexpr std::uint64_t kMakeSym = 1ull << 12;
constexpr std::uint64_t kRefer = 1ull << 13;             // ABI 2
constexpr std::uint64_t kTruncate = 1ull << 14;          // ABI 3
constexpr std::uint64_t kNetBindTcp = 1ull << 0;         // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ull << 1;      // ABI 4
constexpr std::uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ull << 1;        // ABI 6

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

long create_ruleset(const RulesetAttr* attr, std::size_t size, std::uint32_t flags) {
    return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

// Character devices a program may open for writing: the usual ones and the GPU's.
std::vector<std::string> writable_devices() {
    std::vector<std::string> out = {"/dev/null",   "/dev/zero",    "/dev/full",
                                    "/dev/random", "/dev/urandom", "/dev/tty"};
    for (const char* dir : {"/dev", "/dev/nvidia-caps", "/dev/dri"}) {
        DIR* d = ::opendir(dir);
        if (!d) continue;
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name;
            bool gpu = name.rfind("nvidia", 0) == 0 || std::string(dir) != "/dev";
            if (gpu && name != "." && name != ".." && e->d_type != DT_DIR)
                out.push_back(std::string(dir) + "/" + name);
        }
        ::closedir(d);
    }
    return out;
}

bool add_path(int ruleset, const std::string& path, std::uint64_t access) {
    int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return false;
    PathBeneathAttr rule{access, fd};
    long r = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
    ::close(fd);
    return r == 0;
}

}  // namespace

int landlock_abi() {
    long abi = create_ruleset(nullptr, 0, kCreateRulesetVersion);
    return abi < 0 ? 0 : int(abi);
}

std::string apply_landlock(const std::vector<std::string>& writable) {
    int abi = landlock_abi();
    if (abi <= 0)
        return errno == ENOSYS ? "the kernel has no Landlock"
                               : "Landlock is not enabled in this kernel (" +
                                     std::string(std::strerror(errno)) + ")";
    const std::uint64_t file_write = kWriteFile | (abi >= 3 ? kTruncate : 0);
    const std::uint64_t read = kExecute | kReadFile | kReadDir;
    const std::uint64_t write = file_write | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir |
                                kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym |
                                (abi >= 2 ? kRefer : 0);
    RulesetAttr attr{read | write, abi >= 4 ? (kNetBindTcp | kNetConnectTcp) : 0,
                     abi >= 6 ? (kScopeAbstractUnix | kScopeSignal) : 0};
    std::size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 16 : 8;
    long ruleset = create_ruleset(&attr, size, 0);
    if (ruleset < 0) return std::string("landlock_create_ruleset: ") + std::strerror(errno);
    std::string failure;
    if (!add_path(int(ruleset), "/", read)) failure = "cannot add a rule for /";
    for (const std::string& dir : writable)
        if (failure.empty() && !add_path(int(ruleset), dir, read | write))
            failure = "cannot add a rule for " + dir + ": " + std::strerror(errno);
    for (const std::string& device : writable_devices())
        add_path(int(ruleset), device, kReadFile | file_write);  // absent devices do not matter
    if (failure.empty() && ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
        failure = std::string("landlock_restrict_self: ") + std::strerror(errno);
    ::close(int(ruleset));
    return failure;
}

}  // namespace kbench::sandbox
