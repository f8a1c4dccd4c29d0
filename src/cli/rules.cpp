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
#include "protocol/lockdown_spec.hpp"

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
    bool markdown = false;
    bool layers = false;
};

int list_rules(const RulesOptions& o) {
    if (o.json_output) {
        json all = json::array();
        for (const auto& r : integrity::all_rules())
            all.push_back({{"rule", r.id},
                           {"kind", r.kind},
                           {"strict", to_string(r.strict)},
                           {"kernelbench", to_string(r.kernelbench)},
                           {"permissive", to_string(r.permissive)},
                           {"summary", r.finds}});
        std::cout << dump_text(all, 2) << "\n";
        return 0;
    }
    std::cout << fmt::format("{:<28} {:<8} {:<7} {:<11} {:<10} {}\n", "rule", "kind", "strict",
                             "kernelbench", "permissive", "what it finds");
    for (const auto& r : integrity::all_rules())
        std::cout << fmt::format("{:<28} {:<8} {:<7} {:<11} {:<10} {}\n", r.id, r.kind,
                                 to_string(r.strict), to_string(r.kernelbench),
                                 to_string(r.permissive), r.finds);
    return 0;
}

// The sandbox's layers (protocol/lockdown_spec.hpp's table): text, or markdown for
// docs/security.md.
int list_layers(bool markdown) {
    if (markdown)
        std::cout << "| layer | applied | what it gives | seen from outside |\n"
                     "| --- | --- | --- | --- |\n";
    for (const auto& l : sandbox::layer_table()) {
        std::string stage = l.stage == "start"    ? "as it starts"
                            : l.stage == "cgroup" ? "in a cgroup kbench made"
                                                  : "by itself, before candidate code";
        if (markdown)
            std::cout << fmt::format("| `{}` | {} | {} | {} |\n", l.id, stage, l.gives, l.checked);
        else
            std::cout << fmt::format("{:<18} {:<32} {}\n", l.id, stage, l.gives);
    }
    return 0;
}

// The table as markdown, one section a kind of rule (docs/rules.md).
int markdown_rules() {
    const std::pair<const char*, const char*> kinds[] = {
        {"static", "Static rules: read the candidate's source before it is built"},
        {"runtime", "Runtime rules: what the candidate did when it ran"},
        {"judge",
         "Breaches the judge stops the request on: rejected under every policy, never allowed"},
        {"record",
         "Records of what happened to the evaluation itself: warnings, neither allowed nor "
         "denied"},
    };
    for (const auto& [kind, title] : kinds) {
        std::cout << "## " << title << "\n\n| rule | strict | kernelbench | permissive | finds |\n"
                  << "| --- | --- | --- | --- | --- |\n";
        for (const auto& r : integrity::all_rules())
            if (r.kind == kind)
                std::cout << fmt::format("| `{}` | {} | {} | {} | {} |\n", r.id,
                                         to_string(r.strict), to_string(r.kernelbench),
                                         to_string(r.permissive), r.finds);
        std::cout << "\n";
    }
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
        Backend backend = detect_backend(o.backend, code, DeviceKind::cuda);
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
                                         {"severity", std::string(to_string(f.severity))},
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
            std::cout << fmt::format("  {:<6} {}: {}\n", to_string(f.severity), f.rule, f.detail);
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
    cmd->add_flag("--markdown", o->markdown, "The rule table as markdown (docs/rules.md)")
        ->excludes("--json");
    cmd->add_flag("--layers", o->layers,
                  "The sandbox's layers instead: what each gives and when it is applied (with "
                  "--markdown, docs/security.md's table)")
        ->excludes("--json");
    return [o] {
        if (o->markdown && !o->files.empty())
            throw UsageError("--markdown prints the rule table, not a review of files",
                             "drop the files, or --markdown");
        if (o->layers && !o->files.empty())
            throw UsageError("--layers prints the sandbox's layers, not a review of files",
                             "drop the files, or --layers");
        if (o->layers) return list_layers(o->markdown);
        if (o->markdown) return markdown_rules();
        return o->files.empty() ? list_rules(*o) : review_files(*o);
    };
}

}  // namespace kbench::cli
