// A main() for the fuzz targets when they are not linked with libFuzzer (the g++ and sanitizer
// trees): runs every file named on the command line (or found in a named directory) through
// LLVMFuzzerTestOneInput once. CTest uses it to replay the seed corpus and every kept crash input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t n = 0;
  auto runFile = [&](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::vector<uint8_t> d{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    static const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(d.empty() ? &empty : d.data(), d.size());
    ++n;
  };
  for (int i = 1; i < argc; ++i) {
    fs::path p = argv[i];
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (auto& f : files) runFile(f);
    } else if (fs::exists(p)) {
      runFile(p);
    }
  }
  std::printf("%s: %zu inputs, no crash\n", argc ? argv[0] : "fuzz", n);
  return 0;
}
