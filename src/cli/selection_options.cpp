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
                                                const std::string& python) {
    dataset::Selection selection;
    selection.levels.insert(o.levels.begin(), o.levels.end());
    if (!o.problems.empty()) selection.id_ranges = dataset::parse_id_ranges(o.problems);
    selection.names = o.names;
    auto problems = dataset::select(dataset::load_problems(o.dataset, python), selection);
    if (problems.empty())
        throw UsageError("no problem of " + o.dataset + " matches the selection",
                         "list them with: kbench dataset list --dataset " + o.dataset);
    return problems;
}

}  // namespace kbench::cli
