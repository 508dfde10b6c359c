#include "app/model/png_file.h"

#include <string>

#include <stb_image_write.h>

#include "instrumentation/trace/atomic_file.h"

namespace ts {
namespace {

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* bytes = static_cast<const uint8_t*>(data);
  out->insert(out->end(), bytes, bytes + size);
}

}  // namespace

std::vector<uint8_t> encode_png(const RgbaImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height))
    throw PngWriteError("cannot encode an empty or inconsistent image as PNG (" + std::to_string(image.width) +
                        " x " + std::to_string(image.height) + ")");
  std::vector<uint8_t> bytes;
  static_assert(sizeof(Rgba8) == 4, "pixels must be tightly packed RGBA");
  const int ok = stbi_write_png_to_func(append_bytes, &bytes, image.width, image.height, 4, image.pixels.data(),
                                        image.width * 4);
  if (!ok || bytes.empty()) throw PngWriteError("the PNG encoder failed (image too large?)");
  return bytes;
}

void write_png_file(const std::filesystem::path& path, const RgbaImage& image) {
  const std::vector<uint8_t> bytes = encode_png(image);
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace ts
