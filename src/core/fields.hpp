#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbench {

using json = nlohmann::json;

// j as text, with bytes that are not UTF-8 written as U+FFFD: what a candidate prints, names or
// raises (its output, build logs, thread and kernel names) can hold any bytes, on which a plain
// dump() throws.
std::string dump_text(const json& j, int indent = -1);

// Reads the fields of one message strictly: a field that is missing or of the wrong type throws a
// ProtocolError naming the message, the field and what was there. Nothing has a default, so a
// reply that lacks something can never pass for one that has it.
class Fields {
  public:
    // Throws unless j is an object; what names the message in errors ("timing reply").
    Fields(const json& j, std::string what);
    Fields(json&&, std::string) = delete;  // it keeps a reference: the message must outlive it

    bool has(const char* name) const;
    const json& any(const char* name) const;
    std::string text(const char* name) const;
    bool flag(const char* name) const;
    std::int64_t integer(const char* name) const;
    std::uint64_t count(const char* name) const;  // a non-negative integer
    int small(const char* name) const;            // an integer that fits an int
    double real(const char* name) const;          // a number, or "inf", "-inf", "nan"
    const json& object(const char* name) const;
    const json& array(const char* name) const;
    std::vector<double> reals(const char* name) const;
    std::vector<std::int64_t> integers(const char* name) const;
    std::vector<std::string> texts(const char* name) const;

    // The message's name with a field appended, for nested readers ("timing reply.measurement").
    std::string where(const char* name) const;

  private:
    [[noreturn]] void wrong(const char* name, const char* expected) const;

    const json& j_;
    std::string what_;
};

// A double on the wire: a number when finite, else the string "inf", "-inf" or "nan" (JSON has
// no such numbers, and nlohmann would write null).
json real_json(double value);
double real_from_json(const json& value, const std::string& where);
json reals_json(const std::vector<double>& values);

}  // namespace kbench
