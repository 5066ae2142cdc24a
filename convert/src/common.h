// Internal helpers of trtrace_convert.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trtrace/api_table.h"
#include "trtrace/error.h"

namespace trtrace::convert {

// The header setting that says a trace's calls came from NVIDIA's JSON (fromNvidiaJson).
inline constexpr char kSourceSetting[] = "source";
inline constexpr char kSourceNvidiaJson[] = "NVIDIA JSON+BIN capture";

// A read-only mapping of a whole file followed by at least `padding` readable zero bytes
// (simdjson reads up to 64 bytes past a document's end).
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const std::string& path, size_t padding, const char* what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Drops the pages of [0, upTo) from this process (bounded resident memory on big inputs).
  void release(size_t upTo);
  // Drops every page of the mapping (they are read again from the file if touched later).
  void releaseAll();

 private:
  char* base_ = nullptr;
  size_t mapped_ = 0;
  const char* data_ = "";
  size_t size_ = 0;
  size_t released_ = 0;
};

// Bytes of `count` elements of a TensorRT DataType code (as the capture shim computes them).
uint64_t weightBytes(uint32_t dtype, uint64_t count);

// Python repr() of a double (what json.dumps writes): shortest round-trip digits; null if not finite.
void appendDouble(std::string& out, double v);

// An argument NVIDIA's capture shim never writes (docs/json-bin-layout.md §4, "Arguments NVIDIA
// leaves out"): its value is lost at capture, and the converter stands in the library's default.
struct NvidiaOmitted {
  int64_t value;          // the stand-in: an enumerator of the parameter's enum
  std::string_view name;  // its name, for the warning
};

// The spec by name: (interface, method) -> API ids (overloads), for NVIDIA's "class"/"function".
struct Spec {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using Map = std::unordered_map<std::string, V, Hash, std::equal_to<>>;
  static const Spec& get();
  // The overloads of Interface::method; empty if unknown.
  const std::vector<const api::ApiDesc*>& lookup(std::string_view iface, std::string_view method) const;
  // Parameter `param` of API `apiId` when NVIDIA's JSON leaves it out, else nullptr.
  const NvidiaOmitted* omitted(uint32_t apiId, uint32_t param) const;
  Map<Map<std::vector<const api::ApiDesc*>>> byName;
  std::unordered_map<uint64_t, NvidiaOmitted> omittedArgs;  // (api id << 32 | parameter) -> stand-in
};

}  // namespace trtrace::convert
