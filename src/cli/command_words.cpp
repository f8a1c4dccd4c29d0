#include "cli/command_words.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace kbench::cli {
namespace {

// Edits (insert, delete, replace, swap two neighbours) from a to b.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                                d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The word among choices nearest to word, if near enough to be a slip of the keyboard (or a
// longer word that begins the same: "evaluate" for "eval").
std::string nearest(const std::string& word, const std::vector<std::string>& choices) {
    std::string best;
    std::size_t best_distance = std::string::npos;
    for (const std::string& choice : choices) {
        std::size_t d = edit_distance(word, choice);
        if (choice.size() >= 3 && word.rfind(choice, 0) == 0) d = std::min<std::size_t>(d, 1);
        if (d < best_distance) {
            best_distance = d;
            best = choice;
        }
    }
    std::size_t allowed = std::max<std::size_t>(1, word.size() / 4);
    return best_distance <= allowed ? best : std::string();
}

std::string command_name(const std::vector<const CLI::App*>& path) {
    std::string name = "kbench";
    for (std::size_t i = 1; i < path.size(); ++i) name += " " + path[i]->get_name();
    return name;
}

}  // namespace

void check_command_words(CLI::App& app, int argc, const char* const* argv) {
    std::vector<const CLI::App*> path = {&app};
    CLI::App* at = &app;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--") return;  // what follows is positional, whatever it looks like
        if (arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.') {
            std::string name = arg.substr(0, arg.find('='));
            bool long_name = name.rfind("--", 0) == 0;
            if (!long_name && name.size() != 2) continue;  // -qv: short flags together
            const CLI::Option* option = at->get_option_no_throw(name);
            if (!option && (name == "--help" || name == "-h" || name == "--help-all" ||
                            (at == &app && name == "--version")))
                continue;
            if (!option) {
                std::vector<std::string> names;
                for (const CLI::Option* o : at->get_options()) {
                    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
                    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
                }
                std::string near = nearest(name, names);
                std::string command = command_name(path);
                throw UsageError("unknown option " + name + " for " + command +
                                     (near.empty() ? "" : "; did you mean " + near + "?"),
                                 command + " --help lists its options");
            }
            // Its values, when it takes some and they are not given with '=': one, or for a
            // list every word up to the next option or command.
            if (option->get_type_size_max() <= 0 || arg.find('=') != std::string::npos) continue;
            if (option->get_expected_max() <= 1) {
                ++i;
                continue;
            }
            auto subcommands = at->get_subcommands([](CLI::App*) { return true; });
            auto names_a_command = [&](const std::string& word) {
                for (CLI::App* sub : subcommands)
                    if (sub->check_name(word)) return true;
                return false;
            };
            while (i + 1 < argc && argv[i + 1][0] != '-' && !names_a_command(argv[i + 1])) ++i;
            continue;
        }
        auto subcommands = at->get_subcommands([](CLI::App*) { return true; });
        if (subcommands.empty()) continue;  // a positional argument of this command
        CLI::App* next = nullptr;
        for (CLI::App* sub : subcommands)
            if (sub->check_name(arg)) next = sub;
        if (next) {
            at = next;
            path.push_back(next);
            continue;
        }
        std::vector<std::string> names;
        for (CLI::App* sub : subcommands) names.push_back(sub->get_name());
        std::string near = nearest(arg, names);
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        throw UsageError("unknown command '" + arg + "' for " + command_name(path) +
                             (near.empty() ? "" : "; did you mean '" + near + "'?"),
                         "the commands are: " + list);
    }
}

}  // namespace kbench::cli
