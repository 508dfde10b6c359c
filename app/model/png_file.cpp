#include "app/model/png_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <stb_image_write.h>

namespace ts {
namespace {

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* bytes = static_cast<const uint8_t*>(data);
  out->insert(out->end(), bytes, bytes + size);
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int err) {
  std::string message = "cannot write PNG '" + path.string() + "': " + what;
  if (err != 0) message += ": " + std::string(std::strerror(err));
  message += " (check that the folder exists and is writable, and the disk has room)";
  throw PngWriteError(message);
}

// Removes the temporary file unless the rename happened.
struct TempFile {
  std::filesystem::path path;
  int fd = -1;
  bool keep = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(path.c_str());
  }
};

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

  static std::atomic<unsigned> counter{0};
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (path.filename().empty()) fail(path, "the path names a folder, not a file", 0);
  TempFile temp;
  temp.path = folder / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                        std::to_string(counter.fetch_add(1)));
  temp.fd = ::open(temp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (temp.fd < 0) {
    temp.keep = true;  // nothing was created
    fail(path, "cannot create a file in '" + folder.string() + "'", errno);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(temp.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, "write failed", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  if (::fsync(temp.fd) != 0) fail(path, "flush to disk failed", errno);
  const int fd = temp.fd;
  temp.fd = -1;
  if (::close(fd) != 0) fail(path, "close failed", errno);
  if (::rename(temp.path.c_str(), path.c_str()) != 0) fail(path, "rename into place failed", errno);
  temp.keep = true;
}

}  // namespace ts
