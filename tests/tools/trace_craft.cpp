// trace_craft: writes the odd traces the error and safety tests need, which no capture produces.
//
//   trace_craft unknown-api OUT              a builder, then a call with API id 99999
//   trace_craft version OUT VERSION          a builder, captured with library VERSION
//   trace_craft library-name OUT NAME        a builder; the header names the library NAME (a path)
//   trace_craft set-library-path OUT PATH    a builder, then setInternalLibraryPath(PATH)
//   trace_craft random-count OUT COUNT       a builder, a network, then addConstant of COUNT FLOAT
//                                            weights marked random (a 1-element Dims: the count is
//                                            what a hostile trace would claim)
//   trace_craft misuse OUT HOW               a builder, a network, an input tensor (handle 3), then
//                                            HOW = tensor-as-layer: Layer::setName on the tensor;
//                                            null-reference: markOutput(null); delete-tensor: the
//                                            tensor's destructor (the library owns tensors)
//   trace_craft null-receiver OUT            a builder, a network, then Layer::setName on object 0
//   trace_craft names OUT SET READ           a builder, a network, addInput named SET (any bytes),
//                                            then Tensor::getName reading back READ
//   trace_craft array-count OUT N            a builder, a network, two input tensors (handles 3, 4),
//                                            then addConcatenation of both with nbInputs N
//   trace_craft api-descriptor OUT           the same with N = 2, its API id described as
//                                            NetworkDefinition::addEinsum (what dump would show)
//   trace_craft major IN OUT MAJOR           IN with the file header's major version set to MAJOR
//                                            (header check recomputed: only the version is wrong)
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "crafted_trace.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/format.h"
#include "trtrace/writer.h"

using namespace trtrace;

namespace {

std::unique_ptr<Writer> withBuilder(const std::string& out, const std::string& name = abi::kLibraryName,
                                    const std::string& version = abi::kLibraryVersion) {
  return craft::withBuilder(out, "trace_craft", name, version);
}

int usage() {
  std::fprintf(stderr,
               "usage: trace_craft unknown-api|version|library-name|set-library-path|major ... (see the source)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string what = argv[1], out = argv[2];
  if (what == "unknown-api") {
    auto w = withBuilder(out);
    w->beginCall(99999, 1, 0).endCall();
    w->close();
  } else if (what == "version" && argc == 4) {
    withBuilder(out, abi::kLibraryName, argv[3])->close();
  } else if (what == "library-name" && argc == 4) {
    withBuilder(out, argv[3], abi::kLibraryVersion)->close();
  } else if (what == "set-library-path" && argc == 4) {
    auto w = withBuilder(out);
    w->beginCall(api::kentry_setInternalLibraryPath, 0, 0).argString(argv[3]).endCall();
    w->close();
  } else if (what == "random-count" && argc == 4) {
    auto w = withBuilder(out);
    craft::addNetwork(*w);
    const int64_t dims[] = {1};
    w->beginCall(api::kNetworkDefinition_addConstant, 2, 1)
        .argDims(dims)
        .argWeightsRandom(static_cast<uint32_t>(abi::DataType::kFLOAT), std::strtoull(argv[3], nullptr, 10), 7)
        .retHandle(3)
        .endCall();
    w->close();
  } else if (what == "misuse" && argc == 4) {
    const std::string how = argv[3];
    auto w = withBuilder(out);
    craft::addNetwork(*w);
    const int64_t dims[] = {1, 4};
    w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
        .argString("x")
        .argEnum(0, 0)
        .argDims(dims)
        .retHandle(3)
        .endCall();
    if (how == "tensor-as-layer")
      w->beginCall(api::kLayer_setName, 3, 1).argString("n").endCall();
    else if (how == "null-reference")
      w->beginCall(api::kNetworkDefinition_markOutput, 2, 1).argNull().endCall();
    else if (how == "delete-tensor")
      w->beginCall(api::kTensor_destroy, 3, 1).endCall();
    else
      return usage();
    w->close();
  } else if ((what == "array-count" && argc == 4) || (what == "api-descriptor" && argc == 3)) {
    auto w = withBuilder(out);
    const std::string_view einsum[] = {"inputs", "nbInputs", "equation"};
    if (what == "api-descriptor")
      w->describeApi(api::kNetworkDefinition_addConcatenation, "NetworkDefinition", "addEinsum", einsum);
    craft::addNetwork(*w);
    const int64_t dims[] = {1, 4};
    w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
        .argString("a")
        .argEnum(0, 0)
        .argDims(dims)
        .retHandle(3)
        .endCall();
    w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
        .argString("b")
        .argEnum(0, 0)
        .argDims(dims)
        .retHandle(4)
        .endCall();
    const uint64_t inputs[] = {3, 4};
    const int64_t n = what == "api-descriptor" ? 2 : std::strtoll(argv[3], nullptr, 10);
    w->beginCall(api::kNetworkDefinition_addConcatenation, 2, 1)
        .argHandleArray(inputs)
        .argI64(n)
        .retHandle(5)
        .endCall();
    w->close();
  } else if (what == "null-receiver") {
    auto w = withBuilder(out);
    craft::addNetwork(*w);
    w->beginCall(api::kLayer_setName, 0, 1).argString("n").endCall();
    w->close();
  } else if (what == "names" && argc == 5) {
    auto w = withBuilder(out);
    craft::addNetwork(*w);
    const int64_t dims[] = {1, 4};
    w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
        .argString(argv[3])
        .argEnum(api::kEnumDataType, 0)
        .argDims(dims)
        .retHandle(3)
        .endCall();
    w->beginCall(api::kTensor_getName, 3, 1).retString(argv[4]).endCall();
    w->close();
  } else if (what == "major" && argc == 5) {  // a new major starts at minor 0
    auto data = craft::readAll(argv[2]);
    if (data.size() < sizeof(format::FileHeader)) return usage();
    format::FileHeader fh;
    std::memcpy(&fh, data.data(), sizeof fh);
    fh.versionMajor = static_cast<uint16_t>(std::atoi(argv[4]));
    fh.versionMinor = 0;
    fh.headerCheck = static_cast<uint32_t>(XXH3_64bits(&fh, offsetof(format::FileHeader, headerCheck)));
    std::memcpy(data.data(), &fh, sizeof fh);
    craft::writeAll(argv[3], data);
  } else {
    return usage();
  }
  return 0;
}
