// The capture session: one per process (a forked child starts its own, writing `<output>.<pid>`).
// It owns the trace writer's lifecycle (open on first use, disable on failure, close at exit, a
// fresh file after fork or a failed exec) and the JSON+BIN export wired to it, and holds the units
// each role lives in: configuration (config.h), output names (output_claim.h), the object registry
// (registry.h), weights identity (weights_identity.h), flush policy (flush_policy.h), test fault
// injectors (faults.h), fatal signals (fatal_signals.h), the API lock (api_lock.h), NVIDIA's C
// interface (live_session.h) and the JSON+BIN export's wiring (json_output.h). Its trace is a file it creates, never
// one that exists.
#pragma once
#include <cstdint>
#include <exception>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "api_lock.h"
#include "config.h"
#include "faults.h"
#include "finisher.h"
#include "flush_policy.h"
#include "json_output.h"
#include "registry.h"
#include "trtrace/writer.h"
#include "weights_identity.h"

namespace trtrace::capture {

struct Object;
struct Iface;

class Session {
 public:
  // Created on first use; never destroyed (wrappers may outlive static destruction; atexit closes
  // the writer). Inline: every recorded call asks, several times.
  static Session& get() {
    static Session* s = new Session();
    return *s;
  }

  // trtShimSetOutputJsonFile / trtShimGetOutputJsonFile (NVIDIA's shim C interface, as its shim
  // behaves: docs/json-bin-layout.md; defined in live_session.cpp): the JSON+BIN path, changeable
  // until the first JSON flush; before the first intercepted call it is kept and applied when the
  // session starts. set: false (one line) for a path whose folder does not exist or once the
  // JSON+BIN is written. get: the path's length, copied NUL-terminated into buf[size] (truncated),
  // "" when no JSON+BIN is configured.
  static bool setOutputJson(const char* path) noexcept;
  static size_t outputJson(char* buf, size_t size) noexcept;

  const Config& config() const { return config_; }
  // The writer, opened on first use; nullptr when capture is off (open failed, closed, disabled).
  // Every recorded call asks: inline, and without a lock while capture is on.
  Writer* writer() {
    if (Writer* w = live_.load(std::memory_order_acquire)) [[likely]]
      return w;
    return writerSlowly();
  }
  // Stop recording (passthrough continues), say why once; waits until queued weights are let go.
  void disable(const char* why) noexcept;
  // Runs `use` on the writer unless capture is off; any failure (a failed write, out of memory)
  // disables the capture instead of reaching the application. Returns whether `use` completed.
  // Every use of the writer from an application's thread goes through here or through Call.
  template <class Use>
  bool guarded(Use&& use) noexcept {  // a template: every recorded call passes one (no std::function)
    try {
      Writer* w = writer();
      if (!w) return false;
      use(*w);
      return true;
    } catch (const std::exception& e) { disable(e.what()); } catch (...) {
      disable("unknown error");
    }
    return false;
  }

  // Our objects, keyed by the real object (objects.cpp), and the network ids.
  Registry<Object>& objects() { return objects_; }
  WeightsIdentity& weights() { return weights_; }

  // Flush-after-every-call policy (JSON mode: the JSON+BIN brought up to date): one test per call.
  void afterCall() noexcept {
    if (rules_.exportAfterCall) exportAfterCall();
  }
  void exportJson() noexcept;  // TRT_SHIM_OUTPUT_JSON_FILE: a flush point of the JSON+BIN export
  void exportAfterCall() noexcept;
  // The JSON+BIN export, when TRT_SHIM_OUTPUT_JSON_FILE (or trtShimSetOutputJsonFile) named a JSON
  // when the capture started; nullptr otherwise.
  JsonExport* jsonExport() { return json_.exporter(); }
  void afterBuild() noexcept;  // drain blobs (the app may free weights now) + flush-on-build policy
  void drain() noexcept;       // every enqueued blob consumed; the open segment to the log's thread
  void close() noexcept;       // flush, footer, summary line (atexit)
  void forkedChild();          // the child abandons the parent's writer and starts its own file
  // The process is about to exec or to end without exit() (_exit, _Exit: process_end.cpp): the
  // trace is closed as at exit. Does nothing in a vfork child (live::own) or where no session started.
  static void processEnding() noexcept;
  // An exec failed and the process goes on: its later calls go to a new trace (as after a fork,
  // objects made before are unknown to it).
  static void execFailed() noexcept;
  void callStarting() { faults_.callStarting(); }  // a call starts being recorded (faults.h)

  // The C interface's setter once the session started (live_session.cpp): false (one line) once
  // the capture started without an export or the JSON+BIN is written.
  bool changeOutputJson(const std::string& path);
  std::string outputJsonPath();

 private:
  Session();
  void open();
  void openWriter(int fd);
  HeaderInfo header() const;
  [[gnu::cold]] Writer* writerSlowly();  // writer() before the first call, or once capture is off
  // mu_ held: writer()'s two answers without the lock (live_, off_), from w and the flags.
  void publishLocked(Writer* w);
  void reopenable();  // mu_ held: names back to the configured ones, the next call opens a new trace
  void summary(const Writer::Stats& s, pid_t finisher = 0);  // finisher: the pid that completes the trace

  Config config_;
  FlushRules rules_;  // of config_, worked out once (every recorded call asks)
  Faults faults_;
  Registry<Object> objects_;
  WeightsIdentity weights_;
  std::mutex mu_;
  JsonOutput json_;  // fed by writer_ (Writer::onCall): declared before it
  std::unique_ptr<Writer> writer_;
  std::atomic<Writer*> live_{nullptr};  // writer_ while capture is on (writer()'s answer), else null
  std::atomic<bool> off_{false};        // disabled or closed: writer() answers null without mu_
  Finishers finishers_;                 // weights left to write at a drain point, written off the app's clock
  bool opened_ = false, disabled_ = false, closed_ = false;
  std::string path_;
  std::string baseTrace_, baseJson_;  // the configured names, before a suffix made them free
  bool forked_ = false;               // a forked child: its names start at <trace>.<pid> (capture_names.h)
  bool jsonWritten_ = false;          // a JSON+BIN flush happened: the path no longer changes (mu_)
};

}  // namespace trtrace::capture
