// The viewer's window: GLFW, an OpenGL 3.3 core context (glad), and Dear ImGui with its GLFW
// and OpenGL 3 backends. One per process.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <imgui.h>

struct GLFWwindow;

namespace ts {

// There is no display to open a window on (no $DISPLAY / $WAYLAND_DISPLAY, or the X server
// cannot be reached). The message says what to do instead.
class NoDisplayError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class GuiWindow {
 public:
  // Throws NoDisplayError, or GlError when no OpenGL 3.3 core context can be created.
  GuiWindow(const char* title, int width, int height, bool vsync);
  ~GuiWindow();
  GuiWindow(const GuiWindow&) = delete;
  GuiWindow& operator=(const GuiWindow&) = delete;

  bool should_close() const;
  void request_close();
  // After a few frames without input, sleeps until the next event (or half a second): an idle
  // viewer costs no CPU, which matters when the rasteriser is the CPU (a laptop without GPU
  // drivers). Interactive runs call it before each frame.
  void wait_if_idle();
  // Takes the events and starts an ImGui frame; `override_input` (if any) runs after the GLFW
  // backend has read the devices and before ImGui::NewFrame (scripted input).
  void begin_frame(const std::function<void()>& override_input = {});
  // Keeps frames coming while something changes without input (a progress bar, playback).
  void request_redraw() { quiet_frames_ = 0; }
  void end_frame(ImVec4 clear_color);  // render ImGui into the back buffer (not shown yet)
  void swap();                         // show it

  // Paths dropped on the window since the last call (GLFW's drop callback), oldest first.
  std::vector<std::string> take_dropped_paths();
  void set_title(const std::string& title);

  int framebuffer_width() const;
  int framebuffer_height() const;
  const std::string& gl_renderer() const { return renderer_; }
  int max_texture_size() const { return max_texture_size_; }

 private:
  void shutdown();

  GLFWwindow* window_ = nullptr;
  bool imgui_glfw_ = false, imgui_gl_ = false;
  std::string renderer_;
  int max_texture_size_ = 0;
  int quiet_frames_ = 0;  // frames since the last input event
  std::vector<std::string> dropped_;
};

}  // namespace ts
