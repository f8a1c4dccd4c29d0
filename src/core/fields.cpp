#include "core/fields.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace kbench {

std::string dump_text(const json& j, int indent) {
    return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

namespace {

const char* type_name(const json& j) {
    return j.type_name();
}

}  // namespace

Fields::Fields(const json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object())
        throw ProtocolError(what_ + " is a " + type_name(j_) + ", expected an object");
}

bool Fields::has(const char* name) const {
    return j_.contains(name);
}

std::string Fields::where(const char* name) const {
    return what_ + "." + name;
}

void Fields::wrong(const char* name, const char* expected) const {
    auto it = j_.find(name);
    if (it == j_.end()) throw ProtocolError(what_ + " lacks the field '" + name + "'");
    throw ProtocolError("field '" + std::string(name) + "' of " + what_ + " is a " +
                        type_name(*it) + ", expected " + expected);
}

const json& Fields::any(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end()) wrong(name, "a value");
    return *it;
}

std::string Fields::text(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_string()) wrong(name, "a string");
    return it->get<std::string>();
}

bool Fields::flag(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_boolean()) wrong(name, "a boolean");
    return it->get<bool>();
}

std::int64_t Fields::integer(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_number_integer()) wrong(name, "an integer");
    if (it->is_number_unsigned() &&
        it->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        wrong(name, "an integer that fits 64 bits");
    return it->get<std::int64_t>();
}

std::uint64_t Fields::count(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_number_integer()) wrong(name, "a non-negative integer");
    if (it->is_number_unsigned()) return it->get<std::uint64_t>();
    std::int64_t v = it->get<std::int64_t>();
    if (v < 0) wrong(name, "a non-negative integer");
    return std::uint64_t(v);
}

int Fields::small(const char* name) const {
    std::int64_t v = integer(name);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
        wrong(name, "an integer that fits an int");
    return int(v);
}

double Fields::real(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end()) wrong(name, "a number");
    return real_from_json(*it, where(name));
}

const json& Fields::object(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_object()) wrong(name, "an object");
    return *it;
}

const json& Fields::array(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || !it->is_array()) wrong(name, "an array");
    return *it;
}

std::vector<double> Fields::reals(const char* name) const {
    std::vector<double> out;
    std::string at = where(name);
    for (const json& item : array(name)) out.push_back(real_from_json(item, at));
    return out;
}

std::vector<std::int64_t> Fields::integers(const char* name) const {
    std::vector<std::int64_t> out;
    for (const json& item : array(name)) {
        if (!item.is_number_integer())
            throw ProtocolError("an item of " + where(name) + " is a " + type_name(item) +
                                ", expected an integer");
        out.push_back(item.get<std::int64_t>());
    }
    return out;
}

std::vector<std::string> Fields::texts(const char* name) const {
    std::vector<std::string> out;
    for (const json& item : array(name)) {
        if (!item.is_string())
            throw ProtocolError("an item of " + where(name) + " is a " + type_name(item) +
                                ", expected a string");
        out.push_back(item.get<std::string>());
    }
    return out;
}

json real_json(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return value;
}

double real_from_json(const json& value, const std::string& where) {
    if (value.is_number()) return value.get<double>();
    if (value.is_string()) {
        const std::string& s = value.get_ref<const std::string&>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    throw ProtocolError(where + " is a " + std::string(value.type_name()) +
                        (value.is_string() ? " '" + value.get<std::string>() + "'" : "") +
                        ", expected a number");
}

json reals_json(const std::vector<double>& values) {
    json out = json::array();
    for (double v : values) out.push_back(real_json(v));
    return out;
}

}  // namespace kbench
