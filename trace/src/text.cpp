// The JSON string writer of every tool (trtrace/text.h).
#include "trtrace/text.h"

#include <cstdio>

namespace trtrace {

void appendJsonString(std::string& o, std::string_view s) {
  o += '"';
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
          o += b;
        } else {
          o += c;
        }
    }
  }
  o += '"';
}

std::string jsonString(std::string_view s) {
  std::string o;
  appendJsonString(o, s);
  return o;
}

}  // namespace trtrace
