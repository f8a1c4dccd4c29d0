#include "timing/speedup.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kbench::timing {
namespace {

double statistic_of(std::vector<double>& values, Statistic statistic) {
    if (statistic == Statistic::mean)
        return std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
    // The median; for an even count, the mean of the two middle values.
    auto mid = values.begin() + std::ptrdiff_t(values.size() / 2);
    std::nth_element(values.begin(), mid, values.end());
    double upper = *mid;
    if (values.size() % 2 == 1) return upper;
    double lower = *std::max_element(values.begin(), mid);
    return (lower + upper) / 2;
}

void resample(const std::vector<double>& from, std::vector<double>& into, std::mt19937_64& rng) {
    std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
    into.resize(from.size());
    for (auto& value : into) value = from[pick(rng)];
}

}  // namespace

SpeedupEstimate estimate_speedup(const std::vector<double>& baseline_us,
                                 const std::vector<double>& candidate_us, Statistic statistic,
                                 int resamples, std::uint64_t seed) {
    if (baseline_us.empty() || candidate_us.empty())
        throw std::invalid_argument("estimate_speedup needs samples on both sides");
    std::vector<double> base = baseline_us, cand = candidate_us;
    SpeedupEstimate estimate;
    estimate.speedup = statistic_of(base, statistic) / statistic_of(cand, statistic);

    std::mt19937_64 rng(seed);
    std::vector<double> ratios;
    ratios.reserve(std::size_t(std::max(resamples, 1)));
    for (int i = 0; i < resamples; ++i) {
        resample(baseline_us, base, rng);
        resample(candidate_us, cand, rng);
        ratios.push_back(statistic_of(base, statistic) / statistic_of(cand, statistic));
    }
    std::sort(ratios.begin(), ratios.end());
    auto at = [&](double q) {
        auto index = std::size_t(q * double(ratios.size() - 1) + 0.5);
        return ratios[std::min(index, ratios.size() - 1)];
    };
    estimate.ci_lo = ratios.empty() ? estimate.speedup : at(0.025);
    estimate.ci_hi = ratios.empty() ? estimate.speedup : at(0.975);
    return estimate;
}

double t_975(int df) {
    // Exact for small df; beyond 30 the Cornish-Fisher expansion (error below 1e-4).
    static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                   2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                   2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                   2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) throw std::invalid_argument("t quantile: df must be at least 1");
    if (df <= 30) return table[df - 1];
    const double z = 1.959963984540054, n = double(df);
    return z + (z * z * z + z) / (4 * n) +
           (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

SpeedupEstimate speedup_over_rounds(const std::vector<double>& round_ratios, double systematic) {
    if (round_ratios.size() < 2)
        throw std::invalid_argument("speedup over rounds: at least two rounds are needed");
    std::vector<double> logs;
    for (double r : round_ratios) {
        if (!(r > 0) || !std::isfinite(r))
            throw std::invalid_argument("speedup over rounds: a ratio is not a positive number");
        logs.push_back(std::log(r));
    }
    double n = double(logs.size());
    double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / n;
    double ss = 0;
    for (double l : logs) ss += (l - mean) * (l - mean);
    double half = t_975(int(logs.size()) - 1) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
    double fixed = 1.959963984540054 * std::log1p(std::max(0.0, systematic));
    half = std::sqrt(half * half + fixed * fixed);
    return {std::exp(mean), std::exp(mean - half), std::exp(mean + half)};
}

}  // namespace kbench::timing
