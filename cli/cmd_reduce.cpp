// trtrace reduce IN -o MIN [--check CMD] [--fail-regex RE] [--fail-code N] [--artifacts DIR]
// [--timeout S] [--lib PATH] [--json]: delta debugging of a failing build (issue 17). Each
// candidate removes layers of the recorded network(s) (reduce_graph.h keeps it well-formed), is
// written as a trace and replayed in a child process under a time limit (child_run.h), so a
// candidate that crashes or hangs the library is a verdict, not the end of the run. ddmin first
// (remove halves, quarters, ... of the layers kept so far), then single removals until none keeps
// the failure. "Still fails" is, by default, the player's exit 3 (the build failure reproduced)
// with the same failure text as the input's replay (per failing network, its first library error
// line, unnamed layers' numbers aside: "network 0: <error>"); --fail-regex / --fail-code (and
// --check, whose non-zero exit is the failure without them) define it otherwise. Every candidate
// is kept in --artifacts: good/ (does not fail), bad/ (fails), verdicts.tsv (one line each).
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <simdjson.h>

#include "child_run.h"
#include "commands.h"
#include "reduce_graph.h"
#include "trace_edit.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"
#include "trtrace/writer.h"
#include "usage.h"

namespace trtrace::cli {

struct ReduceOptions {
  std::string in, out, check, failRegex, artifacts, lib;
  std::optional<int> failCode;
  double timeout = 300;
  bool json = false;
};

namespace {

struct Size {
  size_t layers = 0, calls = 0;
  uint64_t weightBytes = 0;  // distinct blobs and inline weights of the kept calls
};

// The calls `p` keeps, with their weights and rewired tensors, into `w` (nullptr: only measured).
Size writePlan(const Reader& r, const ReduceGraph::Plan& p, Writer* w) {
  if (w) describeApis(r, *w);
  std::unordered_set<BlobRef, BlobRefHasher> blobs, written;
  Size s;
  s.layers = p.keptLayers();
  size_t index = 0;
  auto map = [&](uint64_t h) {
    auto it = p.subst.find(h);
    return it == p.subst.end() ? h : it->second;
  };
  r.forEachCall([&](const CallView& c) {
    if (!p.keepCall[index++]) return true;
    ++s.calls;
    for (size_t i = 0; i < c.argCount(); ++i) {
      const ValueView v = c.arg(i);
      if (v.kind() == ValueKind::WeightsInline) s.weightBytes += v.bytes().size();
      if (v.kind() == ValueKind::WeightsBlob && blobs.insert(v.blob()).second) s.weightBytes += v.blob().length;
    }
    if (!w) return true;
    copyCall(
        c, *w, c.networkId(),
        [&](CallEncoder& e, const ValueView& v, bool ret) {
          if (v.kind() == ValueKind::WeightsBlob && written.insert(v.blob()).second) copyBlob(r, *w, v.blob());
          encodeValue(e, v, ret);
        },
        map);
    return true;
  });
  if (w) w->close();
  return s;
}

// Writes a plan as a trace into `fd` (a new empty file, named `path` in messages).
Size writeTrace(const Reader& r, const ReduceGraph::Plan& p, int fd, const std::string& path) {
  WriterOptions wo;
  wo.fd = fd;
  wo.path = path;
  auto w = Writer::create(wo, headerOf(r));
  return writePlan(r, p, w.get());
}

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The player beside this executable (the build tree, an install), else the one in PATH.
std::string playerPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string dir(buf, size_t(n));
    dir = dir.substr(0, dir.rfind('/') + 1) + "tensorrt_player";
    if (access(dir.c_str(), X_OK) == 0) return dir;
  }
  return "tensorrt_player";
}

}  // namespace

// Replays a candidate and says whether it still fails (see the file comment).
class ReduceChecker {
 public:
  explicit ReduceChecker(const ReduceOptions& o) : o_(o), player_(playerPath()) {
    if (!o.failRegex.empty()) {
      try {
        regex_.emplace(o.failRegex, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw Error(Error::Kind::Usage,
                    "--fail-regex " + o.failRegex + ": not a regular expression (" + e.what() + ")");
      }
    }
  }
  struct Verdict {
    bool fails = false;
    bool timedOut = false;  // its own verdict: not failing, unless --fail-code 124 says a hang is the failure
    int status = 0;
    std::string line;  // the failure text (default), the first matching line, or why not
  };
  Verdict run(const std::string& trace) const;
  // The failure to keep: the input's failure text (default mode).
  void expect(const std::string& line) { expected_ = line; }
  std::string describe(const Verdict& v) const;

 private:
  std::vector<std::string> command(const std::string& trace) const;
  // The default verdict: the player's exit 3 with the input's failure text (file comment).
  bool byFailureText() const { return o_.check.empty() && !regex_ && !o_.failCode; }
  const ReduceOptions& o_;
  std::string player_, expected_;
  std::optional<std::regex> regex_;
};

std::vector<std::string> ReduceChecker::command(const std::string& trace) const {
  if (o_.check.empty()) {
    std::vector<std::string> argv{player_, "-q", trace};
    if (byFailureText()) argv.insert(argv.begin() + 2, "--json");  // the failure text is read from its report
    if (!o_.lib.empty()) argv.insert(argv.begin() + 2, {"--lib", o_.lib});
    return argv;
  }
  std::string cmd = o_.check;
  const size_t at = cmd.find("{}");
  if (at == std::string::npos)
    cmd += " " + shellQuote(trace);
  else
    for (size_t p = at; p != std::string::npos; p = cmd.find("{}", p + shellQuote(trace).size()))
      cmd.replace(p, 2, shellQuote(trace));
  return {"/bin/sh", "-c", cmd};
}

// One network of the player's --json report (replay/player.cpp, printJson): built or not, and the
// library's error messages of its build.
struct PlayedNetwork {
  int64_t network = 0;
  bool ok = false;
  std::vector<std::string> errors;
};

// The player's --json report in a child's output (stdout and stderr interleaved: the report is the
// one line that opens with its first key); nullopt when there is none (the player stopped first).
static std::optional<std::vector<PlayedNetwork>> playerReport(const std::string& out) {
  static constexpr std::string_view kOpening = "{\"capture\": ";
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    const std::string_view line(out.data() + at, end - at);
    at = end + 1;
    if (line.substr(0, kOpening.size()) != kOpening) continue;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::array networks;
    if (parser.parse(simdjson::padded_string(line)).get(doc) || doc["networks"].get_array().get(networks)) continue;
    std::vector<PlayedNetwork> report;
    for (simdjson::dom::element n : networks) {
      PlayedNetwork p;
      simdjson::dom::array errors;
      if (n["network"].get_int64().get(p.network) || n["ok"].get_bool().get(p.ok) ||
          n["errors"].get_array().get(errors))
        return std::nullopt;
      for (simdjson::dom::element e : errors) {
        std::string_view text;
        if (e.get_string().get(text)) return std::nullopt;
        p.errors.emplace_back(text);
      }
      report.push_back(std::move(p));
    }
    return report;
  }
  return std::nullopt;
}

// The failure's text: for each network whose build failed, its number and the library's first
// error ("network 0: <error>; network 1: ..."), as a terminal shows it. The library numbers
// unnamed layers in creation order ("(Unnamed Layer* 10) [ElementWise]"), so a removal before one
// renumbers it: the number is left out of the comparison (the type stays).
static std::string failureText(const std::vector<PlayedNetwork>& report) {
  static const std::regex unnamed(R"(\(Unnamed Layer\* \d+\))");
  std::string text;
  for (const PlayedNetwork& n : report)
    if (!n.ok && !n.errors.empty())
      text += (text.empty() ? "network " : "; network ") + std::to_string(n.network) + ": " +
              std::regex_replace(terminalText(n.errors.front()), unnamed, "(Unnamed Layer* #)");
  return text;
}

// Why a replay that reported does not fail: what each network did.
static std::string outcomes(const std::vector<PlayedNetwork>& report) {
  std::string text;
  for (const PlayedNetwork& n : report)
    text +=
        (text.empty() ? "network " : "; network ") + std::to_string(n.network) + (n.ok ? ": built" : ": build failed");
  return text.empty() ? "no build" : text;
}

static std::string lastLine(const std::string& out) {
  size_t end = out.find_last_not_of("\n");
  if (end == std::string::npos) return {};
  const size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

ReduceChecker::Verdict ReduceChecker::run(const std::string& trace) const {
  const ChildResult c = runChild(command(trace), o_.timeout);
  Verdict v;
  v.status = c.status;
  if (regex_ || o_.failCode) {
    bool matched = !regex_;
    size_t at = 0;
    while (regex_ && !matched && at < c.output.size()) {
      size_t end = c.output.find('\n', at);
      if (end == std::string::npos) end = c.output.size();
      const std::string line = c.output.substr(at, end - at);
      at = end + 1;
      if (std::regex_search(line, *regex_)) matched = true, v.line = line;
    }
    v.fails = matched && (!o_.failCode || c.status == *o_.failCode);
    if (!matched) v.line = "no line matches --fail-regex";
  } else if (!o_.check.empty()) {
    v.fails = c.status != 0;
  } else if (const auto report = playerReport(c.output)) {
    v.line = failureText(*report);
    v.fails = c.status == 3 && !v.line.empty() && (expected_.empty() || v.line == expected_);
    if (v.line.empty()) v.line = outcomes(*report);
  }
  v.timedOut = c.timedOut;
  if (c.timedOut && o_.failCode != 124) v.fails = false;  // a hang is not the failure being reduced
  if (c.timedOut) {
    char limit[64];
    std::snprintf(limit, sizeof limit, "ran past --timeout %g s", o_.timeout);
    v.line = limit;
  }
  if (v.line.empty()) v.line = lastLine(c.output);  // why it passed: a divergence, a crash, ...
  return v;
}

std::string ReduceChecker::describe(const Verdict& v) const {
  std::string s = "exit " + std::to_string(v.status);
  if (!v.line.empty()) s += ": " + v.line;
  return s;
}

// Where candidates go: --artifacts DIR (kept), or a private folder removed at the end. The folder
// may be shared (another user can plant names in it), so everything in it is made relative to its
// descriptor, never by following a path: folders with mkdirat + O_NOFOLLOW opens, files with
// O_CREAT|O_EXCL|O_NOFOLLOW, moves with RENAME_NOREPLACE. A planted name or link is refused, not
// followed out of the folder.
class Artifacts {
 public:
  explicit Artifacts(const std::string& dir);
  ~Artifacts();
  Artifacts(const Artifacts&) = delete;
  Artifacts& operator=(const Artifacts&) = delete;
  std::string pending(size_t n) const { return dir_ + "/" + name(n); }  // the path the check is given
  int create(size_t n);                                                 // the new candidate n, empty
  void discard(size_t n) { ::unlinkat(fd_, name(n).c_str(), 0); }
  void record(size_t n, const ReduceChecker::Verdict& v, const Size& s, const std::string& why);

 private:
  static std::string name(size_t n) {
    char b[32];
    std::snprintf(b, sizeof b, "cand-%04zu.trtrace", n);
    return b;
  }
  void makeFolders();
  std::string dir_;
  bool keep_;
  int fd_ = -1;
  std::map<std::string, int> sub_;                         // good, bad, timeout -> descriptor
  std::vector<std::pair<std::string, std::string>> made_;  // (folder, name) of each candidate
  FILE* verdicts_ = nullptr;
};

// Opens `name` under `at` as a folder, not following a link; throws naming `path`.
static int openFolder(int at, const std::string& name, const std::string& path) {
  const int fd = ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw Error(Error::Kind::Io, path + ": cannot open the folder (" +
                                     (errno == ELOOP ? std::string("a symbolic link") : std::strerror(errno)) + ")");
  return fd;
}

// Whether the folder open at `fd` holds nothing.
static bool emptyFolder(int fd) {
  DIR* d = ::fdopendir(::dup(fd));
  if (!d) return false;
  bool empty = true;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) empty = false;
  ::closedir(d);
  return empty;
}

static Error notEmpty(const std::string& dir) {
  return Error(Error::Kind::Usage, "--artifacts " + dir + ": not empty (not overwriting an earlier run's candidates)");
}

// --artifacts names a new or empty folder: the candidates of an earlier run are not overwritten.
// Checked before the first replay; Artifacts checks again on the folder it then opens.
static void checkArtifacts(const std::string& dir) {
  if (dir.empty()) return;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return;
  if (fd < 0) openFolder(AT_FDCWD, dir, "--artifacts " + dir);  // throws, saying why
  const bool empty = emptyFolder(fd);
  ::close(fd);
  if (!empty) throw notEmpty(dir);
}

Artifacts::Artifacts(const std::string& dir) : dir_(dir), keep_(!dir.empty()) {
  if (!keep_) {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/trtrace-reduce-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw Error(Error::Kind::Io, tmpl + ": cannot create (" + std::strerror(errno) + ")");
    dir_ = tmpl;
  } else if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    throw Error(Error::Kind::Io, dir_ + ": cannot create the folder (" + std::strerror(errno) + ")");
  }
  fd_ = openFolder(AT_FDCWD, dir_, "--artifacts " + dir_);
  if (keep_ && !emptyFolder(fd_)) throw notEmpty(dir_);
  makeFolders();
  const int vf = ::openat(fd_, "verdicts.tsv", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (vf < 0 || !(verdicts_ = ::fdopen(vf, "w"))) {
    if (vf >= 0) ::close(vf);
    throw Error(Error::Kind::Io, dir_ + "/verdicts.tsv: cannot create (" + std::strerror(errno) + ")");
  }
  std::fprintf(verdicts_, "candidate\tverdict\tlayers\tcalls\tweight_bytes\tresult\n");
}

// good/, bad/ and timeout/, new: a name already there was planted since the emptiness check.
void Artifacts::makeFolders() {
  for (const char* f : {"good", "bad", "timeout"}) {
    if (::mkdirat(fd_, f, 0755) != 0)
      throw Error(Error::Kind::Io, dir_ + "/" + f + ": cannot create the folder (" + std::strerror(errno) + ")");
    sub_[f] = openFolder(fd_, f, dir_ + "/" + f);
  }
}

Artifacts::~Artifacts() {
  if (verdicts_) std::fclose(verdicts_);
  if (!keep_ && fd_ >= 0) {
    for (const auto& [folder, file] : made_) ::unlinkat(sub_[folder], file.c_str(), 0);
    ::unlinkat(fd_, "verdicts.tsv", 0);
    for (const auto& f : sub_) ::unlinkat(fd_, f.first.c_str(), AT_REMOVEDIR);
    ::rmdir(dir_.c_str());
  }
  for (const auto& f : sub_) ::close(f.second);
  if (fd_ >= 0) ::close(fd_);
}

int Artifacts::create(size_t n) {
  const int fd = ::openat(fd_, name(n).c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(Error::Kind::Io, pending(n) + ": cannot create (" + std::strerror(errno) + ")");
  return fd;
}

void Artifacts::record(size_t n, const ReduceChecker::Verdict& v, const Size& s, const std::string& why) {
  const std::string folder = v.fails ? "bad" : v.timedOut ? "timeout" : "good";
  if (::renameat2(fd_, name(n).c_str(), sub_[folder], name(n).c_str(), RENAME_NOREPLACE) != 0)
    throw Error(Error::Kind::Io, dir_ + "/" + folder + "/" + name(n) + ": cannot move the candidate there (" +
                                     std::strerror(errno) + ")");
  made_.emplace_back(folder, name(n));
  std::string result = why;
  for (char& c : result)
    if (c == '\t' || c == '\n') c = ' ';
  std::fprintf(verdicts_, "%s\t%s\t%zu\t%zu\t%llu\t%s\n", name(n).c_str(), folder.c_str(), s.layers, s.calls,
               (unsigned long long)s.weightBytes, result.c_str());
  std::fflush(verdicts_);
}

namespace {

// The search: ddmin over the kept layers, then single removals until none keeps the failure.
class Reducer {
 public:
  Reducer(const Reader& r, const ReduceGraph& g, const ReduceChecker& check, Artifacts& art)
      : r_(r), g_(g), check_(check), art_(art) {
    for (size_t l = 0; l < g.layerCount(); ++l) kept_.push_back(l);
  }
  const std::vector<size_t>& run();
  size_t candidates() const { return n_; }
  size_t timeouts() const { return timeouts_; }

 private:
  bool tryKeeping(const std::vector<size_t>& keep);
  Size writeCandidate(size_t n, const ReduceGraph::Plan& p);
  ReduceChecker::Verdict judge(size_t n);
  void ddmin();
  void linear();

  const Reader& r_;
  const ReduceGraph& g_;
  const ReduceChecker& check_;
  Artifacts& art_;
  std::vector<size_t> kept_;
  std::map<std::vector<bool>, bool> tried_;  // plan (removed layers) -> still fails
  size_t n_ = 0, timeouts_ = 0;
};

// Candidate n, written into its new file in the artifacts folder (removed again if writing fails).
Size Reducer::writeCandidate(size_t n, const ReduceGraph::Plan& p) {
  const int fd = art_.create(n);
  try {
    const Size s = writeTrace(r_, p, fd, art_.pending(n));
    ::close(fd);
    return s;
  } catch (...) {
    ::close(fd);
    art_.discard(n);
    throw;
  }
}

// Candidate n's verdict; a candidate with none (interrupted, or the check could not start) goes.
ReduceChecker::Verdict Reducer::judge(size_t n) {
  try {
    return check_.run(art_.pending(n));
  } catch (...) {
    art_.discard(n);
    throw;
  }
}

// Replays the candidate that keeps only `keep` (and what the plan's closure leaves of it); on a
// failure like the input's, that becomes the kept set.
bool Reducer::tryKeeping(const std::vector<size_t>& keep) {
  std::vector<bool> removed(g_.layerCount(), true);
  for (size_t l : keep) removed[l] = false;
  ReduceGraph::Plan p = g_.plan(std::move(removed));
  auto [it, fresh] = tried_.emplace(p.removed, false);
  if (fresh) {
    const size_t n = ++n_;
    const Size s = writeCandidate(n, p);
    const ReduceChecker::Verdict v = judge(n);
    it->second = v.fails;
    timeouts_ += v.timedOut && !v.fails;
    const std::string why = check_.describe(v);
    art_.record(n, v, s, why);
    std::fprintf(stderr, "trtrace reduce: candidate %zu: %zu of %zu layers, %zu calls: %s (%s)\n", n, s.layers,
                 g_.layerCount(), s.calls,
                 v.fails      ? "fails"
                 : v.timedOut ? "times out"
                              : "passes",
                 why.c_str());
  }
  if (!it->second) return false;
  kept_.clear();
  for (size_t l = 0; l < g_.layerCount(); ++l)
    if (!p.removed[l]) kept_.push_back(l);
  return true;
}

void Reducer::ddmin() {
  size_t parts = 2;
  while (kept_.size() >= 2) {
    bool reduced = false;
    const std::vector<size_t> cur = kept_;
    for (size_t i = 0; i < parts && !reduced; ++i) {
      const size_t lo = cur.size() * i / parts, hi = cur.size() * (i + 1) / parts;
      std::vector<size_t> rest(cur.begin(), cur.begin() + lo);
      rest.insert(rest.end(), cur.begin() + hi, cur.end());
      reduced = lo < hi && tryKeeping(rest);
    }
    if (reduced)
      parts = std::max<size_t>(parts - 1, 2);
    else if (parts >= cur.size())
      break;
    else
      parts = std::min(parts * 2, cur.size());
  }
}

void Reducer::linear() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < kept_.size();) {
      std::vector<size_t> rest = kept_;
      rest.erase(rest.begin() + long(i));
      if (tryKeeping(rest))
        changed = true;
      else
        ++i;
    }
  }
}

const std::vector<size_t>& Reducer::run() {
  ddmin();
  linear();
  return kept_;
}

}  // namespace

static int runReduce(const ReduceOptions& o) {
  InterruptScope interruptible;  // ^C: the candidate running ends, what was made goes (child_run.h)
  auto r = convert::openCapture(o.in);
  if (r->truncatedAt())
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; not reducing a truncated trace");
  files::PendingOutputs outputs;  // MIN is never IN, and appears complete or not at all
  const int outFd = outputs.add(o.out);
  checkArtifacts(o.artifacts);
  ReduceChecker check(o);
  const ReduceGraph g(*r);
  const ReduceChecker::Verdict base = check.run(o.in);
  if (!base.fails) {
    std::fprintf(stderr, "trtrace: %s: does not fail (%s); nothing to reduce\n", o.in.c_str(),
                 check.describe(base).c_str());
    return kNotFailing;
  }
  if (o.check.empty() && o.failCode == std::nullopt && o.failRegex.empty()) check.expect(base.line);
  std::fprintf(stderr, "trtrace reduce: %s fails (%s); %zu layers\n", o.in.c_str(), check.describe(base).c_str(),
               g.layerCount());
  Artifacts art(o.artifacts);
  Reducer red(*r, g, check, art);
  std::vector<bool> removed(g.layerCount(), true);
  for (size_t l : red.run()) removed[l] = false;
  if (red.timeouts())
    std::fprintf(stderr,
                 "trtrace reduce: %zu candidates ran past --timeout %g s: counted as not failing "
                 "(--fail-code 124 makes a hang the failure)\n",
                 red.timeouts(), o.timeout);
  const Size before = writePlan(*r, g.whole(), nullptr);
  WriterOptions wo;
  wo.fd = outFd;
  wo.path = o.out;
  auto w = Writer::create(wo, headerOf(*r));
  const Size after = writePlan(*r, g.plan(std::move(removed)), w.get());
  InterruptScope::check();
  outputs.commit();
  if (o.json)
    std::printf(
        "{\"output\":%s,\"layers\":[%zu,%zu],\"calls\":[%zu,%zu],\"weight_bytes\":[%llu,%llu],"
        "\"candidates\":%zu,\"failure\":%s}\n",
        jsonString(o.out).c_str(), before.layers, after.layers, before.calls, after.calls,
        (unsigned long long)before.weightBytes, (unsigned long long)after.weightBytes, red.candidates(),
        jsonString(check.describe(base)).c_str());
  else
    std::printf("%s: layers %zu → %zu, calls %zu → %zu, weights %s → %s (%zu candidates; still fails: %s)\n",
                o.out.c_str(), before.layers, after.layers, before.calls, after.calls,
                humanBytes(double(before.weightBytes)).c_str(), humanBytes(double(after.weightBytes)).c_str(),
                red.candidates(), check.describe(base).c_str());
  return kOk;
}

Command addReduce(CLI::App& app) {
  auto o = std::make_shared<ReduceOptions>();
  auto* sub = app.add_subcommand(
      "reduce",
      "Shrink a capture whose build fails to the fewest layers that still fail the same way (delta debugging; each "
      "candidate replayed in a child process)");
  sub->add_option("in", o->in, "Input trace (its build must fail)")->required();
  sub->add_option("-o,--output", o->out, "The reduced trace (written to a temp file, then renamed)")->required();
  sub->add_option("--check", o->check,
                  "Command that judges a candidate (run by /bin/sh; {} is replaced by the candidate's path, quoted, "
                  "else the path is appended); default: tensorrt_player -q [--lib PATH] <candidate>");
  sub->add_option("--fail-regex", o->failRegex, "A candidate fails when a line of the command's output matches this");
  sub->add_option("--fail-code", o->failCode, "A candidate fails when the command exits with this code (124: a hang)")
      ->check(CLI::Range(0, 255));
  sub->add_option("--artifacts", o->artifacts, "Keep every candidate here: good/, bad/ (still fails), verdicts.tsv");
  sub->add_option("--timeout", o->timeout, "Seconds one candidate may run before it is killed (default 300)")
      ->check(kSeconds);
  sub->add_option("--lib", o->lib, "The real library the default check's player loads");
  sub->add_flag("--json", o->json, "Machine-readable report");
  return {sub, [o] { return runReduce(*o); }};
}

}  // namespace trtrace::cli
