#include "app/model/viewer/curve_frame.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ts {

double CurveFrame::fy(double y) const {
  if (log_y) return (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0));
  return (y - y0) / (y1 - y0);
}

bool CurveFrame::plottable(double y) const { return std::isfinite(y) && (!log_y || y > 0); }

CurveFrame fit_curve_frame(std::span<const CurveSeries> series, double first_x, bool log_y,
                           std::span<const double> also_y) {
  CurveFrame f;
  f.log_y = log_y;
  size_t n = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double y) {
    if (!std::isfinite(y) || (log_y && y <= 0)) return;
    lo = std::min(lo, y);
    hi = std::max(hi, y);
  };
  for (const CurveSeries& s : series) {
    n = std::max(n, s.y.size());
    for (float y : s.y) take(y);
  }
  for (double y : also_y) take(y);
  f.x0 = first_x;
  f.x1 = first_x + static_cast<double>(n > 1 ? n - 1 : 1);
  if (!(lo <= hi)) {
    f.y0 = log_y ? 0.1 : 0.0;
    f.y1 = log_y ? 10.0 : 1.0;
    return f;
  }
  if (log_y) {
    // Whole decades around the data read best; at least one decade.
    f.y0 = std::pow(10.0, std::floor(std::log10(lo)));
    f.y1 = std::pow(10.0, std::ceil(std::log10(hi)));
    if (f.y1 <= f.y0) f.y1 = f.y0 * 10;
    return f;
  }
  if (hi == lo) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.05;
    f.y0 = lo - pad;
    f.y1 = hi + pad;
    return f;
  }
  const double pad = (hi - lo) * 0.06;
  f.y0 = lo - pad;
  f.y1 = hi + pad;
  return f;
}

std::vector<double> curve_ticks(double lo, double hi, bool log, int max_ticks) {
  std::vector<double> out;
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 1) return out;
  if (log && lo > 0) {
    const int d0 = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
    const int d1 = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    if (d1 - d0 >= 1) {
      const int every = std::max(1, (d1 - d0 + 1 + max_ticks - 1) / max_ticks);
      for (int d = d0; d <= d1; d += every) out.push_back(std::pow(10.0, d));
      return out;
    }
    // Less than two decades: fall through to linear ticks of the range.
  }
  const double raw = (hi - lo) / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  // Integer multiples of the step (no drift from repeated addition); zero exactly zero.
  const double k0 = std::ceil(lo / step - 1e-9), k1 = std::floor(hi / step + 1e-9);
  for (double k = k0; k <= k1 && out.size() < 1000; ++k) {
    const double v = k == 0 ? 0.0 : k * step;
    if (!log || v > 0) out.push_back(v);
  }
  return out;
}

std::optional<size_t> nearest_index(double x, double first_x, size_t n) {
  if (n == 0 || !std::isfinite(x)) return std::nullopt;
  const double i = std::round(x - first_x);
  return static_cast<size_t>(std::clamp(i, 0.0, static_cast<double>(n - 1)));
}

std::string format_tick(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (v == 0) return "0";
  // Exponents for large and small values; a power of ten without a mantissa ("1e+06", as
  // "1e+04" is), so that the ticks of one log axis read alike.
  const double mantissa = v / std::pow(10.0, std::floor(std::log10(a)));
  if ((a >= 1e5 || a < 1e-3) && std::abs(mantissa - std::round(mantissa)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else if (a >= 1e5 || a < 1e-3) std::snprintf(buf, sizeof buf, "%.1e", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace ts
