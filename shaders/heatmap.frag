#version 330 core
// Heatmap fragment shader: value -> colour exactly as the CPU's ColorMapper does it
// (app/model/color_scale.cpp), so that screen, PNG export and map_value() agree.
//  - The cell's class (finite, NaN, +Inf, -Inf, and the absent cells: masked, never written, not
//    traced, pending) was decided on the CPU and comes with the value: GLSL's isnan/isinf are
//    not reliable on every driver, and an absent cell is not a property of its value.
//  - Finite values go through the same float arithmetic as ColorMapper::lut_index and pick an
//    entry of the same 256-entry table, uploaded as a texture and fetched without filtering.
//  - The renderer compiles one variant per scale kind and pooling (the TS_* macros it defines
//    after the #version line), so a pixel runs no branch on a uniform: the software
//    rasteriser under Xvfb would otherwise pay for both sides.
#ifndef TS_LOG
#define TS_LOG 0         // log2 of |x| (ScaleMapping::log)
#endif
#ifndef TS_SIGNED_LOG
#define TS_SIGNED_LOG 0  // sign(x) * log2(|x| / floor) (ScaleMapping::signed_log)
#endif
#ifndef TS_POOLING
#define TS_POOLING 0     // several cells per pixel: look for NaN / Inf in the pooled texture
#endif
#ifndef TS_SPLIT
#define TS_SPLIT 0       // two halves of the colormap either side of a threshold (ScaleMapping::split)
#endif

uniform sampler2D u_cells;     // RG32F, one texel per cell: (value, class); non-finite values hold 0
uniform sampler2D u_colormap;  // 256 x 1 RGBA8: colormap_table()
uniform vec4 u_special[8];     // special_color() of each class 1..7 (entry 0 unused)

// ScaleMapping (app/model/colormap.h)
uniform float u_floor;
uniform float u_log2_floor;
uniform float u_lo;
uniform float u_gain;
uniform float u_bias;
#if TS_SPLIT
uniform float u_split_at;
uniform float u_split_u;
uniform float u_gain_high;
#endif

#if TS_POOLING
// Zoomed out, NaN and Inf must not vanish between the sampled cells: u_pooled holds the tile's
// NaN/Inf severity (3 NaN, 2 +Inf, 1 -Inf) max-pooled over blocks of u_block cells; a pixel
// takes the special colour of the worst block its footprint touches.
uniform usampler2D u_pooled;
uniform vec2 u_block;           // cells per pooled texel (2^kx, 2^ky)
uniform vec2 u_half_footprint;  // how far (in cells) a pixel looks for them, per axis
#endif

in vec2 v_cell;
out vec4 frag_color;

void main() {
#if TS_POOLING
  ivec2 last = textureSize(u_pooled, 0) - ivec2(1);
  ivec2 a = clamp(ivec2(floor((v_cell - u_half_footprint) / u_block)), ivec2(0), last);
  ivec2 b = clamp(ivec2(floor((v_cell + u_half_footprint) / u_block)), ivec2(0), last);
  uint worst = max(max(texelFetch(u_pooled, a, 0).r, texelFetch(u_pooled, ivec2(b.x, a.y), 0).r),
                   max(texelFetch(u_pooled, ivec2(a.x, b.y), 0).r, texelFetch(u_pooled, b, 0).r));
  if (worst != 0u) {
    frag_color = u_special[worst == 3u ? 1 : (worst == 2u ? 2 : 3)];
    return;
  }
#endif
  ivec2 cell = clamp(ivec2(floor(v_cell)), ivec2(0), textureSize(u_cells, 0) - ivec2(1));
  vec2 value_class = texelFetch(u_cells, cell, 0).rg;
  int cell_class = int(value_class.y + 0.5);
  if (cell_class != 0) {
    frag_color = u_special[min(cell_class, 7)];
    return;
  }
  float x = value_class.x;
#if TS_SIGNED_LOG
  float u = sign(x) * (log2(max(abs(x), u_floor)) - u_log2_floor);
#elif TS_LOG
  float u = log2(max(abs(x), u_floor));
#else
  float u = x;
#endif
#if TS_SPLIT
  // The half is decided by the value itself (as ColorMapper::lut_index does).
  int index;
  if (x <= u_split_at) {
    index = min(int(0.5 * clamp((u - u_lo) * u_gain, 0.0, 1.0) * 256.0), 127);
  } else {
    index = clamp(int((0.5 + 0.5 * clamp((u - u_split_u) * u_gain_high, 0.0, 1.0)) * 256.0), 128, 255);
  }
#else
  float t = clamp((u - u_lo) * u_gain + u_bias, 0.0, 1.0);
  int index = min(int(t * 256.0), 255);
#endif
  frag_color = texelFetch(u_colormap, ivec2(index, 0), 0);
}
