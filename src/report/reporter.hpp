#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "core/verdict.hpp"

namespace kbench::report {

// Writes verdicts as they come; one implementation per output format.
class Reporter {
  public:
    virtual ~Reporter() = default;
    virtual void verdict(const Verdict& verdict) = 0;
};

// A block of aligned lines a person reads.
class TextReporter final : public Reporter {
  public:
    explicit TextReporter(std::ostream& out) : out_(out) {}
    void verdict(const Verdict& verdict) override;

  private:
    std::ostream& out_;
};

// One JSON object a line, in the verdict schema.
class JsonLinesReporter final : public Reporter {
  public:
    explicit JsonLinesReporter(std::ostream& out) : out_(out) {}
    void verdict(const Verdict& verdict) override;

  private:
    std::ostream& out_;
};

std::string format_verdict(const Verdict& verdict);

}  // namespace kbench::report
