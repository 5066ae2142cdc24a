// The JSON string writer and the terminal escaper of every tool (trtrace/text.h).
#include "trtrace/text.h"

#include <cstdint>
#include <cstdio>

namespace trtrace {
namespace {

// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 when the bytes there are not one
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8Length(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n;
  uint32_t min;
  if (c < 0x80) return cp = c, 1;
  if ((c & 0xE0) == 0xC0)
    n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0)
    n = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void appendJsonString(std::string& o, std::string_view s) {
  o += '"';
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    uint32_t cp = 0;
    const size_t n = static_cast<unsigned char>(c) < 0x80 ? 1 : utf8Length(s, i, cp);
    if (n == 0) {  // not UTF-8: JSON text cannot carry the byte, U+FFFD stands for it
      o += "\\ufffd";
      ++i;
      continue;
    }
    if (n > 1) {
      o.append(s, i, n);
      i += n;
      continue;
    }
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
    ++i;
  }
  o += '"';
}

std::string jsonString(std::string_view s) {
  std::string o;
  appendJsonString(o, s);
  return o;
}

namespace {

// Code points a terminal acts on or shows as something else: C1 controls (8-bit CSI, ...),
// bidi embeddings/overrides/isolates, line and paragraph separators.
bool invisible(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x200E || cp == 0x200F || cp == 0x061C;
}

}  // namespace

void appendTerminalText(std::string& o, std::string_view s, bool quoted) {
  char b[16];
  if (quoted) o += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    const size_t n = utf8Length(s, i, cp);
    if (c == '\\' || (quoted && c == '"')) {
      o += '\\', o += char(c);
    } else if (c == '\n' || c == '\r' || c == '\t') {
      o += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
    } else if (n == 0 || c < 0x20 || c == 0x7F) {
      std::snprintf(b, sizeof b, "\\x%02x", c);
      o += b;
      i += 1;
      continue;
    } else if (invisible(cp)) {
      std::snprintf(b, sizeof b, "\\u{%04x}", unsigned(cp));
      o += b;
    } else {
      o.append(s.substr(i, n));
    }
    i += n;
  }
  if (quoted) o += '"';
}

std::string terminalText(std::string_view s) {
  std::string o;
  appendTerminalText(o, s);
  return o;
}

std::string quotedText(std::string_view s) {
  std::string o;
  appendTerminalText(o, s, true);
  return o;
}

}  // namespace trtrace
