#pragma once

#include <cstddef>
#include <vector>

namespace kbench::timing {

struct Summary {
    double median = 0;
    double mean = 0;
    double min = 0;
    double max = 0;
    double p10 = 0;
    double p90 = 0;
    std::size_t n = 0;
};

struct Interval {
    double lo = 0;
    double hi = 0;
};

// Quantile q in [0, 1] of sorted values, linearly interpolated between order statistics.
double quantile_sorted(const std::vector<double>& sorted, double q);

double median(std::vector<double> values);
double mean(const std::vector<double>& values);

Summary summarize(std::vector<double> values);

// Distribution-free 95% confidence interval of the median of sorted values: the order
// statistics whose ranks bound the middle of Binomial(n, 1/2) by 1.96 standard deviations.
Interval median_ci95_sorted(const std::vector<double>& sorted);

}  // namespace kbench::timing
