// trtrace extract IN --network N -o OUT [--json]: network N (0, 1, ... in creation order) as a trace
// of its own, holding only what that network's build needs (issue 17): its calls, and of the
// calls of no network (builder, config, entry points, ...) those it needs -- found as a fixed
// point: an object is needed when a kept call uses or returns it; a call of no network that
// returns an object is kept when that object is needed (so the builder does not pull in the other
// networks and their configs), any other when it uses a needed object or no object at all. The
// other networks' objects are still created and deleted, empty, at their places: the library
// numbers unnamed networks per process, and that name is part of the engine.
// Calls of other networks and the objects only they use are left out, and so are the blobs only
// they reference. The kept calls keep their order, handles and weights identities; their network
// becomes network 0 of OUT. OUT appears complete or not at all, never over IN (trtrace/files.h).
#include <cstdio>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "commands.h"
#include "trace_edit.h"
#include "trtrace/api_table.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/network_id.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace trtrace::cli {

struct ExtractOptions {
  std::string in, out;
  int64_t network = -1;
  bool json = false;
};

namespace {

// The objects a call uses (receiver, handle arguments) and the one it returns (0: none).
struct Touch {
  uint32_t net = 0;
  std::vector<uint64_t> uses;
  uint64_t result = 0;
  bool createsNetwork = false, deletes = false;  // per the spec's descriptor of the API
};

Touch touchOf(const CallView& c) {
  const api::ApiDesc* d = api::find(c.apiId());
  Touch t{c.networkId(), {}, 0, d && d->has(api::flag::kStartsNetwork), d && d->has(api::flag::kDestroy)};
  if (c.receiver()) t.uses.push_back(c.receiver());
  for (size_t i = 0; i < c.argCount(); ++i) {
    const ValueView v = c.arg(i);
    if (v.kind() == ValueKind::Handle && v.asU64()) t.uses.push_back(v.asU64());
    if (v.kind() == ValueKind::HandleArray)
      for (uint64_t h : v.handles())
        if (h) t.uses.push_back(h);
  }
  if (auto r = c.ret(); r && r->kind() == ValueKind::Handle) t.result = r->asU64();
  return t;
}

// Whether a call of no network is needed, given the objects needed so far: one that returns an
// object, when that object is; any other, when it uses a needed object or no object at all.
bool neededNoNetwork(const Touch& t, const std::unordered_set<uint64_t>& needed) {
  if (t.result) return needed.count(t.result) > 0;
  if (t.uses.empty()) return true;
  for (uint64_t h : t.uses)
    if (needed.count(h)) return true;
  return false;
}

// Which calls (by position in the log) network `id` needs: see the file comment.
std::vector<bool> neededCalls(const Reader& r, uint32_t id) {
  std::vector<Touch> calls;  // grown as read: the footer's call count is a claim, not an allocation size
  r.forEachCall([&](const CallView& c) {
    calls.push_back(touchOf(c));
    return true;
  });
  std::vector<bool> keep(calls.size(), false);
  std::unordered_set<uint64_t> needed, networks;
  // Every network object is created and deleted as in IN (nothing else of the other networks):
  // the library numbers unnamed networks per process, and that name is in the engine.
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].createsNetwork && calls[i].result) networks.insert(calls[i].result);
    keep[i] = (calls[i].createsNetwork && calls[i].result) ||
              (calls[i].deletes && !calls[i].uses.empty() && networks.count(calls[i].uses[0]));
    if (keep[i]) needed.insert(calls[i].uses.begin(), calls[i].uses.end());
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < calls.size(); ++i) {
      const Touch& t = calls[i];
      if (keep[i] || !(t.net == id || (t.net == 0 && neededNoNetwork(t, needed)))) continue;
      keep[i] = changed = true;
      needed.insert(t.uses.begin(), t.uses.end());
      if (t.result) needed.insert(t.result);
    }
  }
  return keep;
}

}  // namespace

static int runExtract(const ExtractOptions& o) {
  auto r = convert::openCapture(o.in);
  if (r->truncatedAt())
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; not extracting from a truncated trace");
  checkNetwork(*r, o.network);
  files::PendingOutputs outputs;  // OUT is never IN, and appears complete or not at all
  auto w = createDerived(*r, outputs, o.out);
  const auto id = uint32_t(traceNetworkId(uint64_t(o.network)));
  const std::vector<bool> keep = neededCalls(*r, id);
  std::unordered_set<BlobRef, BlobRefHasher> blobs;
  uint64_t kept = 0, blobBytes = 0, index = 0;
  Progress progress("trtrace extract " + o.out, "copying calls", r->callCount(), Progress::Unit::Calls);
  r->forEachCall([&](const CallView& c) {
    progress.update(c.seq());
    if (!keep[index++]) return true;
    ++kept;
    copyCall(c, *w, c.networkId() == id ? 1 : 0, [&](CallEncoder& e, const ValueView& v, bool ret) {
      if (v.kind() == ValueKind::WeightsBlob && blobs.insert(v.blob()).second) {
        copyBlob(*r, *w, v.blob());
        blobBytes += v.blob().length;
      }
      encodeValue(e, v, ret);
    });
    return true;
  });
  w->close();
  outputs.commit();
  if (o.json)
    std::printf("{\"output\":%s,\"network\":%lld,\"calls\":%llu,\"of\":%llu,\"blobs\":%zu,\"blob_bytes\":%llu}\n",
                jsonString(o.out).c_str(), (long long)o.network, (unsigned long long)kept,
                (unsigned long long)r->callCount(), blobs.size(), (unsigned long long)blobBytes);
  else
    std::printf("%s: network %lld: %llu of %llu calls, %zu blobs (%s)\n", o.out.c_str(), (long long)o.network,
                (unsigned long long)kept, (unsigned long long)r->callCount(), blobs.size(),
                humanBytes(double(blobBytes)).c_str());
  return kOk;
}

Command addExtract(CLI::App& app) {
  auto o = std::make_shared<ExtractOptions>();
  auto* sub =
      app.add_subcommand("extract", "One network (and only the calls, objects and weights it needs) as its own trace");
  sub->add_option("in", o->in, "Input trace")->required();
  sub->add_option("--network", o->network, "The network: 0, 1, ... in creation order (as the player)")->required();
  sub->add_option("-o,--output", o->out, "Output trace (written to a temp file, then renamed)")->required();
  sub->add_flag("--json", o->json, "Machine-readable report");
  return {sub, [o] { return runExtract(*o); }};
}

}  // namespace trtrace::cli
