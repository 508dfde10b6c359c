#version 330 core
// Heatmap vertex shader: one quad per visible texture tile. Positions are in Dear ImGui's
// screen pixels (u_projection is ImGui's own orthographic projection); a_cell is the cell
// coordinate (column, row) local to the tile, so that the fragment shader can fetch the
// cell under each pixel exactly (nearest neighbour, no filtering).
layout(location = 0) in vec2 a_position;
layout(location = 1) in vec2 a_cell;

uniform mat4 u_projection;

out vec2 v_cell;

void main() {
  v_cell = a_cell;
  gl_Position = u_projection * vec4(a_position, 0.0, 1.0);
}
