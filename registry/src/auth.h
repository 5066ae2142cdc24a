// Registry authentication pieces (docs/registry.md, "Authentication"): the WWW-Authenticate
// challenge parser, the token endpoint's answer, and credentials from the Docker/OCI config file
// (`auths` entries, the file `docker login` and `oras login` write).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trtrace::registry {

struct Challenge {
  std::string scheme;                         // lowercase: "basic", "bearer", ...
  std::map<std::string, std::string> params;  // lowercase names: realm, service, scope, ...
};

// Every challenge in a WWW-Authenticate value (RFC 7235: scheme then name=value or name="quoted"
// pairs, comma separated; a comma followed by a new scheme starts the next challenge). A value
// that does not parse gives what parsed before it.
std::vector<Challenge> parseChallenges(std::string_view header);

std::string base64Encode(std::string_view bytes);
// Strict: the standard alphabet, '=' padding only at the end; false on anything else.
bool base64Decode(std::string_view text, std::string* out);

struct Credentials {
  std::string user, password;
  bool empty() const { return user.empty() && password.empty(); }
};

// The config file: `path`, else $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
std::string configPath(const std::string& path);
// The `auths` entry for `host` (keys "host", "https://host", "http://host", with or without a
// trailing path); none when the file is absent or holds no entry. A file that does not parse, or
// an entry whose `auth` is not base64 "user:password", throws Error naming the file and the key.
Credentials credentialsFor(const std::string& host, const std::string& configFile);

// The token in a token endpoint's JSON answer ("token", else "access_token"); throws Error (Corrupt)
// naming `what` when there is none.
std::string tokenFromJson(std::string_view body, const std::string& what);

}  // namespace trtrace::registry
