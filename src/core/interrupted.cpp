#include "core/interrupted.hpp"

#include <atomic>

namespace kbench {
namespace {
std::atomic<bool> flag{false};
}

bool interrupted() {
    return flag.load();
}

void mark_interrupted() {
    flag.store(true);
}

}  // namespace kbench
