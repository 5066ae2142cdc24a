// Builder settings given on the command line (`--set Interface::method=VALUE`): the one change a
// benchmark or a what-if replay makes to a captured build. The method is named as the API spec
// names it and takes one scalar parameter (bool, integer, float or an enum, given by name); the
// value is read in the spec's type of that parameter. A setting replaces the argument of every
// recorded call of its method; a BuilderConfig setting the capture never made on the config a build
// uses is called on that config just before the build.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trtrace/api_table.h"
#include "trtrace/reader.h"

namespace trtrace::replay {

struct Setting {
  const api::ApiDesc* api = nullptr;  // the method (one scalar parameter)
  std::string text;                   // as given: "BuilderConfig::setBuilderOptimizationLevel=3"
  std::string value;                  // the value as given (an enumerator's name for an enum)
  bool isFloat = false;
  int64_t i = 0;  // Bool / integer / Enum value
  double f = 0;   // F32 / F64 value
  // What the replay did with it (the player's --json reports these).
  uint64_t replaced = 0, added = 0, rejected = 0;
};

// Parses `Interface::method=VALUE`; an unknown method, a method that is not a one-scalar setter, a
// value not of the parameter's type or an enumerator the enum does not have is one Error (Usage)
// line naming the setting.
Setting parseSetting(const std::string& given);

// The setting's call on `receiver`, as a call record the generated dispatch replays like any other
// (in place of a recorded call of its method, or added before the build at `seq`). It records no
// result: what the library answers is taken, and a bool setter's refusal is counted (Setting::rejected)
// instead of diverging. The record lives in `buf`.
CallView settingCall(const Setting& s, uint64_t receiver, uint32_t network, uint64_t seq, std::vector<uint8_t>& buf);

}  // namespace trtrace::replay
