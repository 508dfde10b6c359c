#include "app/gui/value_format.h"

#include <cmath>
#include <cstdio>

namespace ts {

std::string format_cell_value(float value, uint8_t absent) {
  // An absent cell holds no value worth showing: the words say why.
  if (absent != 0) return std::string(cell_class_meaning(classify_cell(value, absent)));
  char text[64];
  if (std::isnan(value)) {
    std::snprintf(text, sizeof text, "NaN");
  } else if (std::isinf(value)) {
    std::snprintf(text, sizeof text, value > 0 ? "+Inf" : "-Inf");
  } else {
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  }
  return text;
}

std::string format_short(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

}  // namespace ts
