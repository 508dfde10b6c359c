// PNG files: encoded with stb_image_write (Debian's libstb) and written atomically, so a
// reader sees the whole image or no file at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "app/model/rgba_image.h"

namespace ts {

// The PNG could not be encoded or written; nothing was left at the destination.
class PngWriteError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<uint8_t> encode_png(const RgbaImage& image);

// Writes to a temporary file beside `path`, then renames it over `path`. Throws PngWriteError
// naming the path and the reason (missing folder, permission, disk full); the temporary file
// is removed on every failure.
void write_png_file(const std::filesystem::path& path, const RgbaImage& image);

}  // namespace ts
