// Reference parsing: the distribution spec's grammar, checked whole before anything is sent (a
// reference ends up in URLs, so nothing outside the grammar may reach one).
#include <cctype>
#include <string>

#include "trtrace/error.h"
#include "trtrace/registry.h"

namespace trtrace::registry {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error(Error::Kind::Usage, "reference '" + std::string(text.substr(0, 200)) + "': " + why);
}

bool lowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*
bool validComponent(std::string_view c) {
  if (c.empty() || !lowerAlnum(c.front()) || !lowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size();) {
    if (lowerAlnum(c[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < c.size() && !lowerAlnum(c[j])) ++j;
    const std::string_view sep = c.substr(i, j - i);
    if (!(sep == "." || sep == "_" || sep == "__" || sep.find_first_not_of('-') == std::string_view::npos))
      return false;
    i = j;
  }
  return true;
}

bool validRepo(std::string_view r) {
  if (r.empty() || r.size() > 255) return false;
  for (size_t start = 0;;) {
    const size_t slash = r.find('/', start);
    if (!validComponent(r.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)))
      return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

bool validHost(std::string_view h) {
  const size_t colon = h.rfind(':');
  const std::string_view name = colon == std::string_view::npos ? h : h.substr(0, colon);
  if (colon != std::string_view::npos) {
    const std::string_view port = h.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  }
  if (name.empty() || name.size() > 253) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-')) return false;
  return name.front() != '-' && name.front() != '.';
}

bool validTag(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    const bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!(word || (i > 0 && (c == '.' || c == '-')))) return false;
  }
  return true;
}

}  // namespace

bool validDigest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 7) != "sha256:") return false;
  for (char c : d.substr(7))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Reference Reference::parse(std::string_view text) {
  std::string_view s = text;
  if (s.substr(0, 6) == "oci://") s.remove_prefix(6);
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) bad(text, "expected HOST[:PORT]/REPO[:TAG|@DIGEST]");
  Reference r;
  r.host = std::string(s.substr(0, slash));
  if (!validHost(r.host)) bad(text, "bad registry host '" + r.host + "'");
  std::string_view rest = s.substr(slash + 1);
  if (const size_t at = rest.find('@'); at != std::string_view::npos) {
    r.digest = std::string(rest.substr(at + 1));
    if (!validDigest(r.digest)) bad(text, "bad digest (expected sha256: and 64 lowercase hex digits)");
    rest = rest.substr(0, at);
  } else if (const size_t colon = rest.rfind(':');
             colon != std::string_view::npos && rest.find('/', colon) == std::string_view::npos) {
    r.tag = std::string(rest.substr(colon + 1));
    if (!validTag(r.tag)) bad(text, "bad tag '" + r.tag + "'");
    rest = rest.substr(0, colon);
  } else {
    r.tag = "latest";
  }
  r.repo = std::string(rest);
  if (!validRepo(r.repo)) bad(text, "bad repository name '" + r.repo + "' (lowercase letters, digits, . _ - and /)");
  return r;
}

std::string Reference::str() const { return host + "/" + repo + (digest.empty() ? ":" + tag : "@" + digest); }

}  // namespace trtrace::registry
