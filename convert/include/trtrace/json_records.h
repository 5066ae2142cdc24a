// trtrace::convert::JsonRecords: NVIDIA's JSON records, one trace call at a time: the one encoder
// of `trtrace convert` (trace -> JSON, reading a whole trace) and of the capture shim's JSON+BIN
// export (TRT_SHIM_OUTPUT_JSON_FILE, fed each call as it is recorded: capture/json_export.h).
//
// The JSON is kOpening, then the text add() appends for each call, then closing(); the BIN is the
// bytes handed to the BIN sink, in order (a weights record's "offset" counts the bytes handed so
// far). Text layout: docs/json-bin-layout.md §3, §13 (json.dumps(indent=4, sort_keys=True,
// ensure_ascii=False), no trailing newline); object ids from one counter in order of first return;
// Weights ids per network in order of first use, {"id": N} for a repeated use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "trtrace/hash.h"
#include "trtrace/reader.h"

namespace trtrace::api {
struct ParamDesc;  // trtrace/api_table.h (generated)
struct ApiDesc;
}  // namespace trtrace::api

namespace trtrace::convert {

struct JsonNode;

class JsonRecords {
 public:
  static constexpr std::string_view kOpening = "{\n    \"api_calls\": [";
  // The bytes of a weights blob the call references (valid until the next call of it).
  using BlobSource = std::function<BlobView(const BlobRef&)>;
  using BinSink = std::function<void(const void* data, size_t bytes)>;

  // NVIDIA's shim records neither destructors nor calls on IHostMemory: they are left out unless
  // allCalls. `name` (the trace) is named in error messages.
  JsonRecords(std::string name, bool allCalls, BlobSource blobs, BinSink bin);
  ~JsonRecords();
  JsonRecords(const JsonRecords&) = delete;
  JsonRecords& operator=(const JsonRecords&) = delete;

  // Appends the call's record to `out` (with its separator) and its new weights to the BIN sink,
  // or nothing for a call NVIDIA does not record. Throws Error naming the call for an API id this
  // build does not know, or inline weights shorter than their count.
  void add(const CallView& c, std::string& out);
  // The text after the last record: "output_bin" (binName's last path component) and
  // "trt_version" (from createInferBuilder's argument, else libraryVersion "major.minor.patch").
  std::string closing(const std::string& binName, std::string_view libraryVersion) const;

  uint64_t records() const { return index_; }
  uint64_t skipped() const { return skipped_; }
  uint64_t weights() const { return weights_; }
  uint64_t binBytes() const { return binBytes_; }
  uint32_t networks() const { return static_cast<uint32_t>(networks_.size()); }

 private:
  // NVIDIA's reference form {"id": N} means "the same host pointer again"; it is written only for
  // the same pointer identity with the same type, count and content (docs/json-bin-layout.md §7).
  struct WeightsKey {
    uint64_t ptr;  // pointer identity (0 = unknown: content alone)
    uint32_t kind, dtype;
    uint64_t count;
    Hash128 content;
    uint64_t length;
    bool operator<(const WeightsKey& o) const;
  };
  bool argNode(const api::ParamDesc& p, const ValueView& v, uint32_t net, JsonNode& n);
  JsonNode weightsNode(const ValueView& v, uint32_t net);
  void lostNumber();
  void toBin(JsonNode& w, const void* p, size_t n);
  int64_t& slot(uint64_t h);
  int64_t idOf(uint64_t h);

  std::string name_;
  bool allCalls_;
  BlobSource blobs_;
  BinSink bin_;
  std::vector<int64_t> ids_;  // trace handle -> NVIDIA object id + 1 (0 = none yet); handles are dense from 1
  int64_t nextId_ = 0;
  std::unordered_map<uint32_t, std::map<WeightsKey, int64_t>> weightIds_;  // per network
  std::unordered_map<uint32_t, int64_t> nextWeightId_;
  int64_t trtVersion_ = -1;
  uint64_t index_ = 0, skipped_ = 0, weights_ = 0, binBytes_ = 0;
  uint64_t lostNumbers_ = 0;            // NaN/inf arguments written as null (the first is warned about)
  const api::ApiDesc* desc_ = nullptr;  // the call and argument being written, for that warning
  uint32_t arg_ = 0;
  std::unordered_set<uint32_t> networks_;
};

}  // namespace trtrace::convert
