#include "base/kernel_list.h"

#include <algorithm>

#include "base/list_text.h"

namespace ts {
namespace {

constexpr std::span<const KernelBuild> kBuilds = kKernelBuilds;

struct KernelReasons {
  KernelKind kernel;
  std::string_view why_no_other_dtypes;
  std::string_view why_no_other_head_dims;
};
#define TS_KERNEL_REASONS(kernel, dtypes_why, head_dims_why) KernelReasons{KernelKind::kernel, dtypes_why, head_dims_why},
constexpr KernelReasons kReasons[] = {TS_KERNEL_KINDS(TS_KERNEL_REASONS)};
#undef TS_KERNEL_REASONS

template <typename T>
void add_once(std::vector<T>& values, T value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

const KernelReasons* reasons_of(KernelKind kernel) {
  for (const KernelReasons& r : kReasons)
    if (r.kernel == kernel) return &r;
  return nullptr;
}

// The names of `values`, for spoken_list.
template <typename T, typename Name>
std::vector<std::string> names(const std::vector<T>& values, Name name) {
  std::vector<std::string> out;
  for (const T& v : values) out.push_back(name(v));
  return out;
}

// "a/b/c"
template <typename T, typename Name>
std::string slashed_list(const std::vector<T>& values, Name name) {
  std::string out;
  for (const T& v : values) out += (out.empty() ? "" : "/") + std::string(name(v));
  return out;
}

std::string dim_name(int d) { return std::to_string(d); }
std::string dtype_name(DType d) { return std::string(to_string(d)); }
std::string kernel_name(KernelKind k) { return std::string(to_string(k)); }

// "the fa2 kernel is built for dtype fp16 and bf16 only (got fp32): <why>; fa1 and splitk run
// fp32", where `others` are the kernels built for the value asked for.
std::string refusal(KernelKind kernel, const std::string& what, const std::string& built, const std::string& got,
                    std::string_view why, const std::vector<KernelKind>& others) {
  std::string out = "the " + kernel_name(kernel) + " kernel is built for " + what + " " + built + " only (got " + got + ")";
  if (!why.empty()) out += ": " + std::string(why);
  if (!others.empty()) out += "; " + spoken_list(names(others, kernel_name), "and") + (others.size() == 1 ? " runs " : " run ") + got;
  return out;
}

template <typename T>
bool contains(const std::vector<T>& values, const T& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

std::span<const KernelBuild> kernel_builds() { return kBuilds; }

bool is_built(KernelKind kernel, DType dtype, int64_t head_dim) {
  return std::any_of(kBuilds.begin(), kBuilds.end(), [&](const KernelBuild& b) {
    return b.kernel == kernel && b.dtype == dtype && b.head_dim == head_dim;
  });
}

std::vector<KernelKind> built_kernels() {
  std::vector<KernelKind> out;
  for (const KernelBuild& b : kBuilds) add_once(out, b.kernel);
  return out;
}

std::vector<DType> built_dtypes(KernelKind kernel) {
  std::vector<DType> out;
  for (const KernelBuild& b : kBuilds)
    if (b.kernel == kernel) add_once(out, b.dtype);
  return out;
}

std::vector<int> built_head_dims(KernelKind kernel) {
  std::vector<int> out;
  for (const KernelBuild& b : kBuilds)
    if (b.kernel == kernel) add_once(out, b.head_dim);
  return out;
}

std::vector<DType> built_dtypes() {
  std::vector<DType> out;
  for (DType d : kAllDTypes)
    for (const KernelBuild& b : kBuilds)
      if (b.dtype == d) {
        out.push_back(d);
        break;
      }
  return out;
}

std::vector<int> built_head_dims() {
  std::vector<int> out;
  for (const KernelBuild& b : kBuilds) add_once(out, b.head_dim);
  std::sort(out.begin(), out.end());
  return out;
}

std::string_view why_no_other_dtypes(KernelKind kernel) {
  const KernelReasons* r = reasons_of(kernel);
  return r ? r->why_no_other_dtypes : std::string_view();
}

std::string_view why_no_other_head_dims(KernelKind kernel) {
  const KernelReasons* r = reasons_of(kernel);
  return r ? r->why_no_other_head_dims : std::string_view();
}

std::string built_for_text(KernelKind kernel) {
  return slashed_list(built_dtypes(kernel), dtype_name) + ", head dim " +
         slashed_list(built_head_dims(kernel), dim_name);
}

std::string kernel_choice_label(KernelKind kernel) {
  return kernel_name(kernel) + " (" + std::string(kernel_description(kernel)) + "; " + built_for_text(kernel) + ")";
}

void validate_kernel_build(KernelKind kernel, DType dtype, int64_t head_dim) {
  const std::vector<int> any_dims = built_head_dims();
  if (!contains(any_dims, static_cast<int>(head_dim)) || head_dim != static_cast<int>(head_dim))
    throw ConfigError("head_dim", "head_dim must be one of " + spoken_list(names(any_dims, dim_name), "or") + " (got " +
                                      std::to_string(head_dim) + ")");
  const int dim = static_cast<int>(head_dim);
  std::vector<KernelKind> others;
  const std::vector<DType> dtypes = built_dtypes(kernel);
  if (!contains(dtypes, dtype)) {
    for (KernelKind k : built_kernels())
      if (contains(built_dtypes(k), dtype)) others.push_back(k);
    throw ConfigError("dtype", refusal(kernel, "dtype", spoken_list(names(dtypes, dtype_name), "and"), dtype_name(dtype),
                                       why_no_other_dtypes(kernel), others));
  }
  const std::vector<int> dims = built_head_dims(kernel);
  if (!contains(dims, dim)) {
    for (KernelKind k : built_kernels())
      if (contains(built_head_dims(k), dim)) others.push_back(k);
    throw ConfigError("head_dim", refusal(kernel, "head_dim", spoken_list(names(dims, dim_name), "and"), std::to_string(dim),
                                          why_no_other_head_dims(kernel), others));
  }
}

}  // namespace ts
