#include "integrity/kernels.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/elf_symbols.hpp"

namespace kbench::integrity {
namespace {

// Namespaces whose kernels are libraries' even when a candidate's source names a kernel alike.
const std::set<std::string>& library_namespaces() {
    static const std::set<std::string> names = {
        "at",      "c10",   "cub",   "thrust", "cutlass", "cute", "cublas", "cublasLt",
        "cudnn",   "flash", "torch", "caffe2", "std",     "cuda", "nvte",   "transformer_engine",
        "xformers"};
    return names;
}

std::string demangle(const std::string& name) {
    if (name.rfind("_Z", 0) != 0) return name;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : name;
}

// "void ns::kernel<float, 4>(float*, int)" -> {"ns", "kernel"}: the function's qualified name,
// without return type, template arguments or parameters.
std::vector<std::string> qualified_name(const std::string& demangled) {
    std::string text;
    int depth = 0;
    for (char c : demangled) {
        if (c == '<')
            ++depth;
        else if (c == '>')
            depth = std::max(0, depth - 1);
        else if (depth == 0 && c == '(')
            break;
        else if (depth == 0)
            text += c;
    }
    // The return type of a template function comes first, separated by a space.
    if (auto space = text.rfind(' ');
        space != std::string::npos && text.find("(anonymous namespace)") == std::string::npos)
        text = text.substr(space + 1);
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        std::size_t next = text.find("::", start);
        std::string part = text.substr(start, next == std::string::npos ? next : next - start);
        if (!part.empty() && part.find("anonymous namespace") == std::string::npos)
            parts.push_back(part);
        if (next == std::string::npos) break;
        start = next + 2;
    }
    return parts;
}

std::string join_streams(const std::set<std::uint64_t>& streams) {
    std::string out;
    for (auto s : streams) out += (out.empty() ? "" : ",") + std::to_string(s);
    return out;
}

}  // namespace

bool KernelOrigins::is_candidates(const std::string& name) const {
    if (module_functions.count(name)) return true;
    if (name.rfind("_Z", 0) != 0)  // unmangled: extern "C" CUDA kernels, Triton kernels
        return cuda_names.count(name) > 0 || triton_names.count(name) > 0;
    std::vector<std::string> parts = qualified_name(demangle(name));
    if (parts.empty() || !cuda_names.count(parts.back())) return false;
    return parts.size() == 1 || !library_namespaces().count(parts.front());
}

bool KernelOrigins::is_candidates_code(const std::string& row_name) {
    auto open = row_name.rfind(" (");
    if (open == std::string::npos || row_name.back() != ')') return false;
    if (row_name.compare(open + 2, 2, "./") != 0) return false;
    // Its module's own code, templates of ATen's it instantiated included (at::parallel_for
    // around its loop), but for pybind11's glue that turns Python objects into arguments.
    std::vector<std::string> parts = qualified_name(demangle(row_name.substr(0, open)));
    return parts.empty() || parts.front() != "pybind11";
}

json KnockoutOutcome::to_json() const {
    return {{"decided", decided}, {"changed", changed}, {"replaced", replaced}, {"detail", detail}};
}

KernelOrigins KernelOrigins::of(const StaticReport& report, const std::vector<fs::path>& modules) {
    KernelOrigins o;
    auto names = [&](const char* key, std::set<std::string>& into) {
        if (!report.kernels.is_object() || !report.kernels.contains(key)) return;
        for (const auto& n : report.kernels[key])
            if (n.is_string()) into.insert(n.get<std::string>());
    };
    names("cuda", o.cuda_names);
    names("triton", o.triton_names);
    for (const fs::path& module : modules) {
        try {
            std::set<std::string> defined = elf_function_names(module);
            o.module_functions.insert(defined.begin(), defined.end());
        } catch (const std::exception&) {
            // Not an ELF module: its kernels are found by name only.
        }
    }
    return o;
}

std::string kernel_display_name(const std::string& name) {
    // A CPU sample's row: "function (library file)".
    if (auto open = name.rfind(" (");
        open != std::string::npos && name.back() == ')' && name.find(' ') == open)
        return kernel_display_name(name.substr(0, open)) + name.substr(open);
    std::string d = demangle(name);
    std::string out;
    int depth = 0;
    for (char c : d) {  // parameters dropped, template arguments kept
        if (c == '<') ++depth;
        if (c == '>') depth = std::max(0, depth - 1);
        if (depth == 0 && c == '(') break;
        out += c;
    }
    if (out.size() > 160) out = out.substr(0, 157) + "...";
    return out;
}

void KernelTable::add(const protocol::KernelsReported& report, const KernelOrigins& origins) {
    any_report_ = true;
    if (!report.collected) {
        if (why_.empty()) why_ = report.why;
        return;
    }
    collected_ = true;
    cpu_ = report.source == "cpu";
    calls_ += report.calls;
    call_window_ns_ += report.call_ns;
    dropped_ += report.dropped;
    for (const auto& r : report.rows) {
        bool mine =
            cpu_ ? KernelOrigins::is_candidates_code(r.name) : origins.is_candidates(r.name);
        std::string origin = mine ? "candidate" : "library";
        std::map<std::string, Row>* into = nullptr;
        if (r.window == "call") {
            into = &in_calls_;
            call_kernel_ns_ += r.total_ns;
            if (origin == "candidate") candidate_ns_ += r.total_ns;
        } else if (r.window == "load") {
            into = &in_load_;
        } else if (r.window == "outside" || origin == "candidate") {
            // kbench's own windows hold copies and fills; a kernel of the candidate's there ran
            // while kbench did its work, not in a call.
            into = &outside_;
        }
        if (!into) continue;
        Row& row = (*into)[r.name];
        row.origin = origin;
        row.count += r.count;
        row.ns += r.total_ns;
        row.streams.insert(r.stream);
    }
}

double KernelTable::candidate_share() const {
    return call_kernel_ns_ > 0 ? double(candidate_ns_) / double(call_kernel_ns_) : 0;
}

bool KernelTable::decoy_suspect() const {
    bool library = std::any_of(in_calls_.begin(), in_calls_.end(),
                               [](const auto& row) { return row.second.origin == "library"; });
    return collected_ && calls_ > 0 && candidate_ns_ > 0 && library &&
           candidate_share() < kDecoyShare;
}

std::vector<std::string> KernelTable::candidate_kernels() const {
    std::vector<std::string> out;
    for (const auto& [name, row] : in_calls_)
        if (row.origin == "candidate") out.push_back(name);
    return out;
}

std::vector<KernelShare> KernelTable::shares() const {
    std::vector<KernelShare> out;
    for (const auto& [name, row] : in_calls_)
        out.push_back({kernel_display_name(name), row.origin,
                       call_kernel_ns_ > 0 ? double(row.ns) / double(call_kernel_ns_) : 0,
                       row.count, double(row.ns) / 1e3, join_streams(row.streams)});
    std::sort(out.begin(), out.end(),
              [](const KernelShare& a, const KernelShare& b) { return a.total_us > b.total_us; });
    if (out.size() > 40) out.resize(40);
    return out;
}

json KernelTable::summary() const {
    if (!any_report_) return nullptr;
    if (!collected_) return {{"collected", false}, {"why", why_}};
    json outside = json::array();
    for (const auto& [name, row] : outside_)
        outside.push_back({{"name", kernel_display_name(name)},
                           {"origin", row.origin},
                           {"count", row.count},
                           {"total_us", double(row.ns) / 1e3}});
    return {{"collected", true},
            {"calls", calls_},
            {"call_window_us", double(call_window_ns_) / 1e3},
            {"kernel_us", double(call_kernel_ns_) / 1e3},
            {"candidate_us", double(candidate_ns_) / 1e3},
            {"candidate_share", candidate_share()},
            {"kernels", in_calls_.size()},
            {"outside_calls", outside},
            {"dropped_records", dropped_}};
}

std::vector<Finding> KernelTable::findings(const RulePolicy& policy,
                                           const KnockoutOutcome& knockout) const {
    std::vector<Finding> out;
    if (!collected_) return out;
    std::size_t library = 0;
    std::uint64_t samples = 0;
    std::string biggest;
    std::uint64_t biggest_ns = 0;
    for (const auto& [name, row] : in_calls_) {
        samples += row.count;
        if (row.origin != "library") continue;
        ++library;
        if (row.ns > biggest_ns) {
            biggest_ns = row.ns;
            biggest = kernel_display_name(name);
        }
    }
    // On a CPU a few samples say nothing of where the time went.
    if (cpu_ && samples < kMinCpuSamples) return out;
    const char* kernels = cpu_ ? "function(s)" : "kernel(s)";
    if (calls_ > 0 && candidate_ns_ == 0) {
        std::string what = library > 0 ? fmt::format("{} library {} did the work, {} the longest",
                                                     library, kernels, biggest)
                                       : std::string("no kernel ran at all");
        out.push_back(
            {"no_candidate_kernel", policy.severity("no_candidate_kernel"),
             cpu_ ? fmt::format("none of the candidate's own compiled code was running in {} "
                                "samples of its threads in its {} model call(s): {}",
                                samples, calls_, what)
                  : fmt::format("none of the candidate's own kernels ran in its {} model "
                                "call(s): {}",
                                calls_, what)});
    } else if (decoy_suspect()) {
        std::string share = fmt::format(
            "{} took {:.2f}% of the {} in its model calls ({:.1f} of {:.1f} us), under {:.0f}%; "
            "{} library {} did the rest, {} the longest",
            cpu_ ? "the candidate's own compiled code" : "the candidate's own kernels",
            100 * candidate_share(), cpu_ ? "sampled CPU time" : "kernel time",
            double(candidate_ns_) / 1e3, double(call_kernel_ns_) / 1e3, 100 * kDecoyShare, library,
            kernels, biggest);
        std::string knocked =
            fmt::format("; with them knocked out (replaced by an empty kernel, {} launch(es)), ",
                        knockout.replaced);
        if (cpu_)
            out.push_back({"small_kernel_share", policy.severity("small_kernel_share"),
                           share + "; whether the outputs depend on it is not checked on a CPU"});
        else if (knockout.decided && knockout.changed)
            out.push_back({"small_kernel_share", policy.severity("small_kernel_share"),
                           share + knocked + "the outputs change (" + knockout.detail +
                               "): they do part of the problem"});
        else if (knockout.decided)
            out.push_back(
                {"decoy_kernel", policy.severity("decoy_kernel"),
                 share + knocked + knockout.detail + ": they contribute nothing to the outputs"});
        else
            out.push_back({"decoy_kernel", policy.severity("decoy_kernel"),
                           share + (knockout.asked ? "; whether the outputs depend on them "
                                                     "could not be checked: " +
                                                         knockout.detail
                                                   : std::string())});
    }
    if (!outside_.empty()) {
        std::string names;
        std::uint64_t ns = 0;
        for (const auto& [name, row] : outside_) {
            ns += row.ns;
            if (names.size() < 300)
                names += (names.empty() ? "" : ", ") + kernel_display_name(name) + " x" +
                         std::to_string(row.count);
        }
        out.push_back({"work_outside_window", policy.severity("work_outside_window"),
                       fmt::format("kernels ran outside the candidate's model calls ({:.1f} us, "
                                   "not in its timed window): {}",
                                   double(ns) / 1e3, names)});
    }
    if (dropped_ > 0)
        out.push_back(
            {"kernel_records_dropped", Severity::warn,
             cpu_ ? fmt::format("{} samples were lost (their signal never arrived, or "
                                "past the buffer); the table is partial",
                                dropped_)
                  : fmt::format("{} kernel records were dropped; the table is partial", dropped_)});
    return out;
}

}  // namespace kbench::integrity
