// Running tilescope-gui in screenshot mode for a test: the PNG decoded and the layout JSON
// (where each view drew its cells) parsed.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include "app/model/rgba_image.h"
#include "tests/gui/gui_process.h"
#include "tests/support/temp_dir.h"

namespace ts::test {

inline RgbaImage load_png(const std::filesystem::path& path) {
  int w = 0, h = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &w, &h, &channels, 4);
  if (!data) throw std::runtime_error("cannot decode " + path.string());
  RgbaImage img(w, h);
  std::memcpy(img.pixels.data(), data, static_cast<size_t>(w) * h * 4);
  stbi_image_free(data);
  return img;
}

inline nlohmann::json load_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

struct Shot {
  RgbaImage image;
  nlohmann::json layout;
};

// Runs the viewer on the synthetic heatmaps and returns its screenshot and layout.
inline Shot screenshot(const TempDir& dir, const std::string& name, uint64_t seed, const std::string& size,
                std::vector<std::string> extra = {}) {
  const auto png = dir.path() / (name + ".png"), json = dir.path() / (name + ".json");
  std::vector<std::string> args = {"--screenshot", png.string(), "--layout-json", json.string(), "--size", "1400x860",
                                   "--synthetic-seed", std::to_string(seed), "--synthetic", size};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult r = run_gui(args);
  if (r.exit_code != 0) throw std::runtime_error("tilescope-gui failed (" + std::to_string(r.exit_code) + "): " + r.output);
  return {load_png(png), load_json(json)};
}

// Runs the viewer with `args` (a run to open, --select, --panel...) in screenshot mode, its
// recent-files list kept in `dir`, and returns its screenshot and layout. `exit_code`: what the
// run must exit with (2 when the run it was given cannot be opened).
inline Shot run_screenshot(const TempDir& dir, const std::string& name, std::vector<std::string> args,
                           const std::string& size = "1600x1000", int exit_code = 0) {
  const auto png = dir.path() / (name + ".png"), json = dir.path() / (name + ".json");
  std::vector<std::string> all = {"--screenshot", png.string(), "--layout-json", json.string(), "--size", size,
                                  "--recent-store", (dir.path() / "recent.json").string()};
  all.insert(all.end(), args.begin(), args.end());
  const ProcessResult r = run_gui(all);
  if (r.exit_code != exit_code)
    throw std::runtime_error("tilescope-gui exited " + std::to_string(r.exit_code) + " (expected " +
                             std::to_string(exit_code) + "): " + r.output);
  return {load_png(png), load_json(json)};
}

inline const nlohmann::json& view_named(const nlohmann::json& layout, const std::string& name) {
  for (const auto& v : layout["views"])
    if (v["name"] == name) return v;
  throw std::runtime_error("no view named " + name);
}

}  // namespace ts::test
