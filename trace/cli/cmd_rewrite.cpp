// trtrace rewrite IN OUT --raw|--compress: re-stores every blob raw (fastest zero-copy replay) or
// compressed (smallest). The call log's segments are copied one by one, each stored zstd-compressed
// when that pays (--log-level 0: raw). OUT appears only when complete (temp+rename).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "commands.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace trtrace::cli {

struct RewriteOptions {
  std::string in, out;
  bool raw = false, compress = false, noByteGroup = false, salvage = false;
  int level = 3, threads = 2, logLevel = 3;
};

static int runRewrite(const RewriteOptions& o) {
  auto r = Reader::open(o.in);
  if (r->truncatedAt() && !o.salvage)
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; use --salvage to rewrite the readable prefix");
  HeaderInfo hi;
  auto& h = r->header();
  hi.producer = std::string(h.producer);
  hi.producerVersion = std::string(h.producerVersion);
  hi.libraryName = std::string(h.libraryName);
  hi.libraryVersion = std::string(h.libraryVersion);
  hi.libraryBuildId = std::string(h.libraryBuildId);
  for (auto& [k, v] : h.settings) hi.settings.emplace_back(std::string(k), std::string(v));
  hi.host = std::string(h.host);
  hi.pid = h.pid;
  hi.startTimeNs = h.startTimeNs;
  WriterOptions wo;
  std::string tmp = o.out + ".tmp." + std::to_string(::getpid());
  wo.path = tmp;
  wo.zstdLevel = o.raw ? 0 : o.level;
  wo.byteGrouping = !o.noByteGroup;
  wo.logZstdLevel = o.logLevel;
  wo.workerThreads = o.threads;
  try {
    auto w = Writer::create(wo, hi);
    // Blobs: decompressed buffers stay alive until the workers consumed them (bounded).
    std::vector<BlobView> held;
    uint64_t heldBytes = 0, total = 0, done = 0;
    for (auto& b : r->blobs()) total += b.ref.length;
    Progress progress("trtrace rewrite " + o.out, total);
    for (auto& b : r->blobs()) {
      progress.update(done);
      done += b.ref.length;
      BlobView v = r->blob(b.ref);
      w->putBlob(v.data(), v.size(), b.hint);
      if (!v.isZeroCopy()) { heldBytes += v.size(); held.push_back(std::move(v)); }
      if (heldBytes > wo.queueBytes) { w->drainBlobs(); held.clear(); heldBytes = 0; }
    }
    w->drainBlobs();
    for (size_t i = 0; i < r->segmentCount(); ++i) w->appendSegment(r->segmentBytes(i).bytes());
    w->close();
    std::filesystem::rename(tmp, o.out);
    auto st = w->stats();
    std::printf("%s: %llu blobs, %s stored (%llu compressed), %llu calls\n", o.out.c_str(),
                (unsigned long long)st.uniqueBlobs, humanBytes(double(st.storedBytes)).c_str(),
                (unsigned long long)st.compressedBlobs, (unsigned long long)st.calls);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  return kOk;
}

Command addRewrite(CLI::App& app) {
  auto o = std::make_shared<RewriteOptions>();
  auto* sub = app.add_subcommand("rewrite", "Re-store a trace's blobs raw (fast replay) or compressed (storage)");
  sub->add_option("in", o->in, "Input trace")->required();
  sub->add_option("out", o->out, "Output trace (written to a temp file, then renamed)")->required();
  auto* raw = sub->add_flag("--raw", o->raw, "Store every blob raw, 4 KiB aligned");
  auto* comp = sub->add_flag("--compress", o->compress, "Compress blobs with zstd where it saves");
  raw->excludes(comp);
  sub->add_option("--level", o->level, "zstd level for --compress")->check(CLI::Range(1, 22));
  sub->add_option("--log-level", o->logLevel, "zstd level for call-log segments (0: store them raw)")
      ->check(CLI::Range(0, 22));
  sub->add_flag("--no-byte-group", o->noByteGroup, "Disable the fp16/bf16/fp32 byte-grouping transform");
  sub->add_option("--threads", o->threads, "Compression threads")->check(CLI::Range(0, 64));
  sub->add_flag("--salvage", o->salvage, "Rewrite the readable prefix of a truncated trace");
  return {sub, [o, sub] {
    if (!o->raw && !o->compress) throw Error(Error::Kind::Usage, "rewrite: choose --raw or --compress");
    if (std::filesystem::weakly_canonical(o->in) == std::filesystem::weakly_canonical(o->out))
      throw Error(Error::Kind::Usage, "rewrite: output must differ from input");
    return runRewrite(*o);
  }};
}

}  // namespace trtrace::cli
