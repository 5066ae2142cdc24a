// Shared pieces of the trtrace subcommands that derive or compare traces (trace_edit.h).
#include "trace_edit.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "trtrace/api_table.h"
#include "trtrace/error.h"
#include "trtrace/network_id.h"

namespace trtrace::cli {

HeaderInfo headerOf(const Reader& r) {
  HeaderInfo hi;
  auto& h = r.header();
  hi.producer = std::string(h.producer);
  hi.producerVersion = std::string(h.producerVersion);
  hi.libraryName = std::string(h.libraryName);
  hi.libraryVersion = std::string(h.libraryVersion);
  hi.libraryBuildId = std::string(h.libraryBuildId);
  for (auto& [k, v] : h.settings) hi.settings.emplace_back(std::string(k), std::string(v));
  hi.host = std::string(h.host);
  hi.pid = h.pid;
  hi.startTimeNs = h.startTimeNs;
  return hi;
}

void describeApis(const Reader& r, Writer& w) {
  for (const ApiInfo* a : r.apis()) w.describeApi(a->id, a->interfaceName, a->methodName, a->argNames);
}

std::unique_ptr<Writer> createDerived(const Reader& r, files::PendingOutputs& outputs, const std::string& out,
                                      WriterOptions wo) {
  wo.fd = outputs.add(out);
  wo.path = out;
  auto w = Writer::create(wo, headerOf(r));
  describeApis(r, *w);
  return w;
}

bool isWeights(const ValueView& v) {
  return v.kind() == ValueKind::WeightsInline || v.kind() == ValueKind::WeightsBlob ||
         v.kind() == ValueKind::WeightsRandom;
}

bool isBuild(const CallView& c) {
  const api::ApiDesc* d = api::find(c.apiId());
  return d && d->has(api::flag::kBuild);
}

std::vector<BlobRef> blobKeys(const Reader& r) {
  std::vector<BlobRef> keys;
  for (const BlobInfo& b : r.blobs()) keys.push_back(b.ref);
  if (const ExternalBlobs* ext = r.externalBlobs())
    for (const auto& [ref, bytes] : ext->blobs) keys.push_back(ref);
  return keys;
}

void copyBlob(const Reader& r, Writer& w, const BlobRef& ref) {
  if (r.blobLost(ref)) return w.putLostBlob(ref, BlobHint::None, r.blobReplaced(ref));
  BlobView b = r.checkedBlob(ref);
  w.putBlob(b.data(), b.size());
  w.drainBlobs();  // b's bytes are used until the writer consumed them
}

void encodeValue(CallEncoder& e, const ValueView& v, bool ret) {
  switch (v.kind()) {
    case ValueKind::Null: ret ? e.retNull() : e.argNull(); break;
    case ValueKind::Bool: ret ? e.retBool(v.asBool()) : e.argBool(v.asBool()); break;
    case ValueKind::I64: ret ? e.retI64(v.asI64()) : e.argI64(v.asI64()); break;
    case ValueKind::U64: ret ? e.retU64(v.asU64()) : e.argU64(v.asU64()); break;
    case ValueKind::F32: ret ? e.retF32(float(v.asF64())) : e.argF32(float(v.asF64())); break;
    case ValueKind::F64: ret ? e.retF64(v.asF64()) : e.argF64(v.asF64()); break;
    case ValueKind::String: ret ? e.retString(v.asString()) : e.argString(v.asString()); break;
    case ValueKind::Enum: ret ? e.retEnum(v.typeId(), v.asI64()) : e.argEnum(v.typeId(), v.asI64()); break;
    case ValueKind::Dims: ret ? e.retDims(v.ints()) : e.argDims(v.ints()); break;
    case ValueKind::Handle: ret ? e.retHandle(v.asU64(), v.typeId()) : e.argHandle(v.asU64(), v.typeId()); break;
    case ValueKind::HandleArray: ret ? e.retHandleArray(v.handles()) : e.argHandleArray(v.handles()); break;
    case ValueKind::I64Array: ret ? e.retI64Array(v.ints()) : e.argI64Array(v.ints()); break;
    case ValueKind::F32Array: ret ? e.retF32Array(v.floats()) : e.argF32Array(v.floats()); break;
    case ValueKind::Bytes: ret ? e.retBytes(v.bytes()) : e.argBytes(v.bytes()); break;
    case ValueKind::WeightsInline:
      ret ? e.retWeightsInline(v.dtype(), v.count(), v.bytes(), v.weightsPtr())
          : e.argWeightsInline(v.dtype(), v.count(), v.bytes(), v.weightsPtr());
      break;
    case ValueKind::WeightsBlob:
      ret ? e.retWeightsBlob(v.dtype(), v.count(), v.blob(), v.weightsPtr())
          : e.argWeightsBlob(v.dtype(), v.count(), v.blob(), v.weightsPtr());
      break;
    case ValueKind::WeightsRandom:
      ret ? e.retWeightsRandom(v.dtype(), v.count(), v.seed(), v.weightsPtr())
          : e.argWeightsRandom(v.dtype(), v.count(), v.seed(), v.weightsPtr());
      break;
  }
}

void copyCall(const CallView& c, Writer& w, uint32_t networkId, const WeightsHook& weights, const HandleMap& handles) {
  CallEncoder& e = w.beginCall(c.apiId(), c.receiver(), networkId);
  auto put = [&](const ValueView& v, bool ret) {
    if (weights && isWeights(v)) {
      weights(e, v, ret);
    } else if (handles && !ret && v.kind() == ValueKind::Handle) {
      e.argHandle(handles(v.asU64()), v.typeId());
    } else if (handles && !ret && v.kind() == ValueKind::HandleArray) {
      std::vector<uint64_t> hs(v.handles().begin(), v.handles().end());
      for (uint64_t& h : hs) h = handles(h);
      e.argHandleArray(hs);
    } else {
      encodeValue(e, v, ret);
    }
  };
  for (size_t i = 0; i < c.argCount(); ++i) put(c.arg(i), false);
  if (auto r = c.ret()) put(*r, true);
  if (c.status() == CallStatus::Unsupported)
    e.unsupported(c.unsupportedInterface(), c.unsupportedSlot());
  else
    e.status(c.status());
  if (!c.message().empty()) e.message(c.message());
  if (auto b = c.buildResult()) {
    std::vector<std::string> errors(b->errors.begin(), b->errors.end());
    e.buildResult(b->ok, b->engineSize, b->engineHash, errors);
  }
  e.endCall();
}

std::string apiName(const Reader& r, uint32_t id) {
  if (auto* a = r.api(id)) return std::string(a->interfaceName) + "::" + std::string(a->methodName);
  if (auto* d = api::find(id))
    return std::string(d->interface) + "::" + std::string(d->method);  // undescribed: this build's
  return "api#" + std::to_string(id);
}

std::string argName(const Reader& r, uint32_t id, size_t i) {
  auto* a = r.api(id);
  if (a && i < a->argNames.size()) return std::string(a->argNames[i]);
  if (auto* d = api::find(id); d && !a && i < d->nargs) return std::string(d->args[i]);  // undescribed: this build's
  return "argument " + std::to_string(i);
}

// A --network the trace does not have is an error (as in the player), not an empty result.
void checkNetwork(const Reader& r, int64_t network) {
  if (network < 0)
    throw Error(Error::Kind::Usage, "--network " + std::to_string(network) + ": networks are numbered from 0");
  uint32_t highest = 0;  // trace network ids are dense from 1, in creation order
  r.forEachCall([&](const CallView& c) {
    highest = std::max(highest, c.networkId());
    return true;
  });
  if (uint64_t(network) >= highest)
    throw Error(Error::Kind::Usage,
                "--network " + std::to_string(network) + ": " + r.path() +
                    (highest ? " has networks 0 to " + std::to_string(shownNetwork(highest)) : " has no networks"));
}

}  // namespace trtrace::cli
