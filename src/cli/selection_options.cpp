#include "cli/selection_options.hpp"

#include "core/error.hpp"
#include "dataset/problem_set.hpp"

namespace kbench::cli {

void add_selection_options(CLI::App* cmd, SelectionOptions& o) {
    cmd->add_option(
           "--dataset", o.dataset,
           "builtin, a KernelBench folder, or a .jsonl/.parquet file (Hugging Face columns)")
        ->capture_default_str();
    cmd->add_option("--level", o.levels, "Only these levels (repeatable)");
    cmd->add_option("--problems", o.problems, "Only these problem ids, e.g. 1-10,19");
    cmd->add_option("--names", o.names, "Only these problem names, e.g. 19_ReLU")->delimiter(',');
}

std::vector<dataset::Problem> selected_problems(const SelectionOptions& o,
                                                const std::string& python,
                                                std::vector<dataset::Problem>* all_out) {
    dataset::Selection selection;
    selection.levels.insert(o.levels.begin(), o.levels.end());
    if (!o.problems.empty()) selection.id_ranges = dataset::parse_id_ranges(o.problems);
    selection.names = o.names;
    auto all = dataset::load_problems(o.dataset, python);
    auto problems = dataset::select(all, selection);
    if (all_out) *all_out = all;
    if (problems.empty()) {
        std::string asked;
        for (int level : o.levels) asked += " --level " + std::to_string(level);
        if (!o.problems.empty()) asked += " --problems " + o.problems;
        if (!o.names.empty()) {
            asked += " --names ";
            for (std::size_t i = 0; i < o.names.size(); ++i) asked += (i ? "," : "") + o.names[i];
        }
        throw UsageError(
            "no problem of " + o.dataset + " matches" + asked + ": it holds " +
                dataset::describe_levels(all),
            "choose among those, or list them with: kbench dataset list --dataset " + o.dataset);
    }
    return problems;
}

void add_reference_options(CLI::App* command, std::string& device, std::string& precision,
                           std::string& tf32) {
    command->add_option("--device", device, "cpu, cuda or cuda:N; default: a GPU if present")
        ->capture_default_str();
    command->add_option("--precision", precision, "fp32, fp16 or bf16")->capture_default_str();
    command->add_option("--tf32", tf32, "off (default), on or default, as for check and eval");
}

}  // namespace kbench::cli
