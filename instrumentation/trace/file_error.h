// The errors of the file layer (safetensors, traces, .npy, tensor files). Every one names the
// file and what is wrong with it; the CLI turns them into exit code 2 and the GUI into an
// error panel. All derive from std::runtime_error through FileError.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace ts {

class FileError : public std::runtime_error {
 public:
  FileError(const std::filesystem::path& path, const std::string& message)
      : std::runtime_error(message), path_(path) {}
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The file cannot be opened or read (missing, not a regular file, permissions, changed while it
// was read...).
class FileReadError : public FileError {
  using FileError::FileError;
};

// The file cannot be created, written or renamed into place; nothing was left behind.
class FileWriteError : public FileError {
  using FileError::FileError;
};

// A write stopped by a cancel request (Ctrl-C, SIGTERM, SIGHUP; atomic_file.h): nothing was
// left behind, and whatever was at the destination is untouched.
class WriteCancelled : public FileWriteError {
  using FileWriteError::FileWriteError;
};

// A safetensors file or a tilescope trace whose content is invalid (hostile or damaged).
class TraceFormatError : public FileError {
  using FileError::FileError;
};

// A .npy file whose content is invalid or unsupported (big-endian, Fortran order...).
class NpyFormatError : public FileError {
  using FileError::FileError;
};

// A tensor file that is valid but cannot be used as asked (wrong dtype, missing name...).
class TensorFileError : public FileError {
  using FileError::FileError;
};

}  // namespace ts
