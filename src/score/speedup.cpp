#include "score/speedup.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kbench::score {
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

}  // namespace kbench::score
