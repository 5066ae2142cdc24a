// trtrace export IN -o DIR (or --python DIR) [--json]: the trace as a standalone Python script:
// DIR/build.py and DIR/weights/*.npy rebuild the same engine(s) with the tensorrt_rtx bindings, no
// trtrace needed (export_python.h: the generator, shared with the export fuzzer). A call the
// bindings cannot express stops the export with one line naming the call (exit 5, kInexpressible):
// never a wrong script. DIR must be new or empty; it appears complete or not at all.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "export_python.h"
#include "output_option.h"
#include "trace_edit.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"

namespace trtrace::cli {

struct ExportOptions {
  std::string in, dir;
  bool json = false;
};

static int runExport(const ExportOptions& o) {
  auto r = convert::openCapture(o.in);
  if (r->truncatedAt())
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; not exporting a truncated trace");
  ExportResult res;
  try {
    res = exportPython(*r, o.in, o.dir);
  } catch (const Inexpressible& e) {
    std::fprintf(stderr, "trtrace: %s\n", e.what());
    return kInexpressible;
  }
  if (o.json)
    std::printf("{\"output\":%s,\"statements\":%zu,\"weights_files\":%zu,\"weight_bytes\":%llu}\n",
                jsonString(o.dir + "/build.py").c_str(), res.statements, res.weightsFiles,
                (unsigned long long)res.weightBytes);
  else
    std::printf("%s/build.py: %zu statements, %zu weights files (%s); run: python3 %s/build.py --out ENGINE\n",
                o.dir.c_str(), res.statements, res.weightsFiles, humanBytes(double(res.weightBytes)).c_str(),
                o.dir.c_str());
  return kOk;
}

Command addExport(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* sub = app.add_subcommand("export",
                                 "The trace as a standalone Python script (tensorrt_rtx API + .npy weights) "
                                 "that rebuilds the same engine(s) without trtrace");
  sub->add_option("in", o->in, "Input trace")->required();
  addOutputOption(sub, o->dir, "Folder to write (new or empty): build.py and weights/*.npy", "--python");
  sub->add_flag("--json", o->json, "Machine-readable report");
  return {sub, [o] { return runExport(*o); }};
}

}  // namespace trtrace::cli
