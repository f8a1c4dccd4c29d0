#include "runtime/torch_common.hpp"
#include "runtime/python.hpp"

#include <array>
#include <utility>

namespace kbench::worker {
namespace {

constexpr std::array<std::pair<at::ScalarType, const char*>, 13> kDtypes{{
    {at::kFloat, "float32"},
    {at::kHalf, "float16"},
    {at::kBFloat16, "bfloat16"},
    {at::kDouble, "float64"},
    {at::kLong, "int64"},
    {at::kInt, "int32"},
    {at::kShort, "int16"},
    {at::kChar, "int8"},
    {at::kByte, "uint8"},
    {at::kBool, "bool"},
    {at::kComplexFloat, "complex64"},
    {at::kComplexDouble, "complex128"},
    {at::kComplexHalf, "complex32"},
}};

}  // namespace

std::string dtype_name(at::ScalarType type) {
    for (const auto& [value, name] : kDtypes)
        if (value == type) return name;
    return std::string(c10::toString(type));
}

at::ScalarType dtype_from_name(const std::string& name) {
    for (const auto& [value, text] : kDtypes)
        if (text == name) return value;
    throw std::runtime_error("unsupported dtype " + name);
}

at::Tensor pinned_host_copy(const at::Tensor& t) {
    if (!t.is_cuda()) return t;
    at::Tensor host = at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
    host.copy_(t);
    return host;
}

std::vector<std::int64_t> to_vector(at::IntArrayRef values) {
    return std::vector<std::int64_t>(values.begin(), values.end());
}

std::string describe_python_error(const py::error_already_set& error) {
    std::string text;
    try {
        py::module_ traceback = python_module("traceback");
        py::list lines =
            traceback.attr("format_exception")(error.type(), error.value(), error.trace());
        for (auto line : lines) text += line.cast<std::string>();
    } catch (...) {
        text = error.what();
    }
    constexpr std::size_t kLimit = 16 << 10;
    if (text.size() > kLimit)
        text = text.substr(0, kLimit / 2) + "\n[...]\n" + text.substr(text.size() - kLimit / 2);
    return text;
}

}  // namespace kbench::worker
