// The names a capture writes (docs/design.md, "Output names"), shared by the shim, which picks them,
// and `trtrace capture`, which finds the traces a run wrote. A process writes the first of its
// candidate names that is free: k = 0 the configured name; k = 1 <trace>.<pid>; k >= 2
// <trace>.<pid>.<k>. A forked child starts at k = 1. The JSON+BIN export takes the same suffix
// before ".json" (x.json -> x.<pid>.json, whose BIN is x.<pid>.bin).
#pragma once
#include <string>
#include <string_view>

namespace trtrace::capture_names {

// The suffix of candidate k of process `pid`.
inline std::string suffix(unsigned k, long pid) {
  if (k == 0) return "";
  const std::string s = "." + std::to_string(pid);
  return k == 1 ? s : s + "." + std::to_string(k);
}

// `json` with `suffix` before its ".json" (after the whole name when it has none).
inline std::string jsonWithSuffix(const std::string& json, const std::string& suffix) {
  constexpr std::string_view ext = ".json";
  if (json.size() > ext.size() && json.compare(json.size() - ext.size(), ext.size(), ext) == 0)
    return json.substr(0, json.size() - ext.size()) + suffix + std::string(ext);
  return json + suffix;
}

// Whether `name` is one of the candidates of `base` (any pid and k): base, base.N or base.N.K.
// The suffix when it is (through *sfx), so that the JSON's name follows.
inline bool isCandidate(const std::string& base, const std::string& name, std::string* sfx = nullptr) {
  if (name.compare(0, base.size(), base) != 0) return false;
  const std::string_view rest = std::string_view(name).substr(base.size());
  int parts = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '.') {
      if (++parts > 2 || i + 1 == rest.size() || rest[i + 1] == '.') return false;
    } else if (rest[i] < '0' || rest[i] > '9' || i == 0) {
      return false;
    }
  }
  if (sfx) *sfx = std::string(rest);
  return true;
}

}  // namespace trtrace::capture_names
