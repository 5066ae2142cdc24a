// trtrace rewrite IN OUT --raw|--compress: re-stores every blob raw (fastest zero-copy replay) or
// compressed (smallest). The call log's segments are copied one by one, each stored zstd-compressed
// when that pays (--log-level 0: raw). OUT appears only when complete, never over IN (trtrace/files.h).
// Damage is never laundered: every blob's content hash is checked (Reader::checkedBlob) before it
// is copied, and a damaged or missing blob stops the rewrite (exit 2) unless --salvage, which
// drops the damaged blobs and keeps the calls before the first call that uses one (a clean prefix,
// like a truncated trace's), and says what it dropped.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_set>
#include <vector>

#include "commands.h"
#include "trace_edit.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace trtrace::cli {

struct RewriteOptions {
  std::string in, out;
  bool raw = false, compress = false, noByteGroup = false, salvage = false, sync = false;
  int level = 3, threads = 2, logLevel = 3;
};

namespace {

// The seq of the first call that references a blob in `damaged` or one the trace does not hold
// (UINT64_MAX: none), and that blob's name for the report.
uint64_t firstCallUsing(const Reader& r, const std::unordered_set<BlobRef, BlobRefHasher>& damaged, std::string& which) {
  uint64_t cut = UINT64_MAX;
  r.forEachCall([&](const CallView& c) {
    auto bad = [&](const ValueView& v) {
      if (v.kind() != ValueKind::WeightsBlob) return false;
      const BlobRef b = v.blob();
      if (!damaged.count(b) && r.hasBlob(b)) return false;
      which = "blob " + toHex(b.hash) + (r.hasBlob(b) ? " (damaged)" : " (not in the trace)");
      return true;
    };
    bool uses = false;
    for (size_t i = 0; i < c.argCount() && !uses; ++i) uses = bad(c.arg(i));
    if (!uses && c.ret()) uses = bad(*c.ret());
    if (uses) cut = c.seq();
    return !uses;
  });
  return cut;
}

// Copies the call log up to (not including) call `cut`: whole segments, then the cut one's prefix.
void copyCalls(const Reader& r, Writer& w, uint64_t cut) {
  for (size_t i = 0; i < r.segmentCount(); ++i) {
    const SegmentInfo si = r.segmentInfo(i);
    if (si.firstSeq >= cut) break;
    if (cut - si.firstSeq >= si.calls) w.appendSegment(r.segmentBytes(i).bytes());
    else w.appendSegment(r.segmentPrefix(i, static_cast<uint32_t>(cut - si.firstSeq)).bytes());
  }
}

// Copies every blob, content-checked; damaged ones are refused, or with --salvage dropped and
// returned. Decompressed buffers stay alive until the workers consumed them (bounded). In the
// input's file order: read sequentially, and written in the order the capture used them, which
// the player's reads then follow too.
std::unordered_set<BlobRef, BlobRefHasher> copyBlobs(const Reader& r, Writer& w, const RewriteOptions& o, uint64_t queueBytes) {
  std::vector<BlobView> held;
  uint64_t heldBytes = 0, total = 0, done = 0;
  std::vector<const BlobInfo*> inFileOrder;
  for (auto& b : r.blobs()) total += b.ref.length, inFileOrder.push_back(&b);
  std::sort(inFileOrder.begin(), inFileOrder.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  Progress progress("trtrace rewrite " + o.out, total);
  std::unordered_set<BlobRef, BlobRefHasher> damaged;
  for (const BlobInfo* pb : inFileOrder) {
    const BlobInfo& b = *pb;
    progress.update(done);
    done += b.ref.length;
    if (b.lost) {  // kept as the input has it (a Lost copy beside a stored one too)
      w.putLostBlob(b.ref, b.hint);
      continue;
    }
    BlobView v;
    try {
      v = r.checkedBlob(b.ref);
    } catch (const Error& e) {
      if (!o.salvage) throw Error(Error::Kind::Corrupt, std::string(e.what()) + "; use --salvage to keep the calls before the first one that uses it");
      std::fprintf(stderr, "trtrace: salvage: %s: dropped\n", e.what());
      damaged.insert(b.ref);
      continue;
    }
    w.putBlob(v.data(), v.size(), b.hint);
    if (!v.isZeroCopy()) { heldBytes += v.size(); held.push_back(std::move(v)); }
    if (heldBytes > queueBytes) { w.drainBlobs(); held.clear(); heldBytes = 0; }
  }
  w.drainBlobs();
  return damaged;
}

}  // namespace

static int runRewrite(const RewriteOptions& o) {
  auto r = Reader::open(o.in);
  if (r->truncatedAt() && !o.salvage)
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; use --salvage to rewrite the readable prefix");
  if (r->callCount() == 0)
    throw Error(Error::Kind::Empty, (r->truncatedAt() ? r->truncationMessage() + "; no calls before it" : o.in + ": holds no calls") +
                                        " (nothing to rewrite)");
  files::PendingOutputs outputs;  // OUT is never IN (same file by device and inode), and appears complete or not at all
  WriterOptions wo;
  wo.fd = outputs.add(o.out);
  wo.path = o.out;
  wo.zstdLevel = o.raw ? 0 : o.level;
  wo.byteGrouping = !o.noByteGroup;
  wo.logZstdLevel = o.logLevel;
  wo.workerThreads = o.threads;
  wo.durable = o.sync;
  if (o.compress) wo.minCompressBytes = 0;  // asked for: every blob where zstd pays, small ones too
  auto w = Writer::create(wo, headerOf(*r));
  const auto damaged = copyBlobs(*r, *w, o, wo.queueBytes);
  std::string which;
  const uint64_t cut = firstCallUsing(*r, damaged, which);
  if (cut != UINT64_MAX && !o.salvage)
    throw Error(Error::Kind::Corrupt, o.in + ": call #" + std::to_string(cut) + " uses " + which +
                                          "; use --salvage to keep the calls before it");
  if (cut != UINT64_MAX)
    std::fprintf(stderr, "trtrace: salvage: %s: call #%llu uses %s: kept the %llu calls before it, dropped the other %llu\n",
                 o.in.c_str(), (unsigned long long)cut, which.c_str(), (unsigned long long)cut,
                 (unsigned long long)(r->callCount() - cut));
  if (cut == 0) throw Error(Error::Kind::Empty, o.in + ": no call before the first damaged one (nothing to rewrite)");
  copyCalls(*r, *w, cut);
  w->close();
  outputs.commit(o.sync);
  auto st = w->stats();
  std::printf("%s: %llu blobs, %s stored (%llu compressed), %llu calls\n", o.out.c_str(),
              (unsigned long long)st.uniqueBlobs, humanBytes(double(st.storedBytes)).c_str(),
              (unsigned long long)st.compressedBlobs, (unsigned long long)st.calls);
  return kOk;
}

Command addRewrite(CLI::App& app) {
  auto o = std::make_shared<RewriteOptions>();
  auto* sub = app.add_subcommand("rewrite", "Re-store a trace's blobs raw (fast replay) or compressed (storage)");
  sub->add_option("in", o->in, "Input trace")->required();
  sub->add_option("out", o->out, "Output trace (written to a temp file, then renamed)")->required();
  auto* raw = sub->add_flag("--raw", o->raw, "Store every blob raw, 4 KiB aligned");
  auto* comp = sub->add_flag("--compress", o->compress, "Compress blobs with zstd where it saves (small ones too)");
  raw->excludes(comp);
  sub->add_option("--level", o->level, "zstd level for --compress")->check(CLI::Range(1, 22));
  sub->add_option("--log-level", o->logLevel, "zstd level for call-log segments (0: store them raw)")
      ->check(CLI::Range(0, 22));
  sub->add_flag("--no-byte-group", o->noByteGroup, "Disable the fp16/bf16/fp32 byte-grouping transform");
  sub->add_option("--threads", o->threads, "Compression threads")->check(CLI::Range(0, 64));
  sub->add_flag("--sync", o->sync, "wait until OUT is on the disk (fdatasync) before it is complete");
  sub->add_flag("--salvage", o->salvage,
                "Rewrite what can be kept of a truncated or damaged trace: its readable prefix, without damaged "
                "blobs and the calls from the first one that uses one");
  return {sub, [o, sub] {
    if (!o->raw && !o->compress) throw Error(Error::Kind::Usage, "rewrite: choose --raw or --compress");
    return runRewrite(*o);
  }};
}

}  // namespace trtrace::cli
