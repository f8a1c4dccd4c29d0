#include "timing/fixed_count_criterion.hpp"

#include <algorithm>

namespace kbench::timing {

FixedCountCriterion::FixedCountCriterion(int count, int discard_first)
    : target_(std::size_t(std::max(1, count))), discard_(std::size_t(std::max(0, discard_first))) {}

void FixedCountCriterion::add_sample(double) {
    ++taken_;
}

bool FixedCountCriterion::is_finished(double) const {
    return taken_ >= target_ + discard_;
}

}  // namespace kbench::timing
