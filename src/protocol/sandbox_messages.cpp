#include "protocol/sandbox_messages.hpp"

#include <cmath>

#include "core/error.hpp"

namespace kbench::protocol {

json Buffer::to_json() const {
    return json{{"kind", kind}, {"fd_index", fd_index}, {"nbytes", nbytes}};
}

Buffer Buffer::from_json(const json& j) {
    Fields f(j, "buffer");
    Buffer b{f.text("kind"), f.integer("fd_index"), f.count("nbytes")};
    if (b.kind != "memfd" && b.kind != "cuda_fd")
        throw ProtocolError("unknown buffer kind '" + b.kind + "'");
    return b;
}

json Slot::to_json() const {
    return json{{"id", id}, {"buffer", buffer.to_json()}};
}

Slot Slot::from_json(const json& j) {
    Fields f(j, "slot");
    return {f.count("id"), Buffer::from_json(f.object("buffer"))};
}

json TensorRef::to_json() const {
    return json{{"slot", slot},
                {"offset", offset},
                {"sizes", sizes},
                {"strides", strides},
                {"dtype", dtype}};
}

TensorRef TensorRef::from_json(const json& j) {
    Fields f(j, "tensor");
    TensorRef t{f.count("slot"), f.count("offset"), f.integers("sizes"), f.integers("strides"),
                f.text("dtype")};
    if (t.sizes.size() != t.strides.size())
        throw ProtocolError("tensor has " + std::to_string(t.sizes.size()) + " sizes and " +
                            std::to_string(t.strides.size()) + " strides");
    return t;
}

json Argument::to_json() const {
    if (is_tensor) return json{{"tensor", tensor.to_json()}};
    return json{{"value", value}};
}

Argument Argument::from_json(const json& j) {
    Fields f(j, "argument");
    Argument a;
    if (f.has("tensor")) {
        a.is_tensor = true;
        a.tensor = TensorRef::from_json(f.object("tensor"));
    } else {
        a.value = f.any("value");
    }
    return a;
}

json SandboxHello::to_json() const {
    return json{{"role", "sandbox"}, {"pid", pid}};
}

SandboxHello SandboxHello::from_json(const json& j) {
    Fields f(j, "sandbox hello");
    if (f.text("role") != "sandbox") throw ProtocolError("the sandbox's hello names another role");
    return {f.integer("pid")};
}

json AttachSandbox::to_json() const {
    return json{{"device", std::string(to_string(device))},
                {"flush_bytes", flush_bytes},
                {"gpu_memory_fraction", gpu_memory_fraction},
                {"tf32", std::string(to_string(tf32))}};
}

AttachSandbox AttachSandbox::from_json(const json& j) {
    Fields f(j, "attach request");
    return {device_field(f), f.count("flush_bytes"), f.real("gpu_memory_fraction"), tf32_field(f)};
}

json LoadCandidate::to_json() const {
    return json{{"candidate_file", candidate_file},
                {"slots", list_json(slots)},
                {"init_args", list_json(init_args)},
                {"seed", seed},
                {"precision", precision},
                {"reference_code", reference_code}};
}

LoadCandidate LoadCandidate::from_json(const json& j) {
    Fields f(j, "load request");
    return {
        f.text("candidate_file"), list_from<Slot>(f, "slots"), list_from<Argument>(f, "init_args"),
        f.count("seed"),          f.text("precision"),         f.text("reference_code")};
}

json CallSpec::to_json() const {
    return json{{"args", list_json(args)}, {"outputs", list_json(outputs)}};
}

CallSpec CallSpec::from_json(const json& j) {
    Fields f(j, "call");
    return {list_from<Argument>(f, "args"), list_from<TensorRef>(f, "outputs")};
}

json CallBatch::to_json() const {
    return json{{"nonce", nonce},
                {"new_slots", list_json(new_slots)},
                {"drop_slots", drop_slots},
                {"calls", list_json(calls)},
                {"timed", timed},
                {"poison", poison},
                {"null_model", null_model},
                {"transient", transient},
                {"export_outputs", export_outputs},
                {"knockout", knockout}};
}

CallBatch CallBatch::from_json(const json& j) {
    Fields f(j, "call request");
    CallBatch b;
    b.nonce = f.count("nonce");
    b.new_slots = list_from<Slot>(f, "new_slots");
    for (std::int64_t id : f.integers("drop_slots")) b.drop_slots.push_back(std::uint64_t(id));
    b.calls = list_from<CallSpec>(f, "calls");
    b.timed = f.flag("timed");
    b.poison = f.flag("poison");
    b.null_model = f.flag("null_model");
    b.transient = f.flag("transient");
    b.export_outputs = f.flag("export_outputs");
    b.knockout = f.texts("knockout");
    if (b.calls.empty()) throw ProtocolError("a call request with no calls");
    return b;
}

json OutputReport::to_json() const {
    json j{{"is_tensor", is_tensor},
           {"plain", plain},
           {"type", type},
           {"shape", shape},
           {"dtype", dtype},
           {"device", device},
           {"aliases_input", aliases_input},
           {"copied", copied},
           {"in_kbench_buffer", in_kbench_buffer},
           {"digest", digest}};
    j["exported"] = exported ? json{{"buffer", exported->to_json()}, {"offset", exported_offset}}
                             : json(nullptr);
    return j;
}

OutputReport OutputReport::from_json(const json& j) {
    Fields f(j, "output report");
    OutputReport o{f.flag("is_tensor"),        f.flag("plain"),  f.text("type"),
                   f.integers("shape"),        f.text("dtype"),  f.text("device"),
                   f.integer("aliases_input"), f.flag("copied"), f.flag("in_kbench_buffer"),
                   f.integer("digest")};
    if (!f.any("exported").is_null()) {
        Fields e(f.object("exported"), "exported output");
        o.exported = Buffer::from_json(e.object("buffer"));
        o.exported_offset = e.count("offset");
    }
    return o;
}

json CallResult::to_json() const {
    return json{{"event_us", real_json(event_us)},
                {"host_us", real_json(host_us)},
                {"kind", kind},
                {"plain", plain},
                {"outputs", list_json(outputs)}};
}

CallResult CallResult::from_json(const json& j) {
    Fields f(j, "call result");
    return {f.real("event_us"), f.real("host_us"), f.text("kind"), f.flag("plain"),
            list_from<OutputReport>(f, "outputs")};
}

json CallsDone::to_json() const {
    return json{{"nonce", nonce},
                {"results", list_json(results)},
                {"precision", precision},
                {"peak_bytes", peak_bytes},
                {"knockout", knockout}};
}

CallsDone CallsDone::from_json(const json& j) {
    Fields f(j, "call reply");
    CallsDone d{f.count("nonce"), list_from<CallResult>(f, "results"), f.object("precision"),
                f.count("peak_bytes"), f.any("knockout")};
    if (!d.knockout.is_null()) {
        Fields k(d.knockout, "call reply.knockout");
        d.knockout = {{"replaced", k.count("replaced")},
                      {"failed", k.count("failed")},
                      {"why", k.text("why")}};
    }
    return d;
}

json ReportKernels::to_json() const {
    return json::object();
}

ReportKernels ReportKernels::from_json(const json& j) {
    Fields f(j, "kernels request");
    return {};
}

json KernelRow::to_json() const {
    return json{{"name", name},
                {"stream", stream},
                {"window", window},
                {"count", count},
                {"total_ns", total_ns}};
}

KernelRow KernelRow::from_json(const json& j) {
    Fields f(j, "kernel row");
    return {f.text("name"), f.count("stream"), f.text("window"), f.count("count"),
            f.count("total_ns")};
}

std::string KernelsReported::disagreement(std::uint64_t judged_calls, double judged_wall_us) const {
    if (!collected) return "";
    if (calls != judged_calls)
        return "the kernel records count " + std::to_string(calls) +
               " model calls where the judge made " + std::to_string(judged_calls);
    // On a CPU, dropped counts the samples lost: the CPU time its threads ran in model calls with a
    // sampling signal kept out (blocked or ignored), in sampling periods. Wholesale, the samples
    // would say nothing.
    std::uint64_t samples = 0;
    for (const KernelRow& row : rows) samples += row.count;
    if (source == "cpu" && dropped >= 100 && dropped > 3 * samples)
        return std::to_string(dropped) + " of the " + std::to_string(dropped + samples) +
               " samples of its threads in model calls were lost: they ran with the sampling "
               "signal kept out (blocked or ignored)";
    double claimed_us = double(call_ns) / 1e3;
    if (claimed_us > judged_wall_us * 1.05 + 1000)
        return "the kernel records' call windows add up to " +
               std::to_string(std::llround(claimed_us)) +
               " us, more than the judge's clock allowed those requests (" +
               std::to_string(std::llround(judged_wall_us)) + " us)";
    return "";
}

json KernelsReported::to_json() const {
    return json{{"collected", collected}, {"why", why},         {"rows", list_json(rows)},
                {"calls", calls},         {"call_ns", call_ns}, {"dropped", dropped},
                {"source", source}};
}

KernelsReported KernelsReported::from_json(const json& j) {
    Fields f(j, "kernels reply");
    KernelsReported r{f.flag("collected"), f.text("why"),      list_from<KernelRow>(f, "rows"),
                      f.count("calls"),    f.count("call_ns"), f.count("dropped"),
                      f.text("source")};
    if (r.source != "gpu" && r.source != "cpu")
        throw ProtocolError("kernels reply: source '" + r.source + "' is neither gpu nor cpu");
    return r;
}

}  // namespace kbench::protocol
