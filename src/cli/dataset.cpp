// kbench dataset list|show: the problems a dataset holds.
#include <fmt/format.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "build/toolchain.hpp"
#include "cli/commands.hpp"
#include "cli/selection_options.hpp"
#include "core/error.hpp"

namespace kbench::cli {
namespace {

struct DatasetOptions {
    SelectionOptions selection;
    std::optional<std::string> python;
    bool json = false;
    std::string problem;  // for show
};

int list_problems(const DatasetOptions& o) {
    auto problems = selected_problems(o.selection, build::find_python(o.python));
    for (const auto& p : problems) {
        if (o.json) {
            std::cout << nlohmann::json{{"level", p.level},
                                        {"problem_id", p.id},
                                        {"name", p.name},
                                        {"sha256", p.sha256},
                                        {"source", p.source}}
                             .dump()
                      << "\n";
        } else {
            std::cout << fmt::format("level {}  {:>4}  {:<48} {}\n", p.level, p.id, p.name,
                                     p.sha256.substr(0, 12));
        }
    }
    if (!o.json) std::cout << problems.size() << " problem(s) in " << o.selection.dataset << "\n";
    return 0;
}

// "1/19", "level1/19", "19_ReLU" or "level1/19_ReLU".
bool names_problem(const dataset::Problem& p, const std::string& text) {
    std::string rest = text;
    std::optional<int> level;
    if (auto slash = text.find('/'); slash != std::string::npos) {
        std::string head = text.substr(0, slash);
        if (head.rfind("level", 0) == 0) head = head.substr(5);
        try {
            level = std::stoi(head);
        } catch (const std::exception&) {
            return false;
        }
        rest = text.substr(slash + 1);
    }
    if (level && *level != p.level) return false;
    return rest == p.name || rest == std::to_string(p.id);
}

int show_problem(const DatasetOptions& o) {
    auto problems = selected_problems(o.selection, build::find_python(o.python));
    std::vector<const dataset::Problem*> found;
    for (const auto& p : problems)
        if (names_problem(p, o.problem)) found.push_back(&p);
    if (found.empty())
        throw UsageError(
            "no problem '" + o.problem + "' in " + o.selection.dataset,
            "name it as LEVEL/ID (1/19) or by name (19_ReLU); see kbench dataset list");
    if (found.size() > 1)
        throw UsageError("'" + o.problem + "' names " + std::to_string(found.size()) + " problems",
                         "add the level: LEVEL/" + o.problem);
    const auto& p = *found.front();
    std::cout << "# " << p.label() << "  sha256 " << p.sha256 << "\n# " << p.source << "\n"
              << p.code << (p.code.ends_with("\n") ? "" : "\n");
    return 0;
}

}  // namespace

Command add_dataset_command(CLI::App& app) {
    auto o = std::make_shared<DatasetOptions>();
    CLI::App* cmd = app.add_subcommand("dataset", "List or show the problems of a dataset");
    cmd->require_subcommand(1);
    CLI::App* list = cmd->add_subcommand("list", "One line a problem: level, id, name, hash");
    add_selection_options(list, o->selection);
    list->add_option("--python", o->python, "Python for Parquet files");
    list->add_flag("--json", o->json, "One JSON object a line");
    CLI::App* show = cmd->add_subcommand("show", "A problem's reference program");
    show->add_option("problem", o->problem, "LEVEL/ID, or a name")->required();
    add_selection_options(show, o->selection);
    show->add_option("--python", o->python, "Python for Parquet files");
    return [o, list] { return list->parsed() ? list_problems(*o) : show_problem(*o); };
}

}  // namespace kbench::cli
