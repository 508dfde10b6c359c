#include "app/gui/heatmap_view_layout.h"

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"

namespace ts {

void write_layout_json(const std::filesystem::path& path, const std::vector<HeatmapViewLayout>& views,
                       float framebuffer_scale_x, float framebuffer_scale_y, const std::vector<LayoutMark>& marks,
                       const nlohmann::json& extra) {
  nlohmann::json j = extra.is_object() ? extra : nlohmann::json::object();
  j["framebuffer_scale"] = {framebuffer_scale_x, framebuffer_scale_y};
  j["views"] = nlohmann::json::array();
  for (const HeatmapViewLayout& v : views) {
    j["views"].push_back({
        {"name", v.name},
        {"image_min", {v.image_min_x, v.image_min_y}},
        {"image_max", {v.image_max_x, v.image_max_y}},
        {"origin", {v.origin_x, v.origin_y}},
        {"px_per_cell", {v.px_per_col, v.px_per_row}},
        {"rows", v.rows},
        {"cols", v.cols},
        {"tiles", v.tiles},
        {"tile_side", v.tile_side},
        {"colormap", std::string(colormap_name(v.colormap))},
        {"scale",
         {{"min", v.scale.min},
          {"max", v.scale.max},
          {"log", v.scale.log},
          {"log_floor", v.scale.log_floor},
          {"symmetric", v.scale.symmetric},
          {"split", v.scale.split},
          {"split_at", v.scale.split_at}}},
        {"picked", v.picked ? nlohmann::json::array({v.picked->row, v.picked->col}) : nlohmann::json(nullptr)},
    });
    nlohmann::json labels = nlohmann::json::array();
    for (const HeatmapViewLayout::RowLabel& l : v.row_labels)
      labels.push_back({{"row", l.row}, {"text", l.text}, {"min", {l.min_x, l.min_y}}, {"max", {l.max_x, l.max_y}}});
    j["views"].back()["row_labels"] = labels;
  }
  j["marks"] = nlohmann::json::array();
  for (const LayoutMark& m : marks)
    j["marks"].push_back({{"name", m.name},
                          {"view", m.view},
                          {"min", {m.min_x, m.min_y}},
                          {"max", {m.max_x, m.max_y}},
                          {"rows", {m.row0, m.row1}},
                          {"cols", {m.col0, m.col1}}});
  const std::string text = j.dump(2) + "\n";
  AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace ts
