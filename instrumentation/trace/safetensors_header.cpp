#include "instrumentation/trace/safetensors_header.h"

#include <algorithm>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

namespace ts {

namespace {

using json = nlohmann::json;

// A header entry as read, before its values are checked.
struct RawEntry {
  std::string name;
  std::optional<std::string> dtype;
  std::optional<std::vector<uint64_t>> shape;
  std::optional<std::vector<uint64_t>> offsets;
};

// A SAX handler that accepts only the safetensors header grammar. It never builds a JSON
// tree, so neither deep nesting nor huge arrays cost more than the grammar allows, and it
// sees duplicate keys (which a JSON object would silently merge).
class HeaderSax : public nlohmann::json_sax<json> {
 public:
  std::string error;  // the first problem found; parsing stops there
  std::vector<RawEntry> entries;
  std::map<std::string, std::string> metadata;

  bool null() override { return wrong_value("null"); }
  bool boolean(bool) override { return wrong_value("a boolean"); }
  bool binary(binary_t&) override { return wrong_value("binary data"); }
  bool number_float(number_float_t, const string_t&) override {
    return wrong_value("a non-integer number (or an integer too large)");
  }
  bool number_integer(number_integer_t v) override {
    if (ctx_ == Ctx::shape || ctx_ == Ctx::offsets)
      return fail(where() + " holds a negative number (" + std::to_string(v) + ")");
    return wrong_value("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (ctx_ == Ctx::shape) {
      if (entries.back().shape->size() >= kSafetensorsMaxRank)
        return fail(where() + " has more than " + std::to_string(kSafetensorsMaxRank) +
                    " dimensions");
      entries.back().shape->push_back(v);
      return true;
    }
    if (ctx_ == Ctx::offsets) {
      if (entries.back().offsets->size() >= 2)
        return fail(where() + " must be [begin, end] but holds more than 2 numbers");
      entries.back().offsets->push_back(v);
      return true;
    }
    return wrong_value("a number");
  }
  bool string(string_t& s) override {
    if (ctx_ == Ctx::metadata) {
      metadata.emplace(key_, std::move(s));
      return true;
    }
    if (ctx_ == Ctx::entry && field_ == "dtype") {
      entries.back().dtype = std::move(s);
      return true;
    }
    return wrong_value("a string");
  }
  bool start_object(std::size_t) override {
    switch (ctx_) {
      case Ctx::start: ctx_ = Ctx::root; return true;
      case Ctx::root:
        if (key_ == "__metadata__") {
          ctx_ = Ctx::metadata;
        } else {
          entries.push_back(RawEntry{key_, {}, {}, {}});
          entry_fields_.clear();
          ctx_ = Ctx::entry;
        }
        return true;
      default: return wrong_value("an object");
    }
  }
  bool key(string_t& k) override {
    switch (ctx_) {
      case Ctx::root:
        if (!root_keys_.insert(k).second)
          return fail(k == "__metadata__" ? std::string("\"__metadata__\" appears twice")
                                          : "tensor '" + k + "' appears twice");
        key_ = std::move(k);
        return true;
      case Ctx::metadata:
        if (metadata.count(k) != 0) return fail("metadata key '" + k + "' appears twice");
        key_ = std::move(k);
        return true;
      case Ctx::entry:
        if (k != "dtype" && k != "shape" && k != "data_offsets")
          return fail("tensor '" + key_ + "' has an unknown field '" + k +
                      "' (expected dtype, shape, data_offsets)");
        if (!entry_fields_.insert(k).second)
          return fail("tensor '" + key_ + "' has field '" + k + "' twice");
        field_ = std::move(k);
        return true;
      default: return fail("unexpected key '" + k + "'");
    }
  }
  bool end_object() override {
    if (ctx_ == Ctx::metadata || ctx_ == Ctx::entry) ctx_ = Ctx::root;
    else if (ctx_ == Ctx::root) ctx_ = Ctx::done;
    return true;
  }
  bool start_array(std::size_t) override {
    if (ctx_ == Ctx::entry && field_ == "shape") {
      entries.back().shape.emplace();
      ctx_ = Ctx::shape;
      return true;
    }
    if (ctx_ == Ctx::entry && field_ == "data_offsets") {
      entries.back().offsets.emplace();
      ctx_ = Ctx::offsets;
      return true;
    }
    return wrong_value("a list");
  }
  bool end_array() override {
    ctx_ = Ctx::entry;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error.empty()) error = std::string("the header is not valid JSON: ") + e.what();
    return false;
  }

 private:
  enum class Ctx { start, root, metadata, entry, shape, offsets, done };

  bool fail(std::string what) {
    if (error.empty()) error = std::move(what);
    return false;
  }
  std::string where() const {
    return "tensor '" + key_ + "': " + (ctx_ == Ctx::shape ? "shape" : "data_offsets");
  }
  bool wrong_value(const std::string& got) {
    switch (ctx_) {
      case Ctx::start: return fail("the header is not a JSON object (it is " + got + ")");
      case Ctx::root:
        return fail("entry '" + key_ + "' is " + got + ", not an object" +
                    (key_ == "__metadata__" ? "" : " {dtype, shape, data_offsets}"));
      case Ctx::metadata:
        return fail("metadata value of '" + key_ + "' is " + got +
                    ", not a string (safetensors metadata maps strings to strings)");
      case Ctx::entry:
        return fail("tensor '" + key_ + "': field '" + field_ + "' is " + got + ", expected " +
                    (field_ == "dtype" ? "a string" : "a list of non-negative integers"));
      case Ctx::shape:
      case Ctx::offsets: return fail(where() + " holds " + got + ", expected integers");
      case Ctx::done: return fail("unexpected " + got + " after the header object");
    }
    return fail("unexpected " + got);
  }

  Ctx ctx_ = Ctx::start;
  std::string key_;    // current root key (tensor name) or metadata key
  std::string field_;  // current field of an entry
  std::set<std::string> root_keys_;
  std::set<std::string> entry_fields_;
};

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One entry checked on its own: dtype known, shape sane, offsets consistent with both.
// Throws the file's TraceFormatError.
struct Failer {
  const std::string& file_name;
  [[noreturn]] void operator()(const std::string& what) const {
    throw TraceFormatError(file_name, file_name + ": " + what);
  }
};

TensorInfo check_entry(const RawEntry& raw, uint64_t buffer_size, const Failer& fail) {
  const std::string who = "tensor '" + raw.name + "': ";
  if (!raw.dtype) fail(who + "missing field 'dtype'");
  if (!raw.shape) fail(who + "missing field 'shape'");
  if (!raw.offsets) fail(who + "missing field 'data_offsets'");
  const std::optional<ElemType> type = elem_type_from_name(*raw.dtype);
  if (!type)
    fail(who + "unknown or unsupported dtype '" + *raw.dtype +
         "' (supported: BOOL U8 I8 I16 U16 I32 U32 I64 U64 F16 BF16 F32 F64)");
  TensorInfo t;
  t.name = raw.name;
  t.type = *type;
  uint64_t bytes = elem_size(*type);
  for (uint64_t d : *raw.shape) {
    if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(bytes, d, &bytes))
      fail(who + "shape " + shape_text(*raw.shape) + " is too large: its byte size overflows");
    t.shape.push_back(static_cast<int64_t>(d));
  }
  const std::vector<uint64_t>& off = *raw.offsets;
  if (off.size() != 2)
    fail(who + "data_offsets must be [begin, end] but holds " + std::to_string(off.size()) +
         " numbers");
  t.begin = off[0];
  t.end = off[1];
  const std::string range = "data_offsets [" + std::to_string(t.begin) + ", " +
                            std::to_string(t.end) + "]";
  if (t.begin > t.end) fail(who + range + ": begin is after end");
  if (t.end > buffer_size)
    fail(who + range + " go past the end of the data buffer (" + std::to_string(buffer_size) +
         " bytes; is the file truncated?)");
  if (t.end - t.begin != bytes)
    fail(who + range + " span " + std::to_string(t.end - t.begin) + " bytes, but dtype " +
         *raw.dtype + " and shape " + shape_text(*raw.shape) + " need " + std::to_string(bytes));
  return t;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t buffer_size,
                                           const std::string& file_name) {
  const Failer fail{file_name};
  if (text.empty() || text.front() != '{')
    fail("the header does not start with '{' (not a safetensors file?)");

  HeaderSax sax;
  try {
    json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json,
                    /*strict=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {  // defensive: the SAX path reports through parse_error
    fail(std::string("the header is not valid JSON: ") + e.what());
  }
  if (!sax.error.empty()) fail(sax.error);

  SafetensorsHeader header;
  header.metadata = std::move(sax.metadata);
  header.tensors.reserve(sax.entries.size());
  for (const RawEntry& raw : sax.entries) header.tensors.push_back(check_entry(raw, buffer_size, fail));

  // The buffer must be covered exactly: walk the ranges in order of position.
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(header.tensors.size());
  for (const TensorInfo& t : header.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* t : by_offset) {
    if (t->begin < covered)
      fail("tensors '" + previous->name + "' and '" + t->name + "' overlap in the data buffer");
    if (t->begin > covered)
      fail("bytes [" + std::to_string(covered) + ", " + std::to_string(t->begin) +
           ") of the data buffer belong to no tensor (before '" + t->name +
           "'; safetensors allows no holes)");
    covered = t->end;
    previous = t;
  }
  if (covered != buffer_size)
    fail("bytes [" + std::to_string(covered) + ", " + std::to_string(buffer_size) +
         ") at the end of the data buffer belong to no tensor (safetensors allows no holes)");

  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return header;
}

}  // namespace ts
