#include "core/files.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/settings.hpp"

namespace kbench {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError("cannot read " + path.string() + ": " + std::strerror(errno),
                         "check that the file exists and is readable");
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string proc_stat_fields(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string text;
    char buf[1024];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, std::size_t(n));
    }
    ::close(fd);
    auto close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size()) return {};
    return text.substr(close + 2);
}

void write_file_atomic(const fs::path& path, const std::string& content) {
    if (path.has_parent_path()) fs::create_directories(path.parent_path());
    fs::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
        out << content;
        if (!out.flush()) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    fs::rename(tmp, path);
}

fs::path make_temp_dir(const std::string& prefix) {
    std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!::mkdtemp(buffer.data()))
        throw InfraError(
            "cannot create a temporary directory " + pattern + ": " + std::strerror(errno),
            "check that TMPDIR points to a writable directory with free space");
    return fs::path(buffer.data());
}

void require_free_space(const fs::path& path, const std::string& what,
                        const std::string& elsewhere) {
    fs::path at = fs::absolute(path);
    std::error_code missing;
    while (!fs::exists(at, missing) && at.has_parent_path() && at != at.parent_path())
        at = at.parent_path();
    struct statvfs st {};
    if (::statvfs(at.c_str(), &st) != 0) return;  // unknown: the writes themselves will say
    std::uint64_t free_bytes = std::uint64_t(st.f_bavail) * std::uint64_t(st.f_frsize);
    if (free_bytes >= kMinFreeBytes) return;
    throw UsageError(
        what + " (" + path.string() + ") is on a filesystem with only " +
            std::to_string(free_bytes >> 20) + " MiB free; kbench needs at least " +
            std::to_string(kMinFreeBytes >> 20) + " MiB there",
        "free space there (df -h " + at.string() + "), or put it elsewhere with " + elsewhere);
}

fs::path executable_path() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : self;
}

fs::path cache_root() {
    if (std::optional<std::string> dir = setting("KBENCH_CACHE")) return fs::path(*dir);
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return fs::path(xdg) / "kbench";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".cache" / "kbench";
    return fs::temp_directory_path() / "kbench-cache";
}

std::string last_line(const std::string& text) {
    std::size_t end = text.find_last_not_of(" \n\r\t");
    if (end == std::string::npos) return {};
    std::size_t start = text.rfind('\n', end);
    start = start == std::string::npos ? 0 : start + 1;
    return text.substr(start, end - start + 1);
}

namespace {

// "Name" or "Name: ..." at column 0, where Name is dotted and ends in an exception's suffix.
bool names_an_exception(std::string_view line) {
    if (line.empty() || !(std::isalpha(static_cast<unsigned char>(line[0])) || line[0] == '_'))
        return false;
    std::size_t n = 0;
    while (n < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[n])) || line[n] == '_' || line[n] == '.'))
        ++n;
    if (n < line.size() && line[n] != ':') return false;
    std::string_view name = line.substr(0, n);
    for (std::string_view suffix : {"Error", "Exception", "Interrupt", "Exit", "Warning"})
        if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
            return true;
    return false;
}

}  // namespace

std::string error_line(const std::string& text) {
    std::string_view found;
    std::string_view rest(text);
    while (!rest.empty()) {
        std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (names_an_exception(line)) found = line;
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    if (!found.empty()) return std::string(found);
    // A PyTorch error's own text: its first line says what, the rest is advice and a backtrace.
    if (text.find("\nException raised from ") != std::string::npos) {
        std::size_t first = text.find_first_not_of(" \n\r\t");
        return text.substr(first, text.find('\n', first) - first);
    }
    return last_line(text);
}

}  // namespace kbench
