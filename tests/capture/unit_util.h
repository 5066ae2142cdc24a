// Helpers for the capture unit tests: an environment of our own, and a private temporary folder.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>

#include "config.h"

namespace capture_test {

// An EnvLookup over a map, with the process environment's convention: empty is unset.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  trtrace::capture::EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() || it->second.empty() ? nullptr : it->second.c_str();
    };
  }
};

// A fresh folder no other process can guess (mkdtemp), removed afterwards.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trtrace_capture_unit_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

}  // namespace capture_test
