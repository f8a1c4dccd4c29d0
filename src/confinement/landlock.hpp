#pragma once

#include <string>
#include <vector>

namespace kbench::sandbox {

// Restricts this process (and all it starts) with Landlock: read and execute anywhere, write
// only under `writable` and to character devices that programs need (null, random, GPUs).
// Where the kernel's Landlock ABI allows it, also no TCP bind or connect, no abstract UNIX
// sockets and no signals outside the process's own domain. Needs no_new_privs set first.
// Returns an empty string on success, else why Landlock is not available.
std::string apply_landlock(const std::vector<std::string>& writable);

// The kernel's Landlock ABI version, or 0 when it has none.
int landlock_abi();

}  // namespace kbench::sandbox
