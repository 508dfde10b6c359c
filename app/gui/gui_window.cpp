#include "app/gui/gui_window.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "app/gui/gl_api.h"  // before GLFW, which is built with GLFW_INCLUDE_NONE
#include "app/gui/theme.h"

#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

namespace ts {
namespace {

std::string g_last_glfw_error;

void on_glfw_error(int code, const char* description) {
  g_last_glfw_error = std::string(description ? description : "unknown") + " (GLFW error " + std::to_string(code) + ")";
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

void active(GLFWwindow* w) { static_cast<GuiWindow*>(glfwGetWindowUserPointer(w))->request_redraw(); }

constexpr const char* kNoDisplayHint = "run under xvfb-run, or use the tilescope CLI";

}  // namespace

GuiWindow::GuiWindow(const char* title, int width, int height, bool vsync) {
  glfwSetErrorCallback(on_glfw_error);
  if (!env_set("DISPLAY") && !env_set("WAYLAND_DISPLAY"))
    throw NoDisplayError(std::string("no display: ") + kNoDisplayHint);
  if (!glfwInit()) throw NoDisplayError("no display: " + g_last_glfw_error + "; " + kNoDisplayHint);

  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SRGB_CAPABLE, GLFW_FALSE);  // colours go to the screen as the tables hold them
  window_ = glfwCreateWindow(width, height, title, nullptr, nullptr);
  if (!window_) {
    const std::string why = g_last_glfw_error;
    glfwTerminate();
    throw GlError("cannot create a window with an OpenGL 3.3 core context: " + why +
                  " (the viewer needs OpenGL 3.3; update the graphics driver, or use the tilescope CLI)");
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(vsync ? 1 : 0);
  if (!gladLoadGL(glfwGetProcAddress)) {
    glfwDestroyWindow(window_);
    glfwTerminate();
    throw GlError("cannot load the OpenGL 3.3 functions of this driver");
  }
  renderer_ = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_texture_size_);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is fixed; write nothing into the cwd
  apply_dark_theme();
  load_fonts(15.0f);
  // Any input resets the idle count; installed first, ImGui's callbacks call these in turn.
  glfwSetWindowUserPointer(window_, this);
  glfwSetCursorPosCallback(window_, [](GLFWwindow* w, double, double) { active(w); });
  glfwSetMouseButtonCallback(window_, [](GLFWwindow* w, int, int, int) { active(w); });
  glfwSetScrollCallback(window_, [](GLFWwindow* w, double, double) { active(w); });
  glfwSetKeyCallback(window_, [](GLFWwindow* w, int, int, int, int) { active(w); });
  glfwSetCharCallback(window_, [](GLFWwindow* w, unsigned int) { active(w); });
  glfwSetWindowFocusCallback(window_, [](GLFWwindow* w, int) { active(w); });
  glfwSetCursorEnterCallback(window_, [](GLFWwindow* w, int) { active(w); });
  glfwSetFramebufferSizeCallback(window_, [](GLFWwindow* w, int, int) { active(w); });
  glfwSetWindowRefreshCallback(window_, [](GLFWwindow* w) { active(w); });
  glfwSetDropCallback(window_, [](GLFWwindow* w, int count, const char** paths) {
    auto* self = static_cast<GuiWindow*>(glfwGetWindowUserPointer(w));
    for (int i = 0; i < count; ++i)
      if (paths[i]) self->dropped_.emplace_back(paths[i]);
    self->request_redraw();
  });
  imgui_glfw_ = ImGui_ImplGlfw_InitForOpenGL(window_, true);
  imgui_gl_ = ImGui_ImplOpenGL3_Init("#version 330 core");
  if (!imgui_glfw_ || !imgui_gl_) {
    shutdown();
    throw GlError("cannot start Dear ImGui's GLFW / OpenGL 3 backends");
  }
}

GuiWindow::~GuiWindow() { shutdown(); }

void GuiWindow::shutdown() {
  if (!window_) return;
  if (imgui_gl_) ImGui_ImplOpenGL3_Shutdown();
  if (imgui_glfw_) ImGui_ImplGlfw_Shutdown();
  if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
  window_ = nullptr;
}

bool GuiWindow::should_close() const { return glfwWindowShouldClose(window_); }
void GuiWindow::request_close() { glfwSetWindowShouldClose(window_, GLFW_TRUE); }

void GuiWindow::wait_if_idle() {
  // ImGui needs a few frames after an event to settle (hover, release, animations of its own).
  constexpr int kSettleFrames = 4;
  if (++quiet_frames_ > kSettleFrames) glfwWaitEventsTimeout(0.5);
}

void GuiWindow::begin_frame(const std::function<void()>& override_input) {
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (override_input) override_input();
  ImGui::NewFrame();
}

void GuiWindow::end_frame(ImVec4 clear) {
  ImGui::Render();
  glViewport(0, 0, framebuffer_width(), framebuffer_height());
  glClearColor(clear.x, clear.y, clear.z, clear.w);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void GuiWindow::swap() { glfwSwapBuffers(window_); }

std::vector<std::string> GuiWindow::take_dropped_paths() { return std::exchange(dropped_, {}); }

void GuiWindow::set_title(const std::string& title) { glfwSetWindowTitle(window_, title.c_str()); }

int GuiWindow::framebuffer_width() const {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  return w;
}

int GuiWindow::framebuffer_height() const {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  return h;
}

}  // namespace ts
