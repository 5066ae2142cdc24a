// What both directions of the converter share (common.h): input detection, the BIN beside a JSON,
// mapped inputs released as they are consumed, weight sizes, Python's repr() of a double, and the
// spec by name for NVIDIA's "class"/"function".
#include "common.h"

#include "trtrace/api_abi.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/format.h"
#include "trtrace/writer.h"

namespace trtrace::convert {

FileKind detect(const std::string& path) {
  const int fd = files::openInput(path);  // a regular file (a FIFO would hang a plain open)
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  std::string_view head(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (format::hasFileMagic(head)) return FileKind::Trace;
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return FileKind::Json;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);  // UTF-8 byte order mark
  const size_t i = head.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && head[i] == '{' ? FileKind::Json : FileKind::Other;
}

std::string binPathFor(const std::string& p) {
  if (p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0) return p.substr(0, p.size() - 5) + ".bin";
  return p + ".bin";
}

MappedFile::MappedFile(const std::string& path, size_t padding, const char* what) {
  const int fd = files::openInput(path);  // a regular file, or one line naming what it is
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(Error::Kind::Io, path + ": cannot open (" + std::strerror(errno) + ")");
  }
  size_ = static_cast<size_t>(st.st_size);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  mapped_ = (size_ + padding + page - 1) / page * page + (padding ? page : 0);
  if (mapped_ == 0) {
    ::close(fd);
    return;
  }
  // Anonymous zero pages first (the padding), then the file over their start.
  void* base = ::mmap(nullptr, mapped_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    ::close(fd);
    throw Error(Error::Kind::Io, path + ": cannot map " + what + " (" + std::strerror(errno) + ")");
  }
  base_ = static_cast<char*>(base);
  if (size_ && ::mmap(base_, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    int e = errno;
    ::munmap(base_, mapped_);
    ::close(fd);
    base_ = nullptr;
    throw Error(Error::Kind::Io, path + ": cannot map " + what + " (" + std::strerror(e) + ")");
  }
  ::close(fd);
  if (size_) ::madvise(base_, size_, MADV_SEQUENTIAL);
  data_ = base_;
}

MappedFile::~MappedFile() {
  if (base_) ::munmap(base_, mapped_);
}

void MappedFile::release(size_t upTo) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  upTo = std::min(upTo, size_) / page * page;             // whole pages: the next step starts where this ends
  if (!base_ || upTo <= released_ + (16u << 20)) return;  // in steps of 16 MiB
  files::releasePages(base_ + released_, upTo - released_);
  released_ = upTo;
}

void MappedFile::releaseAll() {
  if (base_ && size_) files::releasePages(base_, size_);
}

uint64_t weightBytes(uint32_t dtype, uint64_t n) {
  // The spec's element sizes (generated); counts beyond int64 saturate like any hostile count.
  return n > uint64_t(INT64_MAX) ? UINT64_MAX
                                 : abi::weightBytes(static_cast<abi::DataType>(dtype), static_cast<int64_t>(n));
}

void appendDouble(std::string& out, double v) {
  // JSON has no NaN or infinities: null, as NVIDIA's shim writes them (docs/json-bin-layout.md, §6).
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));  // [-]d[.ddd]e[+-]XX
  bool neg = s[0] == '-';
  if (neg) s.remove_prefix(1);
  size_t epos = s.find('e');
  int exp = std::atoi(std::string(s.substr(epos + 1)).c_str());
  std::string digits;
  for (char c : s.substr(0, epos))
    if (c != '.') digits += c;
  if (neg) out += '-';
  const int decpt = exp + 1;  // value = 0.digits * 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(decpt));
      out += '.';
      out.append(digits, static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
}

namespace {

// Where NVIDIA's JSON departs from the spec's parameter names: arguments its shim (0.4.0 with
// TensorRT-RTX 1.6, 0.5.0 with 1.7) never writes, whatever their value, each with the library's
// default enumerator to stand in (tests/convert/test_builder_settings.py captures every builder
// setting with both shims; every other argument key is the spec's parameter name).
struct Omission {
  std::string_view iface, method, param, fallback;
};
constexpr Omission kNvidiaOmits[] = {
    {"BuilderConfig", "setRuntimePlatform", "runtimePlatform", "kSAME_AS_BUILD"},
};

// Resolves kNvidiaOmits against the spec; a name the spec lacks is this table's bug.
void addOmissions(Spec& sp) {
  for (const Omission& o : kNvidiaOmits) {
    bool found = false;
    for (const api::ApiDesc* d : sp.lookup(o.iface, o.method)) {
      for (uint32_t i = 0; i < d->nargs; ++i) {
        if (d->args[i] != o.param || d->params[i].kind != api::Kind::Enum) continue;
        const std::optional<int64_t> v = api::enumeratorValue(d->params[i].enumId, o.fallback);
        if (!v) break;
        sp.omittedArgs[uint64_t(d->id) << 32 | i] = NvidiaOmitted{*v, o.fallback};
        found = true;
      }
    }
    if (!found)
      throw std::logic_error("kNvidiaOmits: " + std::string(o.iface) + "::" + std::string(o.method) +
                             " has no enum parameter " + std::string(o.param) + " with enumerator " +
                             std::string(o.fallback));
  }
}

}  // namespace

const Spec& Spec::get() {
  static const Spec s = [] {
    Spec sp;
    uint32_t n = 0;
    const api::ApiDesc* all = api::all(&n);
    for (uint32_t i = 0; i < n; ++i) {
      sp.byName[std::string(all[i].interface)][std::string(all[i].method)].push_back(&all[i]);
    }
    addOmissions(sp);
    return sp;
  }();
  return s;
}

const NvidiaOmitted* Spec::omitted(uint32_t apiId, uint32_t param) const {
  auto it = omittedArgs.find(uint64_t(apiId) << 32 | param);
  return it == omittedArgs.end() ? nullptr : &it->second;
}

const std::vector<const api::ApiDesc*>& Spec::lookup(std::string_view iface, std::string_view method) const {
  static const std::vector<const api::ApiDesc*> none;
  auto it = byName.find(iface);
  if (it == byName.end()) return none;
  auto m = it->second.find(method);
  return m == it->second.end() ? none : m->second;
}

}  // namespace trtrace::convert
