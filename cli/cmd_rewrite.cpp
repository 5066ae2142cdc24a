// trtrace rewrite IN -o OUT (or IN OUT) --raw|--compress [--json]: re-stores every blob raw (fastest
// zero-copy replay) or compressed (smallest). The call log's segments are copied one by one, each
// stored zstd-compressed when that pays (--log-level 0: raw). --compress never stores a blob or a segment larger than
// IN does: where re-encoding (another level, say) is not smaller, IN's encoded form is copied as is; and never makes
// the whole larger (keepInputIfSmaller). OUT appears only when complete, never over IN (trtrace/files.h). Damage is
// never laundered: every blob's content hash is checked (Reader::checkedBlob) before it is copied, and a damaged or
// missing blob stops the rewrite (exit 2) unless --salvage, which drops the damaged blobs and keeps the calls before
// the first call that uses one (a clean prefix, like a truncated trace's), and says what it dropped.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "commands.h"
#include "output_option.h"
#include "trace_edit.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/format.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"
#include "trtrace/writer.h"

namespace trtrace::cli {

struct RewriteOptions {
  std::string in, out;
  bool raw = false, compress = false, noByteGroup = false, salvage = false, sync = false, json = false;
  int level = 3, threads = 2, logLevel = 3;
};

namespace {

// The seq of the first call that references a blob in `damaged` or one the trace does not hold
// (UINT64_MAX: none), and that blob's name for the report.
uint64_t firstCallUsing(const Reader& r, const std::unordered_set<BlobRef, BlobRefHasher>& damaged,
                        std::string& which) {
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

// The payload of the block at `offset` (its header skipped), `end` its end: a view into r's mapping.
std::span<const std::byte> blockPayload(const Reader& r, uint64_t offset, uint64_t end) {
  const uint64_t at = offset + sizeof(format::BlockHeader);
  return r.mapping().subspan(at, end - at);
}

// Copies the call log up to (not including) call `cut`: whole segments, then the cut one's prefix.
// keepSmaller: a whole segment keeps its stored form where the writer's is not smaller.
void copyCalls(const Reader& r, Writer& w, uint64_t cut, bool keepSmaller) {
  for (size_t i = 0; i < r.segmentCount(); ++i) {
    const SegmentInfo si = r.segmentInfo(i);
    if (si.firstSeq >= cut) break;
    if (cut - si.firstSeq < si.calls) {
      w.appendSegment(r.segmentPrefix(i, static_cast<uint32_t>(cut - si.firstSeq)).bytes());
    } else if (keepSmaller) {
      const uint16_t flags = si.compressed ? format::kSegmentZstd : 0;
      w.appendSegment(r.segmentBytes(i).bytes(),
                      blockPayload(r, si.offset, si.offset + sizeof(format::BlockHeader) + si.storedSize), flags);
    } else {
      w.appendSegment(r.segmentBytes(i).bytes());
    }
  }
}

// How this rewrite encodes each of IN's compressed blobs (--compress): they are re-encoded into a
// scratch trace with no name, and the smaller of the two forms is kept. Damaged blobs are left out
// (copyBlobs refuses or drops them).
struct Trial {
  std::unique_ptr<Reader> reader;
  std::unordered_map<BlobRef, const BlobInfo*, BlobRefHasher> blobs;
};

std::unique_ptr<Trial> reencodeCompressed(const Reader& r, const WriterOptions& wo) {
  struct Fd {
    int fd = files::anonymousFile();
    ~Fd() { ::close(fd); }
  } scratch;
  WriterOptions to = wo;
  to.fd = scratch.fd, to.path = wo.path + " (scratch encoding)", to.durable = false;
  auto w = Writer::create(to, headerOf(r));
  std::vector<BlobView> held;
  uint64_t heldBytes = 0;
  for (const BlobInfo& b : r.blobs()) {
    if (b.lost || !b.compressed) continue;
    BlobView v;
    try {
      v = r.checkedBlob(b.ref);
    } catch (const Error&) { continue; }
    w->putBlob(v.data(), v.size(), b.hint);
    heldBytes += v.size();
    held.push_back(std::move(v));
    if (heldBytes > wo.queueBytes) {
      w->drainBlobs();
      held.clear();
      heldBytes = 0;
    }
  }
  w->close();
  auto t = std::make_unique<Trial>();
  t->reader = Reader::open(scratch.fd, to.path);
  for (const BlobInfo& b : t->reader->blobs())
    if (!b.lost) t->blobs.emplace(b.ref, &b);
  return t;
}

// IN's compressed blob `b`, or this rewrite's encoding of it where that is smaller (both were
// checked against the hash by reencodeCompressed). False: the smaller one is raw, to be put again.
bool copySmaller(const Reader& r, const Trial& t, const BlobInfo& b, Writer& w) {
  auto it = t.blobs.find(b.ref);
  if (it == t.blobs.end()) return false;
  const BlobInfo& mine = *it->second;
  const auto ours = blockPayload(*t.reader, mine.offset, mine.dataOffset + mine.storedSize);
  const auto theirs = blockPayload(r, b.offset, b.dataOffset + b.storedSize);
  if (ours.size() < theirs.size() && !mine.compressed) return false;
  w.copyEncodedBlob(ours.size() < theirs.size() ? ours : theirs);
  return true;
}

// Copies every blob, content-checked; damaged ones are refused, or with --salvage dropped and
// returned. Decompressed buffers stay alive until the workers consumed them (bounded). In the
// input's file order: read sequentially, and written in the order the capture used them, which
// the player's reads then follow too.
std::unordered_set<BlobRef, BlobRefHasher> copyBlobs(const Reader& r, Writer& w, const RewriteOptions& o,
                                                     uint64_t queueBytes, const Trial* trial) {
  std::vector<BlobView> held;
  uint64_t heldBytes = 0, total = 0, done = 0;
  bool putSinceDrain = false;
  std::vector<const BlobInfo*> inFileOrder;
  for (auto& b : r.blobs()) total += b.ref.length, inFileOrder.push_back(&b);
  std::sort(inFileOrder.begin(), inFileOrder.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  Progress progress("trtrace rewrite " + o.out, "copying weights", total);
  std::unordered_set<BlobRef, BlobRefHasher> damaged;
  for (const BlobInfo* pb : inFileOrder) {
    const BlobInfo& b = *pb;
    progress.update(done);
    done += b.ref.length;
    if (b.lost) {  // kept as the input has it (a Lost copy beside a stored one too)
      w.putLostBlob(b.ref, b.hint, b.replaced);
      continue;
    }
    if (trial && b.compressed) {
      // Blobs put before it are written first: the output keeps IN's order, so that no raw blob's
      // 4 KiB alignment padding grows where a copied block moved ahead of it.
      if (putSinceDrain) {
        w.drainBlobs();
        held.clear();
        heldBytes = 0;
        putSinceDrain = false;
      }
      if (copySmaller(r, *trial, b, w)) continue;
    }
    BlobView v;
    try {
      v = r.checkedBlob(b.ref);
    } catch (const Error& e) {
      if (!o.salvage)
        throw Error(Error::Kind::Corrupt,
                    std::string(e.what()) + "; use --salvage to keep the calls before the first one that uses it");
      std::fprintf(stderr, "trtrace: salvage: %s: dropped\n", terminalText(e.what()).c_str());
      damaged.insert(b.ref);
      continue;
    }
    w.putBlob(v.data(), v.size(), b.hint);
    putSinceDrain = true;
    if (!v.isZeroCopy()) {
      heldBytes += v.size();
      held.push_back(std::move(v));
    }
    if (heldBytes > queueBytes) {
      w.drainBlobs();
      held.clear();
      heldBytes = 0;
    }
  }
  w.drainBlobs();
  return damaged;
}

// --compress after the blobs and segments each kept their smaller form: the raw blobs' 4 KiB
// alignment padding can still make the whole larger where segments moved (IN interleaves them
// with blobs; OUT writes them last). Then OUT becomes a copy of IN (every blob and segment of IN
// was checked on the way). True when it did.
bool keepInputIfSmaller(const Reader& r, int fd) {
  struct stat st {};
  const auto in = r.mapping();
  if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) <= in.size()) return false;
  if (::ftruncate(fd, 0) != 0) throw Error(Error::Kind::Io, r.path() + ": rewrite: cannot truncate the output");
  for (uint64_t off = 0; off < in.size();) {
    const ssize_t n = ::pwrite(fd, in.data() + off, in.size() - off, static_cast<off_t>(off));
    if (n <= 0)
      throw Error(Error::Kind::Io, "rewrite: cannot write the output (" + std::string(std::strerror(errno)) + ")");
    off += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

// What was written: OUT's blobs and calls, or (st null) that OUT is a copy of IN (--compress, IN smaller).
static void printReport(const RewriteOptions& o, const Writer::Stats* st, uint64_t calls) {
  if (o.json && !st)
    std::printf("{\"output\": %s, \"copy_of_input\": true, \"calls\": %llu}\n", jsonString(o.out).c_str(),
                (unsigned long long)calls);
  else if (o.json)
    std::printf(
        "{\"output\": %s, \"copy_of_input\": false, \"calls\": %llu, \"blobs\": %llu, \"stored_bytes\": %llu, "
        "\"compressed_blobs\": %llu}\n",
        jsonString(o.out).c_str(), (unsigned long long)calls, (unsigned long long)st->uniqueBlobs,
        (unsigned long long)st->storedBytes, (unsigned long long)st->compressedBlobs);
  else if (!st)
    std::printf("%s: a copy of %s (its layout is smaller than the rewrite's), %llu calls\n", o.out.c_str(),
                o.in.c_str(), (unsigned long long)calls);
  else
    std::printf("%s: %llu blobs, %s stored (%llu compressed), %llu calls\n", o.out.c_str(),
                (unsigned long long)st->uniqueBlobs, humanBytes(double(st->storedBytes)).c_str(),
                (unsigned long long)st->compressedBlobs, (unsigned long long)calls);
}

static int runRewrite(const RewriteOptions& o) {
  auto r = Reader::open(o.in);
  if (r->truncatedAt() && !o.salvage)
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; use --salvage to rewrite the readable prefix");
  if (r->callCount() == 0)
    throw Error(Error::Kind::Empty,
                (r->truncatedAt() ? r->truncationMessage() + "; no calls before it" : o.in + ": holds no calls") +
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
  if (o.compress) {  // asked for: every blob where zstd pays, small ones too
    wo.minCompressBytes = 0;
    wo.tryEveryBlob = true;
  }
  auto w = Writer::create(wo, headerOf(*r));
  const auto trial = o.compress ? reencodeCompressed(*r, wo) : nullptr;
  const auto damaged = copyBlobs(*r, *w, o, wo.queueBytes, trial.get());
  std::string which;
  const uint64_t cut = firstCallUsing(*r, damaged, which);
  if (cut != UINT64_MAX && !o.salvage)
    throw Error(Error::Kind::Corrupt, o.in + ": call #" + std::to_string(cut) + " uses " + which +
                                          "; use --salvage to keep the calls before it");
  if (cut != UINT64_MAX)
    std::fprintf(stderr,
                 "trtrace: salvage: %s: call #%llu uses %s: kept the %llu calls before it, dropped the other %llu\n",
                 o.in.c_str(), (unsigned long long)cut, which.c_str(), (unsigned long long)cut,
                 (unsigned long long)(r->callCount() - cut));
  if (cut == 0) throw Error(Error::Kind::Empty, o.in + ": no call before the first damaged one (nothing to rewrite)");
  copyCalls(*r, *w, cut, o.compress);
  w->close();
  const bool asIs =
      o.compress && cut == UINT64_MAX && damaged.empty() && !r->truncatedAt() && keepInputIfSmaller(*r, wo.fd);
  outputs.commit(o.sync);
  const auto st = w->stats();
  printReport(o, asIs ? nullptr : &st, asIs ? r->callCount() : st.calls);
  return kOk;
}

Command addRewrite(CLI::App& app) {
  auto o = std::make_shared<RewriteOptions>();
  auto* sub = app.add_subcommand("rewrite", "Re-store a trace's blobs raw (fast replay) or compressed (storage)");
  sub->add_option("in", o->in, "Input trace")->required();
  addOutputOption(sub, o->out, "Output trace (written to a temp file, then renamed)", "out");
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
  sub->add_flag("--json", o->json, "Machine-readable report: one JSON object on stdout");
  return {sub, [o, sub] {
            if (!o->raw && !o->compress) throw Error(Error::Kind::Usage, "rewrite: choose --raw or --compress");
            return runRewrite(*o);
          }};
}

}  // namespace trtrace::cli
