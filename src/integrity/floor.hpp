#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/files.hpp"

namespace kbench::integrity {

// A timed median below this fraction of the problem's memory-traffic floor is rejected
// (rule below_floor): the floor counts bytes at the datasheet's bandwidth, which no kernel
// reaches, so half of it leaves room for every honest kernel (see docs/security.md, "The floor").
constexpr double kFloorMargin = 0.5;

// Peak rates per GPU (data/gpus.json, compiled in) and the user's own entries, which come
// first. A file of the user's has the same schema.
class GpuTable {
  public:
    GpuTable();  // the built-in table only
    // Adds a user's table (its entries win); throws UsageError for a file that is not one.
    void add_file(const fs::path& file);

    // The first entry whose "match" strings appear in the device name, or null.
    json lookup(const std::string& device_name) const;

  private:
    json entries_ = json::array();
};

// The floor of one call of a problem on a device: max(FLOPs / peak, bytes / bandwidth), and
// what rejection is judged against: the bytes a kernel must move through memory in the timed
// window (inputs and parameters, which the cache flush left in memory, and the part of the
// outputs the cache cannot hold; outputs only when the problem's output does not depend on its
// inputs).
struct Floor {
    bool known = false;
    std::string why;  // when not known
    std::string gpu;  // the table entry's name
    std::optional<double> flop_floor_us;
    double byte_floor_us = 0;
    double floor_us = 0;
    std::string bound;  // "compute" or "memory"
    double must_move_bytes = 0;
    double reject_below_us = 0;  // kFloorMargin x must_move_bytes / bandwidth
    double peak_tflops = 0;
    std::string peak_kind;
    double bandwidth_gbps = 0;

    json to_json() const;
};

// work: what the judge counted (flops, bytes, input_bytes, parameter_bytes, output_bytes);
// entry: the device's table entry (or null); constant_output: the problem's health says its
// output does not depend on its inputs.
Floor compute_floor(const json& work, const json& entry, Precision precision, bool constant_output);

}  // namespace kbench::integrity
