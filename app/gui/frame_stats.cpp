#include "app/gui/frame_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"

namespace ts {

namespace {

FrameSummary summarise(const std::vector<double>& all, size_t warmup) {
  FrameSummary s;
  if (all.size() <= warmup) return s;
  std::vector<double> v(all.begin() + static_cast<std::ptrdiff_t>(warmup), all.end());
  std::sort(v.begin(), v.end());
  const auto rank = [&](double p) {  // nearest rank: the smallest value with p of the data at or below it
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(k, 1, v.size()) - 1];
  };
  s.frames = v.size();
  s.median_ms = rank(0.5);
  s.p99_ms = rank(0.99);
  s.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.min_ms = v.front();
  s.max_ms = v.back();
  return s;
}

nlohmann::json to_json(const FrameSummary& s) {
  return {{"frames", s.frames}, {"median_ms", s.median_ms}, {"p99_ms", s.p99_ms},
          {"mean_ms", s.mean_ms}, {"min_ms", s.min_ms},     {"max_ms", s.max_ms}};
}

}  // namespace

FrameSummary FrameStats::summary() const { return summarise(frames_ms_, warmup_); }

FrameSummary FrameStats::part_summary(const std::string& part) const {
  const auto it = parts_.find(part);
  return it == parts_.end() ? FrameSummary{} : summarise(it->second, warmup_);
}

void FrameStats::write_json(const std::filesystem::path& path,
                            const std::vector<std::pair<std::string, std::string>>& context) const {
  nlohmann::json j;
  j["summary"] = to_json(summary());
  j["parts"] = nlohmann::json::object();
  for (const auto& [part, values] : parts_) j["parts"][part] = to_json(summarise(values, warmup_));
  j["warmup_frames"] = std::min(warmup_, frames_ms_.size());
  j["frames_ms"] = frames_ms_;
  nlohmann::json ctx = nlohmann::json::object();
  for (const auto& [k, v] : context) ctx[k] = v;
  j["context"] = ctx;
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // a file name in it need not be UTF-8
  AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace ts
