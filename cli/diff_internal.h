// Inside `trtrace diff` (diff_model.h): each trace read once into compact call records
// (diff_model.cpp), aligned and compared there; the differences then rendered and summarised per
// network (diff_report.cpp). Shared by those two files only.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "diff_model.h"
#include "trtrace/api_table.h"
#include "trtrace/reader.h"

namespace trtrace::cli::diffing {

// Objects are named structurally: a hash of how they were obtained -- the creating call (its API,
// its other arguments, weights by content), the first name the app gives the object, and the
// names of the objects the call was given, to kNameDepth objects upstream -- so two captures'
// names agree whatever their handle numbers and wherever a layer was inserted before, two objects
// made alike are told apart by their app names or their inputs, and a changed call renames what
// lies at most kNameDepth objects downstream of it, not the rest of the network.
inline constexpr int kNameDepth = 2;
inline constexpr size_t kMaxObjectText = 240;  // ObjInfo::text, in bytes

// One compared call, ~80 bytes whatever its arguments: what the alignment and the comparison need.
struct CallRec {
  uint64_t seq = 0;
  uint64_t key = 0;                            // the whole call: API, arguments (weights by content), objects by name
  uint64_t shape = 0;                          // API and the arguments that are not objects, weights by type and count
  uint64_t content = 0;                        // the weights' contents
  uint64_t slot = 0;                           // receiver's name and API: calls that may overwrite each other's effect
  uint32_t api = 0, net = 0, recvCreator = 0;  // recvCreator: API that made the receiver (0: none)
  uint32_t hOff = 0, nH = 0, nW = 0;           // TraceModel::pool: receiver, object arguments, result; weights pointers
  int32_t layer = -1;                          // layer (of its network) the call is on or creates; -1: none
  bool createsLayer = false, hasWeights = false, getter = false;
  bool valueRead = false;  // a getter returning a value, not an object: a read no later call depends on
};

struct ObjInfo {
  uint64_t names[kNameDepth + 1] = {};  // structural name (above) at each depth
  int32_t layer = -1;                   // the layer it is or belongs to
  uint32_t creator = 0;                 // API that made it
  uint32_t net = 0;                     // network of the call that made it
  std::string text;                     // how it was obtained: "network", layer k as layerRef(k), "L3.getOutput(0)"
};

struct LayerInfo {
  std::string type, name;  // "ConvolutionLayer", its setName
};

struct TraceModel {
  const Reader* reader = nullptr;
  bool allCalls = false;
  bool guessedReturns = false;  // calls from NVIDIA's JSON: a getter's returned handle is a guess
  std::vector<CallRec> calls;   // the compared calls, in trace order
  std::vector<uint64_t> pool;
  std::unordered_map<uint64_t, ObjInfo> objs;         // by handle
  std::map<uint32_t, std::vector<LayerInfo>> layers;  // by network id
  std::map<uint32_t, std::vector<uint32_t>> byNet;    // indices into calls, by network id
  const uint64_t* handles(const CallRec& r) const { return pool.data() + r.hOff; }
  const uint64_t* weightPtrs(const CallRec& r) const { return pool.data() + r.hOff + r.nH; }
};

// Each compared call of r in order, with its index in TraceModel::calls.
void forEachCompared(const Reader& r, bool allCalls, const std::function<void(uint32_t, const CallView&)>& fn);
bool compared(const api::ApiDesc* d, bool allCalls);
bool foreignArg(const api::ApiDesc* d, size_t k);

// A layer reference inside object texts ("\x01<k>\x02"), replaced when shown: A's by "L<k>", B's
// by their A partner's "L<k>" or "B:L<k>" (toA: B's layer index -> A's, -1 none).
std::string layerRef(size_t k);
std::string renderRefs(std::string s, const std::vector<long>* toA);

std::string objText(const TraceModel& m, uint64_t h);
std::string callText(const TraceModel& m, const CallView& c, const api::ApiDesc* d);  // "setAlpha(0.25)"
std::string fullText(const TraceModel& m, const CallView& c, const api::ApiDesc* d);  // "L3.getOutput(0).setName(...)"
uint64_t contentHash(const ValueView& v);  // a non-object value by its kind and content

// What differs in an aligned pair (bits).
enum : uint8_t { kDiffArgs = 1, kDiffReceiver = 2, kDiffResult = 4, kDiffAliasing = 8 };

// An aligned pair (indices into the two models' calls), or a call on one side only.
struct Item {
  Difference::Kind kind = Difference::Kind::Changed;
  uint32_t a = 0, b = 0;
  uint8_t what = 0;             // kDiff* of a changed pair
  uint64_t order = 0, sub = 0;  // where it shows: trace order of A, B's insertions after the A call before them
};

struct Comparison {
  TraceModel A, B;
  std::vector<Item> items;                         // differences, sorted by (order, sub)
  std::map<uint32_t, std::vector<long>> toA, toB;  // per network: layer partners (-1: none)
  std::unordered_map<uint64_t, uint64_t> bToA;     // B's handles -> A's, from the aligned pairs
  std::vector<uint32_t> movedA;                    // A's calls B makes elsewhere in the network (aligned as moves)
  uint64_t moved = 0;                              // of those, the ones that compare equal
  uint64_t reads = 0;  // value getters called on one side only (reads: cannot change a build)
  uint64_t mapToA(uint64_t hb) const;
};

void buildModel(const Reader& r, bool allCalls, TraceModel& m);
void compareModels(Comparison& c);
TraceDiff report(const Comparison& c);

}  // namespace trtrace::cli::diffing
