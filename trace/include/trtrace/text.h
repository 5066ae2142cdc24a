// trtrace::jsonString: the one JSON string writer of every tool (the converter's NVIDIA JSON, every
// --json report): json.dumps's escapes (\" \\ \n \r \t \b \f, \u00XX for other control bytes),
// other bytes as they are (ensure_ascii=False).
#pragma once
#include <string>
#include <string_view>

namespace trtrace {

void appendJsonString(std::string& out, std::string_view s);  // with its quotes
std::string jsonString(std::string_view s);                   // with its quotes

}  // namespace trtrace
