#include "core/config.hpp"

#include "core/error.hpp"
#include "core/fields.hpp"
#include "core/sha256.hpp"

namespace kbench {

std::string_view to_string(Mode mode) {
    return mode == Mode::strict ? "strict" : "kernelbench";
}

std::string_view to_string(Precision precision) {
    switch (precision) {
        case Precision::fp32:
            return "fp32";
        case Precision::fp16:
            return "fp16";
        case Precision::bf16:
            return "bf16";
    }
    return "fp32";
}

std::string_view to_string(Backend backend) {
    switch (backend) {
        case Backend::cuda:
            return "cuda";
        case Backend::triton:
            return "triton";
        case Backend::cpu:
            return "cpu";
    }
    return "cuda";
}

Mode parse_mode(std::string_view text) {
    if (text == "strict") return Mode::strict;
    if (text == "kernelbench") return Mode::kernelbench;
    throw UsageError("unknown mode '" + std::string(text) + "'", "use strict or kernelbench");
}

Precision parse_precision(std::string_view text) {
    if (text == "fp32") return Precision::fp32;
    if (text == "fp16") return Precision::fp16;
    if (text == "bf16") return Precision::bf16;
    throw UsageError("unknown precision '" + std::string(text) + "'", "use fp32, fp16 or bf16");
}

Backend parse_backend(std::string_view text) {
    if (text == "cuda") return Backend::cuda;
    if (text == "triton") return Backend::triton;
    if (text == "cpu") return Backend::cpu;
    throw UsageError("unknown backend '" + std::string(text) + "'", "use cuda, triton or cpu");
}

Backend detect_backend(const std::string& option, const std::string& code, DeviceKind device_kind) {
    if (option != "auto") return parse_backend(option);
    if (device_kind == DeviceKind::cpu) return Backend::cpu;
    if (code.find("import triton") != std::string::npos ||
        code.find("from triton") != std::string::npos)
        return Backend::triton;
    return Backend::cuda;
}

std::string_view to_string(Tf32 tf32) {
    switch (tf32) {
        case Tf32::off:
            return "off";
        case Tf32::on:
            return "on";
        case Tf32::pytorch_default:
            return "default";
    }
    return "off";
}

std::string_view to_string(DeviceKind kind) {
    return kind == DeviceKind::cpu ? "cpu" : "cuda";
}

DeviceKind device_kind_of(std::string_view device) {
    // cpu:N names one of several CPU judges (--cpu-judges).
    if (device == "cpu" || device.rfind("cpu:", 0) == 0) return DeviceKind::cpu;
    if (device == "cuda" || device.rfind("cuda:", 0) == 0) return DeviceKind::cuda;
    throw UsageError("unknown device '" + std::string(device) + "'", "use cpu, cuda or cuda:N");
}

std::optional<Tf32> tf32_named(std::string_view text) {
    for (Tf32 t : {Tf32::off, Tf32::on, Tf32::pytorch_default})
        if (to_string(t) == text) return t;
    return std::nullopt;
}

Tf32 parse_tf32(std::string_view text, Mode mode) {
    if (text.empty()) return mode == Mode::strict ? Tf32::off : Tf32::pytorch_default;
    if (std::optional<Tf32> t = tf32_named(text)) return *t;
    throw UsageError("unknown TF32 setting '" + std::string(text) + "'",
                     "use off (float32 at full precision), on (TF32 allowed, at fp16's tolerance) "
                     "or default (PyTorch's defaults)");
}

double default_tolerance(Precision precision, Tf32 tf32) {
    return precision == Precision::fp32 && tf32 != Tf32::on ? 1e-4 : 1e-2;
}

json TimingConfig::to_json() const {
    return json{{"protocol", std::string(to_string(protocol))},
                {"min_samples", min_samples},
                {"max_samples", max_samples},
                {"max_seconds", max_seconds},
                {"target_rel_halfwidth", target_rel_halfwidth},
                {"warmup_min", warmup_min},
                {"warmup_max", warmup_max},
                {"warmup_max_seconds", warmup_max_seconds},
                {"warmup_tolerance", warmup_tolerance},
                {"kb_warmup", kb_warmup},
                {"kb_trials", kb_trials},
                {"kb_discard_first", kb_discard_first},
                {"kb_flush_bytes", kb_flush_bytes},
                {"alternate", alternate},
                {"rounds_systematic", rounds_systematic},
                {"stop_below", stop_below}};
}

TimingConfig TimingConfig::from_json(const json& j) {
    Fields f(j, "timing configuration");
    TimingConfig c;
    c.protocol = parse_mode(f.text("protocol"));
    // Settings stored before rounds existed timed the baseline apart.
    c.alternate = j.value("alternate", false);
    c.rounds_systematic = j.value("rounds_systematic", 0.0);
    // Settings stored before it sampled slow candidates to the interval's target or a cap.
    c.stop_below = j.value("stop_below", 0.0);
    c.min_samples = f.small("min_samples");
    c.max_samples = f.small("max_samples");
    c.max_seconds = f.real("max_seconds");
    c.target_rel_halfwidth = f.real("target_rel_halfwidth");
    c.warmup_min = f.small("warmup_min");
    c.warmup_max = f.small("warmup_max");
    c.warmup_max_seconds = f.real("warmup_max_seconds");
    c.warmup_tolerance = f.real("warmup_tolerance");
    c.kb_warmup = f.small("kb_warmup");
    c.kb_trials = f.small("kb_trials");
    c.kb_discard_first = f.small("kb_discard_first");
    c.kb_flush_bytes = f.integer("kb_flush_bytes");
    return c;
}

json CheckConfig::to_json() const {
    json j{{"mode", std::string(to_string(mode))},
           {"precision", std::string(to_string(precision))},
           {"tf32", std::string(to_string(tf32))},
           {"trials", trials},
           {"seed", seed},
           {"device", device},
           {"tolerance", tolerance ? json(*tolerance) : json(nullptr)},
           {"limits",
            {{"build_s", limits.build_s},
             {"load_s", limits.load_s},
             {"correctness_s", limits.correctness_s},
             {"timing_s", limits.timing_s},
             {"call_factor", limits.call_factor},
             {"call_floor_s", limits.call_floor_s},
             {"first_call_s", limits.first_call_s}}},
           {"timing", timing.to_json()},
           {"measure", measure},
           {"policy", policy},
           {"allow", allow},
           {"deny", deny}};
    if (device_memory) j["device_memory"] = device_memory;
    return j;
}

CheckConfig CheckConfig::from_json(const json& j) {
    Fields f(j, "configuration");
    CheckConfig c;
    c.mode = parse_mode(f.text("mode"));
    c.precision = parse_precision(f.text("precision"));
    c.tf32 = parse_tf32(f.text("tf32"), c.mode);
    c.trials = f.small("trials");
    c.seed = f.count("seed");
    c.device = f.text("device");
    if (j.contains("tolerance") && !j["tolerance"].is_null()) c.tolerance = f.real("tolerance");
    Fields l(f.object("limits"), "limits");
    c.limits = {l.real("build_s"), l.real("load_s"), l.real("correctness_s"), l.real("timing_s")};
    // Settings stored before calls had limits of their own ran under the phase limits alone.
    const json& limits = j.at("limits");
    PhaseLimits none;
    none.call_factor = none.call_floor_s = none.first_call_s = 0;
    c.limits.call_factor = limits.value("call_factor", none.call_factor);
    c.limits.call_floor_s = limits.value("call_floor_s", none.call_floor_s);
    c.limits.first_call_s = limits.value("first_call_s", none.first_call_s);
    c.timing = TimingConfig::from_json(f.object("timing"));
    c.measure = j.at("measure").get<bool>();
    c.policy = f.text("policy");
    c.allow = j.at("allow").get<std::vector<std::string>>();
    c.deny = j.at("deny").get<std::vector<std::string>>();
    if (j.contains("device_memory")) c.device_memory = f.count("device_memory");
    return c;
}

std::string CheckConfig::store_key() const {
    json j = to_json();
    std::string d = device;
    j["device"] = d.substr(0, d.find(':'));  // cuda:1 -> cuda
    return sha256_hex(j.dump());
}

namespace {

void differ(const json& a, const json& b, const std::string& prefix,
            std::vector<std::string>& out) {
    if (a.is_object() && b.is_object()) {
        for (const auto& [k, v] : a.items())
            differ(v, b.contains(k) ? b[k] : json(nullptr), prefix + k + ".", out);
        for (const auto& [k, v] : b.items())
            if (!a.contains(k)) out.push_back(prefix + k);
        return;
    }
    if (a != b) out.push_back(prefix.substr(0, prefix.size() - 1));
}

}  // namespace

std::vector<std::string> CheckConfig::differences(const CheckConfig& other) const {
    std::vector<std::string> out;
    differ(to_json(), other.to_json(), "", out);
    return out;
}

}  // namespace kbench
