#include "integrity/floor.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kbench::integrity {

// Generated at build time from data/gpus.json.
extern const char* const kBuiltinGpuTable;

namespace {

// The largest of a rate's figures ("datasheet", "measured", "tensor_core"), or 0.
double best_rate(const json& field) {
    if (field.is_number()) return std::max(0.0, field.get<double>());
    if (!field.is_object()) return 0;
    double best = 0;
    for (const char* key : {"datasheet", "measured", "tensor_core"})
        if (field.contains(key) && field[key].is_number())
            best = std::max(best, field[key].get<double>());
    return best;
}

json entries_of(const json& table, const std::string& what) {
    if (table.is_object() && table.contains("gpus") && table["gpus"].is_array())
        return table["gpus"];
    if (table.is_array()) return table;
    throw UsageError(what + " is not a GPU table",
                     "give a JSON object with a \"gpus\" list (see data/gpus.json)");
}

double number(const json& work, const char* key) {
    return work.contains(key) && work[key].is_number() ? work[key].get<double>() : 0.0;
}

}  // namespace

GpuTable::GpuTable() : entries_(entries_of(json::parse(kBuiltinGpuTable), "the built-in table")) {}

void GpuTable::add_file(const fs::path& file) {
    json table;
    try {
        table = json::parse(read_file(file));
    } catch (const json::exception& e) {
        throw UsageError(file.string() + " is not JSON: " + e.what(),
                         "give a GPU table with the schema of data/gpus.json");
    }
    json mine = entries_of(table, file.string());
    for (const auto& entry : entries_) mine.push_back(entry);
    entries_ = std::move(mine);
}

json GpuTable::lookup(const std::string& device_name) const {
    for (const auto& entry : entries_) {
        if (!entry.is_object() || !entry.contains("match") || !entry["match"].is_array()) continue;
        for (const auto& m : entry["match"])
            if (m.is_string() && device_name.find(m.get<std::string>()) != std::string::npos)
                return entry;
    }
    return nullptr;
}

json Floor::to_json() const {
    if (!known) return {{"known", false}, {"why", why}};
    return {{"known", true},
            {"gpu", gpu},
            {"flop_floor_us", flop_floor_us ? json(*flop_floor_us) : json(nullptr)},
            {"byte_floor_us", byte_floor_us},
            {"floor_us", floor_us},
            {"bound", bound},
            {"peak_tflops", peak_tflops},
            {"peak_kind", peak_kind},
            {"bandwidth_GBps", bandwidth_gbps},
            {"must_move_bytes", must_move_bytes},
            {"reject_below_us", reject_below_us}};
}

Floor compute_floor(const json& work, const json& entry, Precision precision,
                    bool constant_output) {
    Floor f;
    if (entry.is_null()) {
        f.why = "no peak rates for this device (add them with --gpu-peaks FILE)";
        return f;
    }
    if (!work.is_object() || !work.contains("bytes") || !work["bytes"].is_number()) {
        f.why =
            work.is_object() && work.contains("flop_error")
                ? "the reference's work was not counted: " + work["flop_error"].get<std::string>()
                : "the reference's work was not counted";
        return f;
    }
    f.gpu = entry.value("name", std::string("?"));
    f.bandwidth_gbps = best_rate(entry.value("memory_bandwidth_GBps", json()));
    if (f.bandwidth_gbps <= 0) {
        f.why = "the table gives no memory bandwidth for " + f.gpu;
        return f;
    }
    // The most generous compute peak a correct kernel could use at this precision: fp32 may
    // use TF32 tensor cores where allowed, and the FLOP floor is reported, never enforced.
    std::vector<std::string> kinds;
    switch (precision) {
        case Precision::fp32:
            kinds = {"fp32", "tf32"};
            break;
        case Precision::fp16:
            kinds = {"fp16"};
            break;
        case Precision::bf16:
            kinds = {"bf16"};
            break;
    }
    for (const auto& kind : kinds) {
        double rate = best_rate(entry.value(kind + "_tflops", json()));
        if (rate > f.peak_tflops) {
            f.peak_tflops = rate;
            f.peak_kind = kind;
        }
    }
    f.known = true;
    const double bandwidth = f.bandwidth_gbps * 1e9;  // bytes a second
    f.byte_floor_us = number(work, "bytes") / bandwidth * 1e6;
    if (work.contains("flops") && work["flops"].is_number() && f.peak_tflops > 0)
        f.flop_floor_us = work["flops"].get<double>() / (f.peak_tflops * 1e12) * 1e6;
    f.floor_us = std::max(f.byte_floor_us, f.flop_floor_us.value_or(0.0));
    f.bound = f.flop_floor_us && *f.flop_floor_us > f.byte_floor_us ? "compute" : "memory";
    double l2 = entry.contains("l2_bytes") && entry["l2_bytes"].is_number()
                    ? entry["l2_bytes"].get<double>()
                    : 0.0;
    double outputs = std::max(0.0, number(work, "output_bytes") - l2);
    f.must_move_bytes =
        constant_output ? outputs
                        : number(work, "input_bytes") + number(work, "parameter_bytes") + outputs;
    f.reject_below_us = kFloorMargin * f.must_move_bytes / bandwidth * 1e6;
    return f;
}

}  // namespace kbench::integrity
