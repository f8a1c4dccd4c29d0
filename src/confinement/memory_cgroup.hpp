#pragma once

#include <cstdint>
#include <string>

namespace kbench::sandbox {

// A memory cgroup for each confined process, where the machine lets this process make them:
// cgroup v2 (the memory controller enabled below this process's own cgroup) or the v1 memory
// hierarchy. The confined process joins its cgroup itself, before it gives up its rights.
class MemoryCgroups {
  public:
    MemoryCgroups();

    bool available() const { return !root_.empty(); }
    const std::string& missing_reason() const { return missing_; }
    bool v2() const { return v2_; }

    // A new cgroup folder limited to limit_bytes; empty (and missing_reason set) on failure.
    std::string make(std::uint64_t limit_bytes);
    // Removes a cgroup once its processes are gone.
    void remove(const std::string& path);

  private:
    std::string root_;  // the folder new cgroups go in
    bool v2_ = false;
    std::string missing_;
    unsigned counter_ = 0;
};

}  // namespace kbench::sandbox
