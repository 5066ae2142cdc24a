#include "sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trtrace/error.h"

namespace trtrace::registry {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw Error("SHA-256: cannot initialise OpenSSL's digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(const void* data, size_t n) {
  if (n) EVP_DigestUpdate(ctx_->md, data, n);
}

std::string Sha256::digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->md, out, &n);
  static const char* hex = "0123456789abcdef";
  std::string s = "sha256:";
  for (unsigned i = 0; i < n; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

std::string sha256Digest(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.digest();
}

void writeAt(int fd, const std::string& name, uint64_t offset, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n) {
    const ssize_t k = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw Error(name + ": cannot write at offset " + std::to_string(offset) + ": " + std::strerror(errno));
    p += k, offset += static_cast<uint64_t>(k), n -= static_cast<size_t>(k);
  }
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

void readAt(int fd, const std::string& name, uint64_t offset, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw Error(name + ": cannot read at offset " + std::to_string(offset) + ": " +
                  (got ? std::strerror(errno) : "end of file"));
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

std::string sha256OfRanges(int fd, const std::string& name, const std::vector<Range>& ranges) {
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (const Range& r : ranges)
    for (uint64_t done = 0; done < r.size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), r.size - done));
      readAt(fd, name, r.offset + done, buf.data(), n);
      h.update(buf.data(), n);
      done += n;
    }
  return h.digest();
}

}  // namespace trtrace::registry
