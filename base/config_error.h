// An invalid configuration or attention description: names the field, the value, and the limit
// it broke. Thrown by validate(AttentionConfig), validate(AttentionSpec) and their JSON readers.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ts {

class ConfigError : public std::invalid_argument {
 public:
  ConfigError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace ts
