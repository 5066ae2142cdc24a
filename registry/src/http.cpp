#include "http.h"

#include <curl/curl.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>

#include "trtrace/error.h"

namespace trtrace::registry {
namespace {

// libcurl's global state, set up once before any handle (curl_global_init is not thread-safe).
struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

// One handle per thread, kept between requests so that connections are reused.
CURL* threadHandle() {
  static CurlGlobal global;
  thread_local std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) throw Error("libcurl: cannot create a handle");
  curl_easy_reset(h.get());
  return h.get();
}

// Text from the registry, safe on one line: printable ASCII only, at most 200 characters.
std::string printable(std::string_view s) {
  std::string r;
  for (char c : s.substr(0, 200)) r += (c >= 0x20 && c < 0x7f) ? c : '?';
  return r;
}

struct Transfer {
  const Request* req;
  Response* resp;
  CURL* h;
  bool overflow = false;     // an error body over maxBody
  bool started = false;      // onStatus called
  std::exception_ptr error;  // thrown by the caller's sink: rethrown once curl returns
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") t->resp->headers.clear();  // a new answer (after a redirect or 100)
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  std::string& slot = t->resp->headers[name];
  slot += (slot.empty() ? "" : ", ") + std::string(value);
  return size * n;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  long status = 0;
  curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
  if (status / 100 == 2 && (t->req->sink || t->req->onStatus)) {
    try {  // nothing may be thrown through libcurl
      if (t->req->onStatus && !t->started) t->req->onStatus(status), t->started = true;
      if (t->req->sink) return t->req->sink(data, size * n) ? size * n : 0;
    } catch (...) {
      t->error = std::current_exception();
      return 0;
    }
  }
  if (t->resp->body.size() + size * n > t->req->maxBody) {
    t->overflow = true;
    return 0;
  }
  t->resp->body.append(data, size * n);
  return size * n;
}

struct Upload {
  const Request* req;
  uint64_t off = 0;
};

size_t onRead(char* buf, size_t size, size_t n, void* user) {
  auto* u = static_cast<Upload*>(user);
  const size_t k = static_cast<size_t>(std::min<uint64_t>(size * n, u->req->bodySize - u->off));
  try {
    if (u->req->body)
      u->req->body(u->off, buf, k);
    else
      std::copy_n(u->req->bodyBytes.data() + u->off, k, buf);
  } catch (...) { return CURL_READFUNC_ABORT; }
  u->off += k;
  if (u->req->sent) u->req->sent(u->off);
  return k;
}

int onSeek(void* user, curl_off_t offset, int origin) {
  auto* u = static_cast<Upload*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > u->req->bodySize) return CURL_SEEKFUNC_FAIL;
  u->off = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// The registry's error list ({"errors": [{"code", "message"}]}), as "CODE: message".
std::string registryError(const std::string& body) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  simdjson::dom::array errors;
  if (body.empty() || p.parse(body).get(doc) || doc["errors"].get(errors) || errors.size() == 0) return "";
  std::string_view code, message;
  auto first = errors.at(0);
  if (first["code"].get(code)) code = "";
  if (first["message"].get(message)) message = "";
  return printable(std::string(code) + (message.empty() ? "" : ": " + std::string(message)));
}

void setTls(CURL* h, const Options& o) {
  if (!o.caFile.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, o.caFile.c_str());
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
}

void setBody(CURL* h, const Request& r, Upload* u) {
  if (r.method == "HEAD")
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  else if (r.method == "GET")
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  else
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  const bool hasBody = r.method == "PUT" || r.method == "PATCH" || r.method == "POST";
  if (!hasBody) return;
  curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.bodySize));
  curl_easy_setopt(h, CURLOPT_READFUNCTION, onRead);
  curl_easy_setopt(h, CURLOPT_READDATA, u);
  curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, onSeek);
  curl_easy_setopt(h, CURLOPT_SEEKDATA, u);
}

}  // namespace

std::string Response::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

Session::Session(Reference ref, Options o, std::string actions, std::vector<std::string> extra)
    : ref_(std::move(ref)), o_(std::move(o)), actions_(std::move(actions)), extra_(std::move(extra)) {}
Session::~Session() = default;

std::string Session::url(const std::string& p) const {
  if (p.rfind("http://", 0) == 0 || p.rfind("https://", 0) == 0) return p;
  return (o_.plainHttp ? "http://" : "https://") + ref_.host + p;
}

Response Session::perform(const Request& r, const std::string& what, const std::string& auth) {
  CURL* h = threadHandle();
  Response resp;
  Transfer t{&r, &resp, h, false, false, nullptr};
  Upload up{&r, 0};
  const std::string u = url(r.url);
  curl_slist* hdrs = nullptr;
  for (const std::string& s : r.headers) hdrs = curl_slist_append(hdrs, s.c_str());
  if (!auth.empty()) hdrs = curl_slist_append(hdrs, auth.c_str());
  hdrs = curl_slist_append(hdrs, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(h, CURLOPT_URL, u.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, r.method == "GET" || r.method == "HEAD" ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer: 60 s without a byte
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "trtrace");
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  setTls(h, o_);
  setBody(h, r, &up);
  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(hdrs);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  if (t.error) std::rethrow_exception(t.error);
  if (t.overflow)
    throw Error(ref_.str() + ": " + what + ": the registry's answer (HTTP " + std::to_string(resp.status) +
                ") is over " + std::to_string(r.maxBody) + " bytes");
  if (rc == CURLE_WRITE_ERROR && r.sink)
    throw Error(Error::Kind::Corrupt,
                ref_.str() + ": " + what +
                    ": the registry sent more bytes than the size expected (its descriptor, or the cap)");
  if (rc != CURLE_OK) throw Error(ref_.str() + ": " + what + ": " + printable(*err ? err : curl_easy_strerror(rc)));
  return resp;
}

Response Session::send(const Request& r, const std::string& what) {
  std::string auth;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auth = auth_;
  }
  Response resp = perform(r, what, auth);
  if (resp.status != 401) return resp;
  authenticate(resp, what);
  {
    std::lock_guard<std::mutex> lk(mu_);
    auth = auth_;
  }
  return perform(r, what, auth);
}

void Session::fail(const Response& r, const std::string& what) const {
  const std::string detail = registryError(r.body);
  throw Error(ref_.str() + ": " + what + ": HTTP " + std::to_string(r.status) +
              (detail.empty() ? "" : " (" + detail + ")"));
}

std::string Session::scope() const {
  std::string s = "repository:" + ref_.repo + ":" + actions_;
  for (const std::string& e : extra_) s += " repository:" + e + ":pull";
  return s;
}

void Session::authenticate(const Response& challenge, const std::string& what) {
  const auto challenges = parseChallenges(challenge.header("www-authenticate"));
  std::lock_guard<std::mutex> lk(mu_);
  if (!credsLoaded_) {
    creds_ = credentialsFor(ref_.host, o_.configFile);
    credsLoaded_ = true;
  }
  // Bearer first, whatever the order offered: a registry offering both takes tokens for scopes.
  for (const Challenge& c : challenges)
    if (c.scheme == "bearer" && c.params.count("realm")) {
      auth_ = "Authorization: Bearer " + bearerToken(c, what);
      return;
    }
  for (const Challenge& c : challenges)
    if (c.scheme == "basic" && !creds_.empty()) {
      auth_ = "Authorization: Basic " + base64Encode(creds_.user + ":" + creds_.password);
      return;
    }
  const bool basic =
      std::any_of(challenges.begin(), challenges.end(), [](const Challenge& c) { return c.scheme == "basic"; });
  throw Error(ref_.str() + ": " + what + ": HTTP 401 (" +
              (basic ? "no credentials for " + printable(ref_.host) + " in " + configPath(o_.configFile)
                     : std::string("no authentication scheme this client knows")) +
              ")");
}

// The distribution token flow: GET realm?service=..&scope=.. (with the user's credentials when the
// config file has them), then "Bearer <token>". Called with mu_ held.
std::string Session::bearerToken(const Challenge& c, const std::string& what) {
  CURL* h = threadHandle();
  auto esc = [h](const std::string& s) {
    char* e = curl_easy_escape(h, s.c_str(), static_cast<int>(s.size()));
    std::string r = e ? e : "";
    curl_free(e);
    return r;
  };
  const std::string& realm = c.params.at("realm");
  std::string u = realm + (realm.find('?') == std::string::npos ? "?" : "&");
  if (c.params.count("service")) u += "service=" + esc(c.params.at("service")) + "&";
  u += "scope=" + esc(scope());
  Request r;
  r.url = u;
  if (url(u).rfind("http", 0) != 0 || (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0))
    throw Error(ref_.str() + ": " + what + ": the token realm '" + printable(realm) + "' is not an http(s) URL");
  if (!creds_.empty()) r.headers.push_back("Authorization: Basic " + base64Encode(creds_.user + ":" + creds_.password));
  Response resp = perform(r, what + " (token from " + printable(realm) + ")", "");
  if (resp.status != 200) fail(resp, what + ": token from " + printable(realm));
  return tokenFromJson(resp.body, ref_.str() + ": " + what);
}

}  // namespace trtrace::registry
