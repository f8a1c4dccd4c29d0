// kbench rules [FILE...]: the integrity rules and what each policy does with them; with files,
// what the static rules find in each (without building or running anything).
#include <fmt/format.h>

#include <iostream>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/files.hpp"
#include "integrity/rules.hpp"
#include "integrity/static_review.hpp"

namespace kbench::cli {
namespace {

struct RulesOptions {
    std::vector<std::string> files;
    std::string mode = "strict";
    std::string policy;
    std::vector<std::string> allow;
    std::vector<std::string> deny;
    std::string precision = "fp32";
    std::string backend = "auto";
    std::optional<std::string> python;
    bool json_output = false;
};

int list_rules(const RulesOptions& o) {
    if (o.json_output) {
        json all = json::array();
        for (const auto& r : integrity::all_rules())
            all.push_back({{"rule", r.id},
                           {"kind", r.kind},
                           {"strict", r.strict},
                           {"kernelbench", r.kernelbench},
                           {"permissive", r.permissive},
                           {"summary", r.summary}});
        std::cout << dump_text(all, 2) << "\n";
        return 0;
    }
    std::cout << fmt::format("{:<28} {:<8} {:<7} {:<11} {:<10} {}\n", "rule", "kind", "strict",
                             "kernelbench", "permissive", "what it finds");
    for (const auto& r : integrity::all_rules())
        std::cout << fmt::format("{:<28} {:<8} {:<7} {:<11} {:<10} {}\n", r.id, r.kind, r.strict,
                                 r.kernelbench, r.permissive, r.summary);
    return 0;
}

int review_files(const RulesOptions& o) {
    RunOptions run;
    run.mode = o.mode;
    run.policy = o.policy;
    run.allow = o.allow;
    run.deny = o.deny;
    run.precision = o.precision;
    CheckConfig config = make_config(run, "cpu");
    integrity::RulePolicy policy = integrity::RulePolicy::of(config);
    integrity::StaticReview review(build::find_python(o.python),
                                   build::worker_package_dir() / "analyzer");
    bool rejected = false;
    for (const auto& file : o.files) {
        std::string code = read_file(file);
        Backend backend = detect_backend(o.backend, code, "cuda");
        const integrity::StaticReport& report = review.review(code, backend, config.precision);
        std::vector<Finding> findings = report.findings(policy);
        const Finding* rejection = integrity::first_rejection(findings);
        rejected = rejected || rejection;
        if (o.json_output) {
            json j = {{"path", file},
                      {"policy", policy.to_json()},
                      {"rejected", rejection != nullptr},
                      {"kernels", report.kernels},
                      {"markers", report.markers},
                      {"findings", json::array()}};
            for (const Finding& f : findings)
                j["findings"].push_back({{"rule", f.rule},
                                         {"severity", f.severity},
                                         {"detail", f.detail},
                                         {"line", f.line},
                                         {"evidence", f.evidence}});
            std::cout << dump_text(j) << "\n";
            continue;
        }
        std::cout << fmt::format("{}: {}\n", file,
                                 rejection ? "rejected (" + rejection->rule + ")"
                                 : findings.empty()
                                     ? std::string("no findings")
                                     : std::to_string(findings.size()) + " warning(s)");
        for (const Finding& f : findings)
            std::cout << fmt::format("  {:<6} {}: {}\n", f.severity, f.rule, f.detail);
    }
    return rejected ? 1 : 0;
}

}  // namespace

Command add_rules_command(CLI::App& app) {
    auto o = std::make_shared<RulesOptions>();
    CLI::App* cmd = app.add_subcommand(
        "rules",
        "The integrity rules and what each policy does with them; with files, what the static "
        "rules find in each (exit code 1 if a rule rejects one)");
    cmd->add_option("files", o->files, "Candidate programs to review (nothing is built or run)");
    cmd->add_option("--mode", o->mode, "strict or kernelbench: the default policy")
        ->capture_default_str();
    cmd->add_option("--policy", o->policy, "strict, kernelbench or permissive");
    cmd->add_option("--allow", o->allow, "A rule that never rejects (repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--deny", o->deny, "A rule that always rejects (repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--precision", o->precision, "fp32, fp16 or bf16")->capture_default_str();
    cmd->add_option("--backend", o->backend, "cuda, triton or cpu; default: from the source")
        ->capture_default_str();
    cmd->add_option("--python", o->python,
                    "Python for the analyzer (default: $KBENCH_PYTHON, python3)");
    cmd->add_flag("--json", o->json_output, "JSON: the rule table, or one object a file");
    return [o] { return o->files.empty() ? list_rules(*o) : review_files(*o); };
}

}  // namespace kbench::cli
