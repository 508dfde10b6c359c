#include "app/cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ts::cli {
namespace {

constexpr auto kQuietStart = std::chrono::milliseconds(500);
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
constexpr int kBarWidth = 30;

std::string bytes_count_text(uint64_t n) {
  char buf[32];
  const double b = static_cast<double>(n);
  if (n < (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024.0);
  else if (n < (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

std::string count_text(uint64_t n) {
  char buf[32];
  if (n >= 10'000'000) std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000) std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(n) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

}  // namespace

// Test hook: TILESCOPE_TEST_PROGRESS_AT_ONCE=1 draws from the first update, so that a test's
// short run shows its bar.
ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()) {
  if (std::getenv("TILESCOPE_TEST_PROGRESS_AT_ONCE")) start_ -= kQuietStart;
}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (now - start_ < kQuietStart) return;
  if (drawn_ && now - last_draw_ < kRedrawEvery && done < total) return;
  last_draw_ = now;
  drawn_ = true;
  const double fraction = static_cast<double>(done > total ? total : done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '-');
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const bool bytes = unit_ == "bytes";
  const std::string counts = bytes ? bytes_count_text(done) + "/" + bytes_count_text(total)
                                   : count_text(done) + "/" + count_text(total) + " " + unit_;
  const std::string label = phase_.empty() ? label_ : label_ + ": " + phase_;
  // \033[K clears what a longer line of an earlier phase left.
  std::fprintf(stderr, "\r%s [%s] %3d%%  %s  %.1f s \033[K", label.c_str(), bar.c_str(),
               static_cast<int>(fraction * 100.0), counts.c_str(), seconds);
  std::fflush(stderr);
}

void ProgressBar::set_phase(std::string phase, std::string unit) {
  std::lock_guard lock(mutex_);
  phase_ = std::move(phase);
  unit_ = std::move(unit);
  last_draw_ = {};  // the new phase is drawn at its first update
}

void ProgressBar::finish() {
  std::lock_guard lock(mutex_);
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace ts::cli
