#pragma once

#include "core/files.hpp"

namespace kbench::store {

// One writer per run: an exclusive lock on RUN/lock (flock), held while this object lives and
// released by the kernel when its holder ends, however it ends (kill -9 included). The file
// holds the holder's pid for the message a second writer gets.
class RunLock {
  public:
    // Throws UsageError naming the holder's pid and what to do when another process holds it.
    explicit RunLock(const fs::path& run_dir);
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

  private:
    int fd_ = -1;
};

}  // namespace kbench::store
