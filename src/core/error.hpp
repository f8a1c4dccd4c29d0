#pragma once

#include <stdexcept>
#include <string>

namespace kbench {

// An error a person can act on: what failed, and what to do about it.
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what, std::string hint = {})
        : std::runtime_error(what), hint_(std::move(hint)) {}
    const std::string& hint() const { return hint_; }

  private:
    std::string hint_;
};

// The command line or its inputs are wrong (exit code 2).
class UsageError : public Error {
    using Error::Error;
};

// The harness itself failed, not the candidate (exit code 2, verdict infra_error).
class InfraError : public Error {
    using Error::Error;
};

// A message between processes broke the protocol: malformed, a field missing or mistyped.
class ProtocolError : public Error {
    using Error::Error;
};

}  // namespace kbench
