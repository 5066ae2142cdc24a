// Version, build id and discovery of the real TensorRT-RTX library (library.h).
#include "library.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace trtrace::lib {
namespace {

struct NoteSearch {
  uintptr_t base;   // the library's load bias (link_map l_addr)
  std::string hex;  // the build id found
};

// dl_iterate_phdr callback: in the object loaded at `base`, the PT_NOTE entry NT_GNU_BUILD_ID.
int findBuildId(struct dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<NoteSearch*>(data);
  if (info->dlpi_addr != s->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((n->n_namesz + 3) & ~3u);
      if (desc + n->n_descsz > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char* digits = "0123456789abcdef";
        for (uint32_t k = 0; k < n->n_descsz; ++k) {
          const auto b = static_cast<unsigned char>(desc[k]);
          s->hex += digits[b >> 4];
          s->hex += digits[b & 15];
        }
        return 1;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

// The version of a tensorrt_rtx_libs folder, from the package's dist-info beside it ("" if none).
std::string packageVersion(const std::string& libsDir) {
  const std::string site = libsDir.substr(0, libsDir.find_last_of('/'));
  std::string found;
  if (DIR* d = opendir(site.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;  // tensorrt_rtx_cu13_libs-1.7.1.116.dist-info
      const size_t dash = n.find("_libs-");
      if (n.rfind("tensorrt_rtx", 0) == 0 && dash != std::string::npos && n.size() > 10 &&
          n.compare(n.size() - 10, 10, ".dist-info") == 0)
        found = n.substr(dash + 6, n.size() - 10 - dash - 6);
    }
    closedir(d);
  }
  return found;
}

// tensorrt_rtx_libs folders of the active virtual environment (no process started).
std::vector<std::string> venvLibDirs() {
  std::vector<std::string> out;
  const char* venv = std::getenv("VIRTUAL_ENV");
  if (!venv || !*venv) return out;
  const std::string lib = std::string(venv) + "/lib";
  if (DIR* d = opendir(lib.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "python3", 7) == 0)
        out.push_back(lib + "/" + e->d_name + "/site-packages/tensorrt_rtx_libs");
    closedir(d);
  }
  return out;
}

// The tensorrt_rtx_libs of the Python environment trtrace itself is installed in (the wheel's
// layout: <site-packages>/trtrace/{bin,lib}/<this file> beside <site-packages>/tensorrt_rtx_libs);
// "" elsewhere (a source build or an install prefix).
std::string ownEnvironmentLibDir() {
  Dl_info info{};
  std::string self;
  if (dladdr(reinterpret_cast<void*>(&ownEnvironmentLibDir), &info) && info.dli_fname) self = info.dli_fname;
  if (self.size() < 3 || self.compare(self.size() - 3, 3, ".so") != 0) {  // linked into a program
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    self = n > 0 ? std::string(buf, size_t(n)) : "";
  }
  for (int up = 0; up < 3 && !self.empty(); ++up) self = self.substr(0, self.find_last_of('/'));
  return self.empty() ? "" : self + "/tensorrt_rtx_libs";
}

bool exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string pythonLibDir(const std::string& python) {
  std::string quoted = "'";
  for (char c : python) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  FILE* f = popen(
      (quoted + " -c 'import os, tensorrt_rtx_libs as l; print(os.path.dirname(l.__file__))' 2>/dev/null").c_str(),
      "r");
  if (!f) return {};
  char buf[4096] = {};
  std::string out = std::fgets(buf, sizeof buf, f) ? buf : "";
  pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

LibraryInfo inspect(void* handle) {
  LibraryInfo info;
  using IntFn = int32_t (*)();
  if (auto v = reinterpret_cast<IntFn>(dlsym(handle, "getInferLibVersion"))) info.code = v();
  if (auto b = reinterpret_cast<IntFn>(dlsym(handle, "getInferLibBuildVersion"))) info.build = b();
  if (info.code > 0)
    info.version = std::to_string(info.code / 10000) + "." + std::to_string(info.code / 100 % 100) + "." +
                   std::to_string(info.code % 100) + "." + std::to_string(info.build);
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
    info.path = lm->l_name ? lm->l_name : "";
    NoteSearch s{static_cast<uintptr_t>(lm->l_addr), {}};
    dl_iterate_phdr(findBuildId, &s);
    info.buildId = s.hex;
  }
  return info;
}

Loaded load(const std::vector<Candidate>& candidates, const void* self, std::string& tried) {
  for (const Candidate& c : candidates) {
    const std::string sep = tried.empty() ? "" : "; ";
    void* h = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      tried += sep + dlerror();
      continue;
    }
    void* sym = dlsym(h, "createInferBuilder_INTERNAL");
    if (sym && sym != self) return {h, inspect(h), c.how};
    tried += sep + c.path +
             (sym ? ": is the shim, not the real library" : ": no createInferBuilder_INTERNAL (not TensorRT-RTX?)");
    dlclose(h);
  }
  return {};
}

Support support(int32_t code) {
  const int32_t mm = code / 100 * 100;
  const auto& base = abi::kSpecVersions[0];
  const auto& newest = abi::kSpecVersions[abi::kNumSpecVersions - 1];
  if (code / 10000 != base.code / 10000) return Support::OtherMajor;
  if (mm < base.code) return Support::OlderMinor;
  if (mm > newest.code) return Support::NewerMinor;
  for (const auto& v : abi::kSpecVersions)
    if (v.code == mm) return Support::Described;
  return Support::NewerMinor;  // a minor between two spec'd ones: the older one's methods are known
}

const abi::SpecVersion* specFor(int32_t code) {
  const Support s = support(code);
  if (s == Support::OtherMajor || s == Support::OlderMinor) return nullptr;
  const abi::SpecVersion* best = nullptr;
  for (const auto& v : abi::kSpecVersions)
    if (v.code <= code / 100 * 100) best = &v;
  return best;
}

int32_t versionCode(const std::string& text) {
  int a = 0, b = 0, c = 0;
  if (std::sscanf(text.c_str(), "%d.%d.%d", &a, &b, &c) < 2 || a < 0 || b < 0 || b > 99 || c < 0 || c > 99) return 0;
  return a * 10000 + b * 100 + c;
}

std::string majorMinor(int32_t code) { return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100); }

std::vector<Candidate> candidates(const std::string& explicitPath, int32_t want, bool askPython) {
  if (!explicitPath.empty()) return {{explicitPath, "--lib"}};
  if (const char* v = std::getenv("TRT_SHIM_NVINFER_LIB_NAME"); v && *v) return {{v, "TRT_SHIM_NVINFER_LIB_NAME"}};
  std::vector<std::pair<std::string, std::string>> dirs;  // (folder, where from)
  for (const auto& d : venvLibDirs()) dirs.emplace_back(d, "the active virtual environment");
  if (std::string d = ownEnvironmentLibDir(); !d.empty()) dirs.emplace_back(d, "trtrace's Python environment");
  if (askPython)
    if (std::string d = pythonLibDir("python3"); !d.empty()) dirs.emplace_back(d, "python3");
  std::vector<Candidate> same, other;
  for (const auto& [dir, from] : dirs) {
    const std::string file = dir + "/libtensorrt_rtx.so.1";
    if (!exists(file)) continue;
    const std::string ver = packageVersion(dir);
    Candidate c{file, "tensorrt_rtx_libs " + (ver.empty() ? std::string("(version unknown)") : ver) + " of " + from};
    bool dup = false;
    for (const auto& x : same) dup |= x.path == file;
    for (const auto& x : other) dup |= x.path == file;
    if (dup) continue;
    (want && versionCode(ver) / 100 == want / 100 ? same : other).push_back(c);
  }
  std::vector<Candidate> out = same;
  out.insert(out.end(), other.begin(), other.end());
  out.push_back({"libtensorrt_rtx.so", "loader path"});
  out.push_back({"libtensorrt_rtx.so.1", "loader path"});
  return out;
}

}  // namespace trtrace::lib
