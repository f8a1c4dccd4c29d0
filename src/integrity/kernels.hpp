#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/files.hpp"
#include "core/verdict.hpp"
#include "integrity/rules.hpp"
#include "integrity/static_review.hpp"
#include "protocol/sandbox_messages.hpp"

namespace kbench::integrity {

// The candidate's own share of kernel time below which its kernels may be a decoy, when library
// kernels ran beside them: whether they are is then asked of the outputs (a knockout).
constexpr double kDecoyShare = 0.01;

// On a CPU, the samples of model calls below which nothing is concluded from them.
constexpr std::uint64_t kMinCpuSamples = 20;

// What became of the candidate's outputs with its own kernels knocked out (replaced by an
// empty kernel in one call): decided when the replacement was complete and nothing of the
// candidate's ran; then changed says whether its kernels contribute to the outputs.
struct KnockoutOutcome {
    bool asked = false;
    bool decided = false;
    bool changed = false;
    std::uint64_t replaced = 0;
    std::string detail;  // what changed or stayed equal, or why it is undecided

    json to_json() const;
};

// Which kernels are the candidate's: those its built modules define (by mangled name), those
// its source defines as __global__ (outside library namespaces), and its Triton kernels.
// Everything else (ATen, cuBLAS, cuDNN, ...) is a library's.
struct KernelOrigins {
    std::set<std::string> module_functions;
    std::set<std::string> cuda_names;
    std::set<std::string> triton_names;

    bool is_candidates(const std::string& name) const;
    // A CPU sample's row ("function (file)"): the candidate's when the file lies in its own
    // folder ("./...") and the function is not pybind11's glue.
    static bool is_candidates_code(const std::string& row_name);

    // From the static review and the candidate's extension modules (ELF files; one that cannot
    // be read is left out).
    static KernelOrigins of(const StaticReport& report, const std::vector<fs::path>& modules);
};

// A readable kernel name: demangled, without its parameter list, capped.
std::string kernel_display_name(const std::string& name);

// The kernels of one evaluation, summed over the reports of its phases.
class KernelTable {
  public:
    void add(const protocol::KernelsReported& report, const KernelOrigins& origins);

    bool collected() const { return collected_; }
    // Kernel time in model calls: all of it, and the candidate's own.
    std::uint64_t call_ns() const { return call_kernel_ns_; }
    std::uint64_t candidate_ns() const { return candidate_ns_; }
    double candidate_share() const;
    // Whether the decoy rule's share test holds: the candidate's own kernels ran but took
    // under kDecoyShare of the time, library kernels the rest (on a GPU).
    bool decoy_suspect() const;
    // The candidate's kernels that ran in model calls, by raw name.
    std::vector<std::string> candidate_kernels() const;

    // The verdict's kernels list (kernels that ran in model calls, by time) and its summary.
    std::vector<KernelShare> shares() const;
    json summary() const;

    // The runtime rules: no_candidate_kernel, decoy_kernel (or small_kernel_share where the
    // knockout showed that the outputs depend on the candidate's kernels), work_outside_window.
    std::vector<Finding> findings(const RulePolicy& policy,
                                  const KnockoutOutcome& knockout = {}) const;

  private:
    struct Row {
        std::string origin;
        std::uint64_t count = 0;
        std::uint64_t ns = 0;
        std::set<std::uint64_t> streams;
    };
    bool collected_ = false;
    bool any_report_ = false;
    bool cpu_ = false;  // the rows are samples of a CPU's program counters
    std::string why_;
    std::uint64_t calls_ = 0;
    std::uint64_t call_window_ns_ = 0;
    std::uint64_t call_kernel_ns_ = 0;
    std::uint64_t candidate_ns_ = 0;
    std::uint64_t dropped_ = 0;
    std::map<std::string, Row> in_calls_;  // by raw name
    std::map<std::string, Row> outside_;   // outside every window, or the candidate's in kbench's
    std::map<std::string, Row> in_load_;
};

}  // namespace kbench::integrity
