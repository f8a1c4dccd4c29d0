#include "timing/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kbench::timing {

double quantile_sorted(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    double position = std::clamp(q, 0.0, 1.0) * double(sorted.size() - 1);
    auto below = std::size_t(std::floor(position));
    auto above = std::min(below + 1, sorted.size() - 1);
    double fraction = position - double(below);
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return quantile_sorted(values, 0.5);
}

double mean(const std::vector<double>& values) {
    if (values.empty()) return 0;
    return std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
}

Summary summarize(std::vector<double> values) {
    Summary s;
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    s.n = values.size();
    s.min = values.front();
    s.max = values.back();
    s.mean = mean(values);
    s.median = quantile_sorted(values, 0.5);
    s.p10 = quantile_sorted(values, 0.1);
    s.p90 = quantile_sorted(values, 0.9);
    return s;
}

Interval median_ci95_sorted(const std::vector<double>& sorted) {
    if (sorted.empty()) return {};
    const double n = double(sorted.size());
    const double spread = 0.98 * std::sqrt(n);  // 1.96 * sqrt(n) / 2
    // 1-based ranks, clamped to the sample.
    double lo_rank = std::clamp(std::floor(n / 2 - spread), 1.0, n);
    double hi_rank = std::clamp(std::ceil(n / 2 + 1 + spread), 1.0, n);
    return {sorted[std::size_t(lo_rank) - 1], sorted[std::size_t(hi_rank) - 1]};
}

}  // namespace kbench::timing
