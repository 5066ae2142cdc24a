// The checks of a recorded call against the spec's description of its API id (trtrace/api_table.h):
// one validation, run by `trtrace verify` (Reader::verify: a problem is corruption) and by the
// player before it hands a call to the library (trace or NVIDIA JSON alike), so that what one
// passes the other never refuses, and a crafted trace cannot make the library read past an array.
// Each function returns "" when the call is sound, else one line saying which field is wrong.
#pragma once
#include <string>

#include "trtrace/reader.h"

namespace trtrace {

// The trace names the library the spec describes: its API ids are this build's (ids.lock).
bool isSpecLibrary(const Reader& reader);

// The trace's descriptor of an API id against this build's table: the same interface, method and
// number of arguments (what `trtrace dump` shows is the call the player makes). An id this build
// does not know is not checked (the player refuses it by itself).
std::string apiDescriptorProblem(const ApiInfo& described);

// Each array argument of `call` against the count argument its API pairs with it ([len=] or
// [bytes=] in the spec: api::ParamDesc::lengthOf): the count may not be negative and must be the
// number of elements the trace holds (the library reads `count` elements from the array it gets).
std::string arrayCountProblem(const CallView& call);

// Both, for a call the player is about to make: the descriptor `reader` holds for its API id, then
// its arrays.
std::string callProblem(const Reader& reader, const CallView& call);

}  // namespace trtrace
