// Text for the outside world, written one way by every tool:
// - trtrace::jsonString: the one JSON string writer (the converter's NVIDIA JSON, every --json
//   report): json.dumps's escapes (\" \\ \n \r \t \b \f, \u00XX for other control bytes), valid
//   UTF-8 as it is (ensure_ascii=False), and \ufffd for each byte that is not UTF-8 (JSON text
//   cannot carry it; a reader would refuse the document).
// - trtrace::terminalText: the one escaper of text shown on a terminal (dump, info, diff, and every
//   error line, which may echo a name from a trace). A trace is hostile input: a name holding ESC
//   could drive the terminal, a newline could forge a line of output, invalid UTF-8 or a bidi
//   override could show something other than what the bytes are. Printable UTF-8 stays as it is;
//   the rest is written as C-style escapes: \n \r \t \\, \xNN for a control byte, DEL or a byte
//   that is not valid UTF-8, \u{XXXX} for a C1 control, a bidi control or a line/paragraph
//   separator. quotedText also escapes '"' and adds the quotes (strings in a dump).
#pragma once
#include <string>
#include <string_view>

namespace trtrace {

void appendJsonString(std::string& out, std::string_view s);  // with its quotes
std::string jsonString(std::string_view s);                   // with its quotes

void appendTerminalText(std::string& out, std::string_view s, bool quoted = false);
std::string terminalText(std::string_view s);
std::string quotedText(std::string_view s);  // "..." with \" inside

}  // namespace trtrace
