// PNG files: encoded with stb_image_write (Debian's libstb) and written atomically (through
// the file layer's AtomicFileWriter), so a reader sees the whole image or no file at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "app/model/rgba_image.h"

namespace ts {

// The image cannot be encoded as PNG (empty, inconsistent, or too large).
class PngWriteError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<uint8_t> encode_png(const RgbaImage& image);

// Writes to a temporary file beside `path`, then renames it over `path`. Throws FileWriteError
// (instrumentation/trace/file_error.h, a std::runtime_error) naming the path and the reason
// (missing folder, permission, disk full); nothing is left behind on failure.
void write_png_file(const std::filesystem::path& path, const RgbaImage& image);

}  // namespace ts
