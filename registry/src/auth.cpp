#include "auth.h"

#include <simdjson.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "trtrace/error.h"

namespace trtrace::registry {
namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool tokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void skipSpace(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

std::string readToken(std::string_view s, size_t& i) {
  const size_t start = i;
  while (i < s.size() && tokenChar(s[i])) ++i;
  return std::string(s.substr(start, i - start));
}

// A quoted-string at s[i] == '"' (backslash escapes one character); false when unterminated.
bool readQuoted(std::string_view s, size_t& i, std::string* out) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '"') {
      ++i;
      return true;
    }
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out->push_back(s[i]);
  }
  return false;
}

// name=value at i; false (i unchanged) when what follows is not a parameter (a new scheme).
bool readParam(std::string_view s, size_t& i, Challenge* c) {
  size_t j = i;
  const std::string name = readToken(s, j);
  skipSpace(s, j);
  if (name.empty() || j >= s.size() || s[j] != '=') return false;
  ++j;
  skipSpace(s, j);
  std::string value;
  if (j < s.size() && s[j] == '"') {
    if (!readQuoted(s, j, &value)) return false;
  } else {
    value = readToken(s, j);
  }
  c->params[lower(name)] = value;
  i = j;
  return true;
}

}  // namespace

std::vector<Challenge> parseChallenges(std::string_view s) {
  std::vector<Challenge> out;
  size_t i = 0;
  while (i < s.size()) {
    skipSpace(s, i);
    while (i < s.size() && (s[i] == ',' || s[i] == ' ')) ++i;
    const std::string scheme = readToken(s, i);
    if (scheme.empty()) break;
    Challenge c{lower(scheme), {}};
    skipSpace(s, i);
    while (i < s.size() && readParam(s, i, &c)) {
      skipSpace(s, i);
      if (i < s.size() && s[i] == ',') ++i;
      skipSpace(s, i);
    }
    out.push_back(std::move(c));
    if (i < s.size() && !tokenChar(s[i]) && s[i] != ',') break;  // garbage: keep what parsed
  }
  return out;
}

std::string base64Encode(std::string_view in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(in[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? t[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

bool base64Decode(std::string_view in, std::string* out) {
  if (in.size() % 4) return false;
  out->clear();
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = in[i + k];
      int d = c >= 'A' && c <= 'Z'   ? c - 'A'
              : c >= 'a' && c <= 'z' ? c - 'a' + 26
              : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+'             ? 62
              : c == '/'             ? 63
                                     : -1;
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        d = 0;
        ++pad;
      } else if (d < 0 || pad)
        return false;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    for (int k = 0; k < 3 - pad; ++k) out->push_back(static_cast<char>((v >> (16 - 8 * k)) & 255));
  }
  return true;
}

std::string configPath(const std::string& path) {
  if (!path.empty()) return path;
  if (const char* d = std::getenv("DOCKER_CONFIG"); d && *d) return std::string(d) + "/config.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.docker/config.json";
  return "";
}

namespace {

// The `auths` key naming `host`: "host", or a URL whose host part is `host`.
bool keyNames(std::string_view key, const std::string& host) {
  for (std::string_view scheme : {"https://", "http://"})
    if (key.substr(0, scheme.size()) == scheme) key.remove_prefix(scheme.size());
  const size_t slash = key.find('/');
  return key.substr(0, slash) == host;
}

Credentials entryCredentials(simdjson::dom::object entry, const std::string& what) {
  Credentials c;
  std::string_view auth;
  if (entry["auth"].get(auth) == simdjson::SUCCESS && !auth.empty()) {
    std::string plain;
    const size_t colon = base64Decode(auth, &plain) ? plain.find(':') : std::string::npos;
    if (colon == std::string::npos)
      throw Error(Error::Kind::Corrupt, what + ": \"auth\" is not base64 of user:password");
    return {plain.substr(0, colon), plain.substr(colon + 1)};
  }
  std::string_view v;
  if (entry["username"].get(v) == simdjson::SUCCESS) c.user = std::string(v);
  if (entry["password"].get(v) == simdjson::SUCCESS) c.password = std::string(v);
  return c;
}

}  // namespace

Credentials credentialsFor(const std::string& host, const std::string& configFile) {
  const std::string path = configPath(configFile);
  if (path.empty()) return {};
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const auto loadErr = simdjson::padded_string::load(path).get(text);
  if (loadErr == simdjson::IO_ERROR) {
    if (!configFile.empty()) throw Error(path + ": cannot read the registry config file");
    return {};  // no config file: no credentials
  }
  simdjson::dom::object auths;
  simdjson::dom::element doc;
  if (loadErr || parser.parse(text).get(doc)) throw Error(Error::Kind::Corrupt, path + ": not JSON");
  if (doc["auths"].get(auths)) return {};
  for (auto [key, value] : auths) {
    if (!keyNames(key, host)) continue;
    simdjson::dom::object entry;
    if (value.get(entry))
      throw Error(Error::Kind::Corrupt, path + ": auths[\"" + std::string(key.substr(0, 200)) + "\"] is not an object");
    return entryCredentials(entry, path + ": auths[\"" + std::string(key.substr(0, 200)) + "\"]");
  }
  return {};
}

std::string tokenFromJson(std::string_view body, const std::string& what) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view token;
  if (parser.parse(body.data(), body.size()).get(doc) == simdjson::SUCCESS &&
      (doc["token"].get(token) == simdjson::SUCCESS || doc["access_token"].get(token) == simdjson::SUCCESS) &&
      !token.empty())
    return std::string(token);
  throw Error(Error::Kind::Corrupt, what + ": the token endpoint's answer holds no token");
}

}  // namespace trtrace::registry
