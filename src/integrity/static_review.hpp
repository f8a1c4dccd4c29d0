#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"
#include "core/verdict.hpp"
#include "integrity/rules.hpp"

namespace kbench::integrity {

// What the static analyzer (integrity/analyzer, run as `python3 -I -S -B DIR/analyzer`) saw in one
// candidate's source.
struct StaticReport {
    struct Seen {
        std::string rule;
        int line = 0;
        std::string evidence;
        std::string reason;
    };
    std::vector<Seen> seen;
    json kernels =
        json::object();  // {"cuda": [...], "triton": [...], "extension_functions": [...]}
    json markers = json::array();
    bool parsed = true;
    double seconds = 0;

    // The findings under a policy, each with its severity.
    std::vector<Finding> findings(const RulePolicy& policy) const;

    // The report the analyzer printed (its JSON); throws InfraError on a malformed one.
    static StaticReport from_json(const json& j);
};

// Runs the analyzer over candidates' sources before they are built: it parses the source's
// syntax tree and reads the C++/CUDA strings it compiles; it never runs the candidate. Reports
// are kept per source, precision and backend for the life of the object. Safe from several
// threads.
class StaticReview {
  public:
    StaticReview(std::string python, fs::path analyzer);

    const StaticReport& review(const std::string& code, Backend backend, Precision precision);

  private:
    StaticReport run(const std::string& code, Backend backend, Precision precision) const;

    std::string python_;
    fs::path analyzer_;
    std::mutex mutex_;
    std::map<std::string, StaticReport> reports_;
};

// The first rejecting finding, or nullptr.
const Finding* first_rejection(const std::vector<Finding>& findings);
// "static rules a, b" (or "static rule a"): every rule that rejects, each once.
std::string rejection_reason(const std::vector<Finding>& findings);

// "rule: reason (line N: evidence)", the way verdicts and text output say a finding.
std::string describe(const StaticReport::Seen& seen);

}  // namespace kbench::integrity
