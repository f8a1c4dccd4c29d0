#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbench {

using json = nlohmann::json;

// strict adds every integrity and correctness check; kernelbench reproduces the reference harness.
enum class Mode { strict, kernelbench };
enum class Precision { fp32, fp16, bf16 };
enum class Backend { cuda, triton, cpu };
// The kind of device a run evaluates on ("cpu", or "cuda" for every cuda:N).
enum class DeviceKind { cpu, cuda };
// The precision policy for float32: TF32 off (strict mode's default: TF32 off for cuBLAS and
// cuDNN, matmul precision "highest"), on (TF32 allowed), or PyTorch's defaults ("default", as
// the reference harness runs; kernelbench mode's default).
enum class Tf32 { off, on, pytorch_default };

std::string_view to_string(Mode mode);
std::string_view to_string(Precision precision);
std::string_view to_string(Backend backend);
std::string_view to_string(Tf32 tf32);  // "off", "on" or "default"
std::string_view to_string(DeviceKind kind);
// "cpu", "cpu:N" (one of several CPU judges), "cuda" or "cuda:N" to its kind; throws UsageError
// for another.
DeviceKind device_kind_of(std::string_view device);
Mode parse_mode(std::string_view text);
Precision parse_precision(std::string_view text);
Backend parse_backend(std::string_view text);
// The backend option ("auto", or a backend's name) for a candidate's code on a kind of device:
// auto is cpu on the CPU, triton for code that imports it, cuda otherwise.
Backend detect_backend(const std::string& option, const std::string& code, DeviceKind device_kind);

// --tf32: off, on or default; empty text: the mode's default. Throws UsageError.
Tf32 parse_tf32(std::string_view text, Mode mode);
// A TF32 policy on the wire or in a stored configuration: none where the text names none.
std::optional<Tf32> tf32_named(std::string_view text);

// KernelBench's tolerance: fp32 1e-4, fp16 and bf16 1e-2, used as both atol and rtol. fp32 with
// TF32 on gets fp16's (TF32 keeps fp16's 10-bit mantissa).
double default_tolerance(Precision precision, Tf32 tf32 = Tf32::off);

// Wall-clock limits per phase; the orchestrator kills a sandbox that overruns one.
struct PhaseLimits {
    double build_s = 600;
    double load_s = 120;
    double correctness_s = 120;
    double timing_s = 120;
    // Each request of model calls may take call_factor times the reference's own time for as
    // many calls, and at least call_floor_s. A sandbox's first call may take longer while it
    // compiles (files written in its folder, compilers running under it), up to first_call_s.
    // The phase limits above bound them all.
    double call_factor = 100;
    double call_floor_s = 5;
    double first_call_s = 60;
};

// How samples are taken and when sampling stops.
struct TimingConfig {
    Mode protocol = Mode::strict;
    // strict: adaptive sampling until the median's 95% interval is narrow enough, or a cap.
    int min_samples = 10;
    int max_samples = 2000;
    double max_seconds = 5.0;
    double target_rel_halfwidth = 0.01;
    int warmup_min = 3;
    int warmup_max = 200;
    double warmup_max_seconds = 2.0;
    double warmup_tolerance = 0.05;
    // kbench's protocol: the baseline timed in rounds, its requests served by a sandbox of the
    // reference's own and alternating with the candidate's (false: apart, in the judge, its
    // samples against the candidate's as if independent).
    bool alternate = true;
    // With rounds: what two sandboxes running the same code differ by within one evaluation and
    // no number of rounds averages out (one standard deviation, relative; measured with
    // identity candidates, docs/semantics.md "Speedup"); the speedup's interval includes it.
    double rounds_systematic = 0.003;
    // With rounds: sampling also stops, after the rounds at least, once the speedup's whole
    // interval lies below this (0: never). A candidate that slow pays its own calls in every
    // round (on the H200 a 150 ms candidate of a 3 ms problem ran to the 5 s cap); more rounds
    // would narrow an interval that no fast_p at this speedup or above can change.
    double stop_below = 0.25;
    // Whether the baseline is timed in rounds: asked for, and kbench's protocol.
    bool rounds() const { return alternate && protocol != Mode::kernelbench; }
    // kernelbench: the reference harness's fixed protocol.
    int kb_warmup = 3;
    int kb_trials = 100;
    int kb_discard_first = 1;
    std::int64_t kb_flush_bytes = 256LL << 20;

    json to_json() const;
    static TimingConfig from_json(const json& j);
};

// Everything that decides a verdict for one candidate, besides the two programs.
struct CheckConfig {
    Mode mode = Mode::strict;
    Precision precision = Precision::fp32;
    Tf32 tf32 = Tf32::off;
    int trials = 5;
    std::uint64_t seed = 42;
    std::string device = "cuda";  // cpu, cuda or cuda:N
    DeviceKind device_kind() const { return device_kind_of(device); }
    std::optional<double> tolerance;
    PhaseLimits limits;
    TimingConfig timing;
    bool measure = true;  // time correct candidates and their baseline
    // Integrity rules (integrity/rules.hpp): strict, kernelbench or permissive, and the rules
    // --allow and --deny change.
    std::string policy = "strict";
    std::vector<std::string> allow;
    std::vector<std::string> deny;
    // --device-memory: the device memory kbench plans every party within, as if the GPU had
    // that much (bytes; 0: the GPU's own). Written only when set, so that runs made before it
    // keep their key.
    std::uint64_t device_memory = 0;

    double atol() const { return tolerance.value_or(default_tolerance(precision, tf32)); }
    double rtol() const { return atol(); }

    // The one serialisation: every field, by name (a run's record, a verdict's config).
    json to_json() const;
    static CheckConfig from_json(const json& j);
    // What verdicts are stored under besides the two programs: every field but the device's
    // ordinal (a verdict from one GPU stands for the others of the run's kind).
    std::string store_key() const;
    // The fields (dotted names) where other differs, for a message.
    std::vector<std::string> differences(const CheckConfig& other) const;
};

}  // namespace kbench
