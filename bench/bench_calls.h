// The call both trace_bench and micro_bench encode and decode, so their per-call rates measure
// the same record: a typical network-build call, addConvolutionNd(input, nbOutputMaps, kernelSize,
// weights) -> layer.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>

#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace trtrace::bench {

// The writer the call benchmarks encode into: no flush before close, so a call's figure is encoding.
inline std::unique_ptr<Writer> callWriter(const std::string& path, const HeaderInfo& header) {
  WriterOptions o;
  o.path = path;
  o.flush = FlushPolicy::AtClose;
  return Writer::create(o, header);
}

inline void encodeConvCall(Writer& w, uint64_t i, const BlobRef& weights) {
  static const int64_t dims[] = {64, 3, 3, 3};
  w.beginCall(1, 0x1000 + i, 1)
      .argHandle(0x2000)
      .argI64(64)
      .argDims(dims)
      .argWeightsBlob(0, 1024, weights)
      .retHandle(0x3000 + i)
      .endCall();
}

// One pass over the trace's calls reading 4 values of each; returns the number of calls read.
inline uint64_t decodeConvCalls(const Reader& r) {
  int64_t sum = 0;
  uint64_t calls = 0;
  r.forEachCall([&](const CallView& c) {
    sum += c.arg(1).asI64() + int64_t(c.arg(2).ints().size()) + int64_t(c.arg(3).blob().length) +
           int64_t(c.ret()->asU64());
    ++calls;
    return true;
  });
  benchmark::DoNotOptimize(sum);
  return calls;
}

}  // namespace trtrace::bench
