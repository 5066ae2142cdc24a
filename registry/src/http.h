// HTTP to one registry through libcurl (TLS: the system store plus --ca-file; redirects followed,
// http and https only; credentials never sent to another host), with the registry's auth flow:
// a 401 answer's WWW-Authenticate challenge is met (Basic: the config file's credentials; Bearer:
// a token from the challenge's realm for this session's scope) and the request sent once more.
// A Session is shared by the transfer threads; each thread has its own curl handle.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "auth.h"
#include "trtrace/registry.h"

namespace trtrace::registry {

struct Request {
  std::string method = "GET";
  std::string url;                   // absolute, or a path ("/v2/...") on the registry
  std::vector<std::string> headers;  // "Name: value"
  // The body: `bodySize` bytes produced by `body(offset, buf, n)` (random access, so a request can
  // be sent again), or `bodyBytes` when `body` is empty.
  uint64_t bodySize = 0;
  std::function<void(uint64_t, char*, size_t)> body;
  std::string bodyBytes;
  // A 2xx answer's body goes to `sink` (false aborts the transfer); else, and for every other
  // answer, to Response::body, up to `maxBody` bytes (more is an error).
  std::function<bool(const char*, size_t)> sink;
  size_t maxBody = 4 << 20;
  std::function<void(long)> onStatus;  // a 2xx answer's status, before its first body byte
  std::function<void(uint64_t)> sent;  // body bytes sent so far (progress)
};

struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // lowercase names; repeated ones joined by ", "
  std::string body;
  std::string header(const std::string& name) const;
};

class Session {
 public:
  // `actions`: "pull" or "pull,push" (the token scope for this reference's repository); `extra`:
  // more repositories to ask pull on (push's mount sources).
  Session(Reference ref, Options o, std::string actions, std::vector<std::string> extra = {});
  ~Session();

  // Sends `r` (authenticating on a 401, once). A transport failure (connection refused or dropped,
  // TLS, timeout) throws Error (Io) naming the reference and `what`; an HTTP status is returned.
  Response send(const Request& r, const std::string& what);
  // Error (Io): "<ref>: <what>: HTTP <status> (<registry's error code: message>)".
  [[noreturn]] void fail(const Response& r, const std::string& what) const;
  std::string url(const std::string& pathOrUrl) const;
  const Reference& ref() const { return ref_; }
  const Options& options() const { return o_; }

 private:
  Response perform(const Request& r, const std::string& what, const std::string& auth);
  void authenticate(const Response& challenge, const std::string& what);
  std::string bearerToken(const Challenge& c, const std::string& what);
  std::string scope() const;

  Reference ref_;
  Options o_;
  std::string actions_;
  std::vector<std::string> extra_;
  std::mutex mu_;
  std::string auth_;  // "Authorization: ..." or ""
  bool credsLoaded_ = false;
  Credentials creds_;
};

}  // namespace trtrace::registry
