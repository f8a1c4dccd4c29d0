#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace kbench {

namespace fs = std::filesystem;

// Reads a whole file; throws UsageError naming the path when it cannot.
std::string read_file(const fs::path& path);

// The fields of a /proc stat file after the command name's closing parenthesis and its space
// (the state letter first); empty when the file is gone or unreadable. Never throws: a process
// may end while it is read.
std::string proc_stat_fields(const std::string& path);

// The last line of text that is not blank, without its line break (a message's gist).
std::string last_line(const std::string& text);

// What an error's text says went wrong: its last exception line ("RuntimeError: CUDA error:
// invalid argument", a line at column 0 that names an exception); else, for PyTorch's own error
// text (advice and a C++ backtrace after its first line), its first line; else its last line.
std::string error_line(const std::string& text);

// Writes through a temporary file and a rename, so readers never see half a file.
void write_file_atomic(const fs::path& path, const std::string& content);

// A fresh private directory (mode 0700) under the system temporary directory.
fs::path make_temp_dir(const std::string& prefix);

// The running executable's path (empty if unknown).
fs::path executable_path();

// The free space a command needs where it writes its runs, builds and scratch files.
inline constexpr std::uint64_t kMinFreeBytes = 512ull << 20;

// Throws UsageError when the filesystem that holds path (or, where it does not exist yet, its
// nearest existing folder) has less than kMinFreeBytes free: `what` names the folder for the
// person ("the run's folder"), `elsewhere` says how to put it elsewhere ("--runs-dir").
void require_free_space(const fs::path& path, const std::string& what,
                        const std::string& elsewhere);

// The user's cache root: $KBENCH_CACHE, else $XDG_CACHE_HOME/kbench, else ~/.cache/kbench.
fs::path cache_root();

}  // namespace kbench
