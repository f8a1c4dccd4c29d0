#include "cli/selection_options.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/settings.hpp"
#include "dataset/problem_set.hpp"
#include "llm/http.hpp"

namespace kbench::cli {
namespace {

namespace fs = std::filesystem;

// KernelBench's problem set as Hugging Face serves it (ScalingIntelligence/KernelBench): a
// Parquet file a level. Levels 1-3 must come; level 4 (Hugging Face models) comes if served.
constexpr const char* kKernelBenchUrl =
    "https://huggingface.co/datasets/ScalingIntelligence/KernelBench/resolve/main";
constexpr int kRequiredLevels = 3, kLevels = 4;

std::string level_file(int level) {
    return "data/level_" + std::to_string(level) + "-00000-of-00001.parquet";
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

fs::path home_cache() {
    std::string xdg = env_or("XDG_CACHE_HOME", "");
    if (!xdg.empty()) return xdg;
    return fs::path(env_or("HOME", "/tmp")) / ".cache";
}

// Where kbench keeps the problem sets it downloads.
fs::path datasets_dir() {
    std::string dir = setting_or("KBENCH_DATASETS_DIR", "");
    return dir.empty() ? cache_root() / "datasets" : fs::path(dir);
}

bool holds_levels(const fs::path& dir, int levels) {
    for (int level = 1; level <= levels; ++level)
        if (!fs::is_regular_file(dir / level_file(level))) return false;
    return true;
}

// A snapshot Hugging Face's own tools made (datasets, huggingface-cli download), if any.
std::optional<fs::path> hub_snapshot() {
    std::string hub = env_or("HF_HUB_CACHE", "");
    fs::path root = !hub.empty()                     ? fs::path(hub)
                    : !env_or("HF_HOME", "").empty() ? fs::path(env_or("HF_HOME", "")) / "hub"
                                                     : home_cache() / "huggingface" / "hub";
    fs::path snapshots = root / "datasets--ScalingIntelligence--KernelBench" / "snapshots";
    std::error_code error;
    if (!fs::is_directory(snapshots, error)) return std::nullopt;
    for (const auto& entry : fs::directory_iterator(snapshots, error))
        if (holds_levels(entry.path(), kRequiredLevels)) return entry.path();
    return std::nullopt;
}

bool is_parquet(const std::string& bytes) {
    return bytes.size() >= 12 && bytes.compare(0, 4, "PAR1") == 0 &&
           bytes.compare(bytes.size() - 4, 4, "PAR1") == 0;
}

// The folder that holds KernelBench's problem set: kbench's copy, else Hugging Face's, else
// downloaded now into kbench's; UsageError saying what to fetch where when it cannot be.
fs::path kernelbench_dataset() {
    fs::path dir = datasets_dir() / "kernelbench";
    // Downloaded before, or fetched by hand as the error below says.
    if (holds_levels(dir, kRequiredLevels)) return dir;
    if (auto snapshot = hub_snapshot()) return *snapshot;
    std::string base = setting_or("KBENCH_KERNELBENCH_URL", kKernelBenchUrl);
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::string urls;
    for (int level = 1; level <= kLevels; ++level)
        urls += "\n    " + base + "/" + level_file(level);
    auto cannot = [&](const std::string& why) {
        return UsageError(
            "KernelBench's problem set is not in " + dir.string() +
                " and could not be downloaded: " + why,
            "on a machine that is online, fetch these files (levels 1-3 at least) into " +
                (dir / "data").string() + "/ and run the same command again:" + urls +
                "\n  or give --dataset a KernelBench folder or a .parquet/.jsonl file");
    };
    std::cerr << "kbench: downloading KernelBench's problem set from " << base << " into "
              << dir.string() << std::endl;
    std::error_code error;
    fs::create_directories(dir / "data", error);
    if (error) throw cannot("cannot make " + (dir / "data").string() + ": " + error.message());
    for (int level = 1; level <= kLevels; ++level) {
        llm::HttpRequest request;
        request.url = base + "/" + level_file(level);
        request.timeout_s = 300;
        request.idle_timeout_s = 60;
        request.connect_timeout_s = 20;
        request.max_bytes = 256u << 20;
        llm::HttpResponse r = llm::http_get(request);
        if (level > kRequiredLevels && r.failure == llm::HttpFailure::none && r.status == 404)
            continue;  // not served: the levels that are will do
        if (r.failure != llm::HttpFailure::none) throw cannot(request.url + ": " + r.error);
        if (r.status != 200)
            throw cannot(request.url + " answered HTTP " + std::to_string(r.status));
        if (!is_parquet(r.body)) throw cannot(request.url + " sent something that is not Parquet");
        write_file_atomic(dir / level_file(level), r.body);
    }
    return dir;
}

}  // namespace

std::string dataset_spec(const SelectionOptions& o) {
    return o.dataset.empty() ? "builtin" : o.dataset;
}

void add_selection_options(CLI::App* cmd, SelectionOptions& o) {
    cmd->add_option("--dataset", o.dataset,
                    "kernelbench (KernelBench's problems, from Hugging Face, kept after the first "
                    "download), builtin (kbench's own suite: the default), a KernelBench folder, "
                    "or a .jsonl/.parquet file (Hugging Face columns)");
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
    std::string spec = dataset_spec(o);
    auto all = dataset::load_problems(spec == "kernelbench" ? kernelbench_dataset().string() : spec,
                                      python);
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
            "no problem of " + spec + " matches" + asked + ": it holds " +
                dataset::describe_levels(all),
            "choose among those, or list them with: kbench dataset list --dataset " + spec);
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
