#include "app/gui/heatmap_view.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"
#include "app/model/axis_ticks.h"

namespace ts {
namespace {

constexpr float kTickLen = 4.0f;

}  // namespace

void add_text_vertical(ImDrawList* dl, ImVec2 bottom_left, ImU32 color, const char* text) {
  // Draw normally with the top-left at bottom_left, then turn the new vertices about that
  // point: (x, y) -> (y, -x) relative to it.
  const int first = dl->VtxBuffer.Size;
  dl->AddText(bottom_left, color, text);
  for (int i = first; i < dl->VtxBuffer.Size; ++i) {
    ImDrawVert& v = dl->VtxBuffer[i];
    const float dx = v.pos.x - bottom_left.x, dy = v.pos.y - bottom_left.y;
    v.pos = ImVec2(bottom_left.x + dy, bottom_left.y - dx);
  }
}

namespace {

std::optional<int64_t> axis_number(const std::optional<std::vector<int64_t>>& values, int64_t first, int64_t i) {
  if (!values) return first + i;
  if (i < 0 || i >= static_cast<int64_t>(values->size())) return std::nullopt;
  return (*values)[static_cast<size_t>(i)];
}

// The widest number an axis draws (for its margin).
std::string widest_number(const std::optional<std::vector<int64_t>>& values, int64_t first, int64_t n);

// The widest row label (for the left margin): the widest name, else the widest number.
std::string widest_row_text(const HeatmapAxes& axes, int64_t rows) {
  if (!axes.row_names) return widest_number(axes.row_values, axes.first_row, rows);
  std::string widest;
  for (const std::string& n : *axes.row_names)
    if (ImGui::CalcTextSize(n.c_str()).x > ImGui::CalcTextSize(widest.c_str()).x) widest = n;
  return widest;
}

std::string widest_number(const std::optional<std::vector<int64_t>>& values, int64_t first, int64_t n) {
  if (!values) return std::to_string(first + std::max<int64_t>(n - 1, 0));
  std::string widest;
  for (int64_t v : *values)
    if (std::to_string(v).size() > widest.size()) widest = std::to_string(v);
  return widest;
}

}  // namespace

std::optional<int64_t> HeatmapAxes::row_number(int64_t r) const { return axis_number(row_values, first_row, r); }
std::optional<std::string> HeatmapAxes::row_text(int64_t r) const {
  if (!row_names) {
    const std::optional<int64_t> n = row_number(r);
    return n ? std::optional<std::string>(std::to_string(*n)) : std::nullopt;
  }
  if (r < 0 || r >= static_cast<int64_t>(row_names->size())) return std::nullopt;
  return (*row_names)[static_cast<size_t>(r)];
}
std::optional<int64_t> HeatmapAxes::col_number(int64_t c) const { return axis_number(col_values, first_col, c); }

void HeatmapView::set_data(std::shared_ptr<const FloatGrid> grid, int max_tile_side) {
  if (grid) grid->view().validate();
  grid_ = std::move(grid);
  stats_ = grid_ ? value_stats(grid_->values, grid_->mask) : ValueStats{};
  max_tile_side_ = max_tile_side;
  upload_pending_ = true;
}

void HeatmapView::draw(HeatmapRenderer& renderer, HeatmapNavigation& nav, const HeatmapDisplay& display,
                       ImVec2 size) {
  if (upload_pending_) {
    upload_pending_ = false;
    if (grid_) texture_.upload(grid_->view(), max_tile_side_);
    else texture_.clear();
  }
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const int64_t rows = grid_ ? grid_->rows : 0, cols = grid_ ? grid_->cols : 0;

  // Margins: title above; rotated row label and row numbers on the left; column numbers and
  // the column label below. Views of the same shape get the same image size.
  const std::string widest_row = widest_row_text(axes, rows);
  const float left = line + 6 + ImGui::CalcTextSize(widest_row.c_str()).x + 6 + kTickLen;
  const float top = line + 6;
  const float bottom = kTickLen + 2 + line + 2 + line + 2;
  const ImVec2 image_min(std::floor(p0.x + left), std::floor(p0.y + top));
  const ImVec2 image_max(std::floor(std::max(image_min.x + 16, p0.x + size.x - 4)),
                         std::floor(std::max(image_min.y + 16, p0.y + size.y - bottom)));
  const double w = image_max.x - image_min.x, h = image_max.y - image_min.y;

  // Title line: name on the left, the array's extent on the right.
  // The title stays within the view (a narrow view beside another must not write over it).
  const std::string& title = title_.empty() ? name_ : title_;
  dl->PushClipRect(p0, ImVec2(p0.x + size.x, p0.y + size.y), true);
  dl->AddText(p0, ImGui::GetColorU32(ImGuiCol_Text), title.c_str());
  dl->PopClipRect();
  if (grid_) {
    // Right-aligned over the image; what does not fit beside the name is left out (min and max
    // first, then the extent) rather than drawn over the next view.
    const std::string extent = std::to_string(rows) + " x " + std::to_string(cols);
    const std::string range = "   min " + format_short(stats_.min) + "   max " + format_short(stats_.max);
    const std::string brief = "  [" + format_short(stats_.min) + ", " + format_short(stats_.max) + "]";
    const float name_end = p0.x + ImGui::CalcTextSize(title.c_str()).x + 16;
    for (const std::string& info : {extent + range, extent + brief, extent}) {
      const float iw = ImGui::CalcTextSize(info.c_str()).x;
      if (image_max.x - iw < name_end) continue;
      dl->AddText(ImVec2(image_max.x - iw, p0.y), theme::kDimText, info.c_str());
      break;
    }
  }

  if (!grid_) dl->AddRectFilled(image_min, image_max, theme::kImageBackground);
  if (grid_) {
    nav.prepare(rows, cols, w, h);
    ImGui::SetCursorScreenPos(image_min);
    ImGui::InvisibleButton(("##image-" + name_).c_str(), ImVec2(static_cast<float>(w), static_cast<float>(h)),
                           ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight |
                               ImGuiButtonFlags_MouseButtonMiddle);
    handle_mouse(nav, image_min);

    const HeatmapCamera& cam = nav.camera;
    HeatmapPlacement where;
    where.clip_min = image_min;
    where.clip_max = image_max;
    where.origin_x = image_min.x + cam.view_x(0);
    where.origin_y = image_min.y + cam.view_y(0);
    where.px_per_col = cam.px_per_col;
    where.px_per_row = cam.px_per_row;
    renderer.add(dl, texture_, display.colormap, display.scale, where, cache_);  // background included

    draw_marks(dl, nav, image_min, image_max);
    std::vector<HeatmapViewLayout::RowLabel> row_labels = draw_axes(dl, nav, image_min, image_max);

    layout_ = {name_,          image_min.x,     image_min.y, image_max.x, image_max.y, where.origin_x,
               where.origin_y, cam.px_per_col,  cam.px_per_row, rows,      cols,        texture_.tiles().size(),
               texture_.tile_side(), display.colormap, display.scale, nav.picked, std::move(row_labels)};
  } else {
    const char* empty = "no data";
    const ImVec2 ts = ImGui::CalcTextSize(empty);
    dl->AddText(ImVec2((image_min.x + image_max.x - ts.x) / 2, (image_min.y + image_max.y - ts.y) / 2),
                theme::kDimText, empty);
  }
  dl->AddRect(ImVec2(image_min.x - 1, image_min.y - 1), ImVec2(image_max.x + 1, image_max.y + 1), theme::kFrame);

  ImGui::SetCursorScreenPos(p0);
  ImGui::Dummy(size);
}

void HeatmapView::handle_mouse(HeatmapNavigation& nav, ImVec2 image_min) {
  const ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m(io.MousePos.x - image_min.x, io.MousePos.y - image_min.y);
  if (ImGui::IsItemHovered()) {
    nav.hovered = nav.camera.cell_at(m.x, m.y, nav.rows, nav.cols);
    if (io.MouseWheel != 0) nav.zoom(io.MouseWheel, m.x, m.y);
    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) nav.request_fit();
  }
  if (ImGui::IsItemActive()) {
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
        ImGui::IsMouseDragging(ImGuiMouseButton_Middle)) {
      dragging_ = true;
      nav.pan(io.MouseDelta.x, io.MouseDelta.y);
    }
  }
  if (ImGui::IsItemDeactivated()) {
    if (!dragging_ && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) nav.pick(nav.camera.cell_at(m.x, m.y, nav.rows, nav.cols));
    dragging_ = false;
  }
}

void HeatmapView::draw_marks(ImDrawList* dl, const HeatmapNavigation& nav, ImVec2 image_min, ImVec2 image_max) const {
  const HeatmapCamera& cam = nav.camera;
  auto cell_rect = [&](CellIndex c) {
    return std::pair<ImVec2, ImVec2>{
        ImVec2(static_cast<float>(image_min.x + cam.view_x(static_cast<double>(c.col))),
               static_cast<float>(image_min.y + cam.view_y(static_cast<double>(c.row)))),
        ImVec2(static_cast<float>(image_min.x + cam.view_x(static_cast<double>(c.col + 1))),
               static_cast<float>(image_min.y + cam.view_y(static_cast<double>(c.row + 1))))};
  };
  const ImDrawListClipScope clip(dl, image_min, image_max);
  const std::optional<CellIndex> hover = nav.hovered ? nav.hovered : nav.hover_shown;
  if (hover && (!nav.picked || *hover != *nav.picked)) {
    const auto [a, b] = cell_rect(*hover);
    // Dark and light together: visible on every colormap, near-white diffs included.
    dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(0, 0, 0, 170));
    dl->AddRect(a, b, IM_COL32(255, 255, 255, 170));
  }
  if (nav.picked) {
    const auto [a, b] = cell_rect(*nav.picked);
    const float cx = std::floor((a.x + b.x) / 2) + 0.5f, cy = std::floor((a.y + b.y) / 2) + 0.5f;
    // Crosshair: finds the cell however small it is at this zoom.
    dl->AddLine(ImVec2(image_min.x, cy), ImVec2(a.x - 2, cy), IM_COL32(255, 255, 255, 70));
    dl->AddLine(ImVec2(b.x + 2, cy), ImVec2(image_max.x, cy), IM_COL32(255, 255, 255, 70));
    dl->AddLine(ImVec2(cx, image_min.y), ImVec2(cx, a.y - 2), IM_COL32(255, 255, 255, 70));
    dl->AddLine(ImVec2(cx, b.y + 2), ImVec2(cx, image_max.y), IM_COL32(255, 255, 255, 70));
    dl->AddRect(ImVec2(a.x - 2, a.y - 2), ImVec2(b.x + 2, b.y + 2), IM_COL32(0, 0, 0, 255), 0, 0, 1.0f);
    dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  }
}

std::vector<HeatmapViewLayout::RowLabel> HeatmapView::draw_axes(ImDrawList* dl, const HeatmapNavigation& nav,
                                                                ImVec2 image_min, ImVec2 image_max) const {
  std::vector<HeatmapViewLayout::RowLabel> row_labels;
  const HeatmapCamera& cam = nav.camera;
  const float line = ImGui::GetTextLineHeight();
  const double w = image_max.x - image_min.x, h = image_max.y - image_min.y;
  const auto visible = [](double a, double b, int64_t n) {
    return std::pair<int64_t, int64_t>{std::clamp<int64_t>(static_cast<int64_t>(std::floor(a)), 0, n),
                                       std::clamp<int64_t>(static_cast<int64_t>(std::ceil(b)), 0, n)};
  };
  // Row numbers, right-aligned left of the image, at cell centres.
  // Ticks on round numbers of the rows' own numbering; rows given numbers or names of their own
  // are ticked on round row indices and labelled with them.
  const int64_t row_base = axes.row_values || axes.row_names ? 0 : axes.first_row;
  const auto [r0, r1] = visible(cam.row_at(0), cam.row_at(h), nav.rows);
  for (int64_t t : axis_ticks(row_base + r0, row_base + r1, cam.px_per_row, line + 8)) {
    const std::optional<std::string> s = axes.row_text(t - row_base);
    if (!s) break;
    const float y = static_cast<float>(image_min.y + cam.view_y(static_cast<double>(t - row_base) + 0.5));
    if (y < image_min.y || y > image_max.y) continue;
    dl->AddLine(ImVec2(image_min.x - 1 - kTickLen, y), ImVec2(image_min.x - 1, y), theme::kTick);
    const float tw = ImGui::CalcTextSize(s->c_str()).x;
    const ImVec2 at(image_min.x - 3 - kTickLen - tw, y - line / 2);
    dl->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), s->c_str());
    row_labels.push_back({t - row_base, *s, at.x, at.y, at.x + tw, at.y + line});
  }
  // Column numbers, centred under the image.
  const int64_t col_base = axes.col_values ? 0 : axes.first_col;
  const auto [c0, c1] = visible(cam.col_at(0), cam.col_at(w), nav.cols);
  const std::string widest_col = widest_number(axes.col_values, axes.first_col, nav.cols);
  const float spacing = ImGui::CalcTextSize(widest_col.c_str()).x + 14;
  for (int64_t t : axis_ticks(col_base + c0, col_base + c1, cam.px_per_col, spacing)) {
    const std::optional<int64_t> number = axes.col_number(t - col_base);
    if (!number) break;
    const float x = static_cast<float>(image_min.x + cam.view_x(static_cast<double>(t - col_base) + 0.5));
    if (x < image_min.x || x > image_max.x) continue;
    dl->AddLine(ImVec2(x, image_max.y + 1), ImVec2(x, image_max.y + 1 + kTickLen), theme::kTick);
    const std::string s = std::to_string(*number);
    const float tw = ImGui::CalcTextSize(s.c_str()).x;
    dl->AddText(ImVec2(x - tw / 2, image_max.y + 2 + kTickLen), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
  }
  // Axis names.
  const float cw = ImGui::CalcTextSize(axes.col_label.c_str()).x;
  dl->AddText(ImVec2((image_min.x + image_max.x - cw) / 2, image_max.y + 4 + kTickLen + line), theme::kDimText,
              axes.col_label.c_str());
  const float rw = ImGui::CalcTextSize(axes.row_label.c_str()).x;
  const float left = image_min.x - 1 - kTickLen - 6 - ImGui::CalcTextSize(widest_row_text(axes, nav.rows).c_str()).x - 6 - line;
  add_text_vertical(dl, ImVec2(left, (image_min.y + image_max.y + rw) / 2), theme::kDimText, axes.row_label.c_str());
  return row_labels;
}

void handle_heatmap_keys(HeatmapNavigation& nav) {
  const ImGuiIO& io = ImGui::GetIO();
  // The current window or one of its children: panels that are child windows of one root
  // (overview, detail) each move only their own pick.
  if (io.WantTextInput || !ImGui::IsWindowFocused(ImGuiFocusedFlags_ChildWindows)) return;
  const int64_t step = io.KeyShift ? 8 : 1;
  auto pressed = [](ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key), true); };
  if (pressed(ImGuiKey_LeftArrow)) nav.move_pick(0, -step);
  if (pressed(ImGuiKey_RightArrow)) nav.move_pick(0, step);
  if (pressed(ImGuiKey_UpArrow)) nav.move_pick(-step, 0);
  if (pressed(ImGuiKey_DownArrow)) nav.move_pick(step, 0);
  if (ImGui::IsKeyPressed('F', false)) nav.request_fit();
}

}  // namespace ts
