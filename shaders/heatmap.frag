#version 330 core
// Heatmap fragment shader: value -> colour exactly as the CPU's ColorMapper does it
// (app/model/color_scale.cpp), so that screen, PNG export and map_value() agree.
//  - The cell's class (finite, NaN, +Inf, -Inf, masked) was decided on the CPU and comes in
//    an integer texture: GLSL's isnan/isinf are not reliable on every driver, and a masked
//    cell is not a property of its value.
//  - Finite values go through the same float arithmetic as ColorMapper::lut_index and pick an
//    entry of the same 256-entry table, uploaded as a texture and fetched without filtering.

uniform sampler2D u_values;    // R32F, one texel per cell; non-finite cells hold 0
uniform usampler2D u_classes;  // R8UI: 0 finite, 1 NaN, 2 +Inf, 3 -Inf, 4 masked
uniform sampler2D u_colormap;  // 256 x 1 RGBA8: colormap_table()
uniform vec4 u_special[5];     // special_color() of each class (entry 0 unused)

// Zoomed out (several cells per pixel), NaN and Inf must not vanish between the sampled cells:
// u_pooled holds the tile's NaN/Inf severity (3 NaN, 2 +Inf, 1 -Inf) max-pooled over blocks of
// u_block cells; a pixel takes the special colour of the worst block its footprint touches.
uniform bool u_pooling;
uniform usampler2D u_pooled;
uniform vec2 u_block;           // cells per pooled texel (2^kx, 2^ky)
uniform vec2 u_half_footprint;  // half the cells one pixel spans, per axis

// ScaleMapping (app/model/colormap.h)
uniform bool u_log;
uniform bool u_signed_log;
uniform float u_floor;
uniform float u_log2_floor;
uniform float u_lo;
uniform float u_gain;
uniform float u_bias;

in vec2 v_cell;
out vec4 frag_color;

void main() {
  if (u_pooling) {
    ivec2 last = textureSize(u_pooled, 0) - ivec2(1);
    ivec2 a = clamp(ivec2(floor((v_cell - u_half_footprint) / u_block)), ivec2(0), last);
    ivec2 b = clamp(ivec2(floor((v_cell + u_half_footprint) / u_block)), ivec2(0), last);
    uint worst = max(max(texelFetch(u_pooled, a, 0).r, texelFetch(u_pooled, ivec2(b.x, a.y), 0).r),
                     max(texelFetch(u_pooled, ivec2(a.x, b.y), 0).r, texelFetch(u_pooled, b, 0).r));
    if (worst != 0u) {
      frag_color = u_special[worst == 3u ? 1 : (worst == 2u ? 2 : 3)];
      return;
    }
  }
  ivec2 size = textureSize(u_values, 0);
  ivec2 cell = clamp(ivec2(floor(v_cell)), ivec2(0), size - ivec2(1));
  uint cell_class = texelFetch(u_classes, cell, 0).r;
  if (cell_class != 0u) {
    frag_color = u_special[min(int(cell_class), 4)];
    return;
  }
  float x = texelFetch(u_values, cell, 0).r;
  float u = x;
  if (u_log) {
    float l2 = log2(max(abs(x), u_floor));
    u = u_signed_log ? sign(x) * (l2 - u_log2_floor) : l2;
  }
  float t = clamp((u - u_lo) * u_gain + u_bias, 0.0, 1.0);
  int index = min(int(t * 256.0), 255);
  frag_color = texelFetch(u_colormap, ivec2(index, 0), 0);
}
