// kbench: the command line. A thin shell over the libraries; it never imports torch.
#include <iostream>
#include <string>

#include "cli/command_words.hpp"
#include "cli/commands.hpp"
#include "confinement/lockdown.hpp"
#include "core/error.hpp"
#include "core/settings.hpp"

int main(int argc, char** argv) {
    // No process of this user (a sandbox without its layers, say) may read kbench's memory.
    kbench::sandbox::make_undumpable();
    CLI::App app{"kbench: evaluate GPU kernels against KernelBench reference programs"};
    app.set_version_flag("--version", "kbench 0.1.0");
    app.require_subcommand(1);
    auto check = kbench::cli::add_check_command(app);
    std::string command_line;
    for (int i = 0; i < argc; ++i) {
        std::string arg = argv[i];
        bool plain = !arg.empty() && arg.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_./:=,+@%") == std::string::npos;
        command_line += (i ? " " : "") + (plain ? arg : "'" + arg + "'");
    }
    auto eval = kbench::cli::add_eval_command(app, command_line);
    auto dataset = kbench::cli::add_dataset_command(app);
    auto rules = kbench::cli::add_rules_command(app);
    auto generate = kbench::cli::add_generate_command(app, command_line);
    auto refine = kbench::cli::add_refine_command(app, command_line);
    auto prompt = kbench::cli::add_prompt_command(app);
    auto score = kbench::cli::add_score_command(app);
    auto report = kbench::cli::add_report_command(app);
    auto baseline = kbench::cli::add_baseline_command(app);
    auto cache = kbench::cli::add_cache_command(app);
    auto serve = kbench::cli::add_serve_command(app);
    // After the commands: theirs do not repeat it.
    app.footer(kbench::settings_help());
    try {
        kbench::cli::check_command_words(app, argc, argv);
    } catch (const kbench::Error& e) {
        std::cerr << "kbench: error: " << e.what() << "\n";
        if (!e.hint().empty()) std::cerr << "  what to do: " << e.hint() << "\n";
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }
    try {
        if (app.got_subcommand("check")) return check();
        if (app.got_subcommand("eval")) return eval();
        if (app.got_subcommand("dataset")) return dataset();
        if (app.got_subcommand("rules")) return rules();
        if (app.got_subcommand("generate")) return generate();
        if (app.got_subcommand("refine")) return refine();
        if (app.got_subcommand("prompt")) return prompt();
        if (app.got_subcommand("score")) return score();
        if (app.got_subcommand("report")) return report();
        if (app.got_subcommand("baseline")) return baseline();
        if (app.got_subcommand("cache")) return cache();
        if (app.got_subcommand("serve")) return serve();
    } catch (const kbench::Error& e) {
        std::cerr << "kbench: error: " << e.what() << "\n";
        if (!e.hint().empty()) std::cerr << "  what to do: " << e.hint() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "kbench: internal error: " << e.what() << "\n";
        return 2;
    }
    return 2;
}
