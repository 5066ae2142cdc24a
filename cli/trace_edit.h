// Shared pieces of the trtrace subcommands that read a trace and write another one (strip,
// extract) or report on traces (info, dump, diff): the header copied over, every call re-encoded
// value by value (a hook may replace weights), network numbers checked, JSON strings quoted.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"  // jsonString, used by every command
#include "trtrace/writer.h"

namespace trtrace::cli {

// The input's header, to write it unchanged into a derived trace.
HeaderInfo headerOf(const Reader& r);

// Registers every API name the input describes with the writer (derived traces self-describe).
void describeApis(const Reader& r, Writer& w);

// A writer for a trace derived from `r` at `out` (registered with `outputs`: never the input, and
// complete or absent): the input's header, its API descriptors; `wo` supplies the other options.
std::unique_ptr<Writer> createDerived(const Reader& r, files::PendingOutputs& outputs, const std::string& out,
                                      WriterOptions wo = {});

// Re-encodes one value as argument (ret = false) or result (ret = true) of `e`.
void encodeValue(CallEncoder& e, const ValueView& v, bool ret);

// Writes `c` into `w` as network `networkId`: receiver, arguments, result, status, message and
// build result. `weights`, when given, encodes each weights value (argument or result) instead;
// `handles`, when given, maps each object handle argument (not the receiver or result).
using WeightsHook = std::function<void(CallEncoder& e, const ValueView& v, bool ret)>;
using HandleMap = std::function<uint64_t(uint64_t)>;
void copyCall(const CallView& c, Writer& w, uint32_t networkId, const WeightsHook& weights = {},
              const HandleMap& handles = {});

bool isWeights(const ValueView& v);

// Whether `c` builds an engine: the spec's role (api::flag::kBuild), never whether the trace holds
// the optional build outcome (converted NVIDIA captures hold none).
bool isBuild(const CallView& c);

// Every blob key `r` can hand out: those its file stores and those outside it (a JSON+BIN
// capture's weights in its BIN, Reader::externalBlobs).
std::vector<BlobRef> blobKeys(const Reader& r);

// One blob of `r` into `w` as `r` stores it: its bytes (checked against the key, and consumed by
// the writer before this returns), or a Lost record.
void copyBlob(const Reader& r, Writer& w, const BlobRef& ref);

// "Interface::method" of an API id, from the trace's own descriptors, else this build's table
// ("api#N" if neither knows it).
std::string apiName(const Reader& r, uint32_t id);
// The name of argument `i` of an API id, from the trace's own descriptors, else this build's table
// ("argument i" if neither knows it).
std::string argName(const Reader& r, uint32_t id, size_t i);

// Throws Error (Usage) for a --network the trace does not have (networks numbered from 0).
void checkNetwork(const Reader& r, int64_t network);

}  // namespace trtrace::cli
