// libFuzzer target: what a registry sends (docs/registry.md), parsed before anything trusts it.
// Input: one selector byte, then the text:
//   0  a manifest, a NUL byte, then a config: parseManifest, then parseConfig against it;
//   1  a WWW-Authenticate value: parseChallenges;
//   2  a token endpoint's answer: tokenFromJson;
//   3  a reference: Reference::parse (a parsed one prints back to itself);
//   4  base64: base64Decode (what decodes encodes back to the same text).
// Each either succeeds with what its contract promises (asserted below) or throws trtrace::Error;
// any other exception or a crash is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "auth.h"
#include "layout.h"
#include "trtrace/error.h"
#include "trtrace/registry.h"

namespace R = trtrace::registry;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// A config accepted against its manifest: pieces in file order, apart, inside the file; each
// piece's digest one of the manifest's layers.
void manifestAndConfig(std::string_view input) {
  const size_t nul = input.find('\0');
  const R::Manifest m = R::parseManifest(input.substr(0, nul), "fuzz: manifest");
  for (const R::Descriptor& d : m.layers) check(R::validDigest(d.digest));
  if (nul == std::string_view::npos) return;
  const R::Artifact a = R::parseConfig(input.substr(nul + 1), m, "fuzz: config");
  uint64_t at = 0;
  for (const R::Piece& p : a.pieces) {
    check(p.range.offset >= at && p.range.size <= a.fileSize && p.range.offset <= a.fileSize - p.range.size);
    at = p.range.offset + p.range.size;
    bool listed = false;
    for (const R::Descriptor& d : m.layers) listed = listed || d.digest == p.digest;
    check(listed);
  }
  uint64_t gaps = 0;
  for (const R::Range& r : a.logRanges()) gaps += r.size;
  check(gaps == a.log.size);
}

void reference(std::string_view input) {
  const R::Reference r = R::Reference::parse(input);
  const R::Reference again = R::Reference::parse(r.str());
  check(again.str() == r.str() && again.host == r.host && again.repo == r.repo);
}

void base64(std::string_view input) {
  std::string bytes;
  if (R::base64Decode(input, &bytes)) check(R::base64Decode(R::base64Encode(bytes), &bytes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0: manifestAndConfig(input); break;
      case 1: R::parseChallenges(input); break;
      case 2: R::tokenFromJson(input, "fuzz: token"); break;
      case 3: reference(input); break;
      case 4: base64(input); break;
    }
  } catch (const trtrace::Error&) {}
  return 0;
}
