#include "tests/support/temp_dir.h"

#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

namespace ts::test {

TempDir::TempDir() {
  // The test's name says whose folder a leftover is; the pid and a random part keep two
  // programs, or two folders of one test, apart.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "t";
  for (char& c : name)
    if (c == '/') c = '_';
  path_ = std::filesystem::temp_directory_path() /
          ("tilescope-test-" + std::to_string(::getpid()) + "-" + name + "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace ts::test
