// fz::checkScript: is a build.py one that `trtrace export` may write? Used by fuzz_export on the
// script of every mutated trace, in process (no Python started: fast enough for run.sh's short
// runs). It accepts a strict subset of Python that the generator's statements fall in, so a script
// it accepts parses (ast.parse), and nothing of the trace can be a statement of its own:
//  - every byte is printable ASCII or '\n';
//  - the shebang, then a docstring holding no '"' and only well-formed escapes, then the fixed
//    prelude (export_python.h kScriptPrelude), `NETWORKS = <int>`, the body, the fixed end;
//  - each body line is a whole-line comment ("# ..."), or one statement of the generator's shapes:
//      del NAME | NAME = EXPR | NAME.attr = EXPR | EXPR
//    where EXPR is a number, a "..." literal (only \\ \" \xNN \uNNNN \UNNNNNNNN escapes), None,
//    True, False, -EXPR, a list or tuple of EXPRs, or a variable with attributes and calls after
//    it. A variable is one the prelude defines (trt, logger) or an earlier line assigned (names
//    ending in a digit: network_definition_0, w3); only weights(), save(), stream(), read(), read_call() and float()
//    are called by bare name; no Python keyword is used as a name.
#pragma once
#include <cctype>
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fz {

namespace pycheck {

struct Tok {
  enum Kind { Name, Num, Str, Punct, End } kind;
  std::string_view s;
};

inline bool isKeyword(std::string_view n) {
  static const std::set<std::string_view> k = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return k.count(n) != 0;
}

inline bool hexDigits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// Length of the escape sequence starting with the '\' at s[i], 0 if it is not one pyEscape writes.
inline size_t escapeAt(std::string_view s, size_t i) {
  if (i + 1 >= s.size()) return 0;
  switch (s[i + 1]) {
    case '\\':
    case '"': return 2;
    case 'x': return hexDigits(s, i + 2, 2) ? 4 : 0;
    case 'u': return hexDigits(s, i + 2, 4) ? 6 : 0;
    case 'U':
      return hexDigits(s, i + 2, 8) && std::stoul(std::string(s.substr(i + 2, 8)), nullptr, 16) <= 0x10ffff ? 10 : 0;
    default: return 0;
  }
}

// The text of a literal up to (not including) its closing '"': no raw '"', escapes well formed.
// Returns the position of the closing '"' or npos.
inline size_t literalEnd(std::string_view s, size_t i) {
  while (i < s.size() && s[i] != '"') {
    if (s[i] == '\\') {
      const size_t n = escapeAt(s, i);
      if (!n) return std::string_view::npos;
      i += n;
    } else {
      ++i;
    }
  }
  return i < s.size() ? i : std::string_view::npos;
}

inline size_t numberEnd(std::string_view s, size_t i) {
  auto digits = [&](size_t j) {
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    return j;
  };
  const size_t start = i;
  i = digits(i);
  if (s[start] == '0' && i - start > 1) return std::string_view::npos;  // Python refuses 01
  if (i < s.size() && s[i] == '.') i = digits(i + 1);
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1 < s.size() && (s[i + 1] == '+' || s[i + 1] == '-') ? i + 2 : i + 1;
    if (digits(j) == j) return std::string_view::npos;
    i = digits(j);
  }
  return i;
}

// Splits one statement line into tokens; false on anything outside the subset.
inline bool lex(std::string_view line, std::vector<Tok>& out) {
  out.clear();
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    size_t end = i + 1;
    Tok::Kind k = Tok::Punct;
    if (c == ' ') {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) ++end;
      k = Tok::Name;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      end = numberEnd(line, i);
      if (end == std::string_view::npos ||
          (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')))
        return false;
      k = Tok::Num;
    } else if (c == '"') {
      end = literalEnd(line, i + 1);
      if (end == std::string_view::npos) return false;
      ++end;
      k = Tok::Str;
    } else if (std::string_view("()[],=.-").find(c) == std::string_view::npos) {
      return false;
    }
    out.push_back({k, line.substr(i, end - i)});
    i = end;
  }
  out.push_back({Tok::End, {}});
  return true;
}

// Recursive descent over the tokens of one statement (see the file comment).
class Statement {
 public:
  Statement(const std::vector<Tok>& t, std::set<std::string, std::less<>>& vars) : t_(t), vars_(vars) {}

  bool parse() {
    if (is(0, Tok::Name, "del")) {
      if (t_[1].kind != Tok::Name || !vars_.count(t_[1].s) || t_[2].kind != Tok::End) return false;
      vars_.erase(vars_.find(t_[1].s));
      return true;
    }
    if (t_[0].kind == Tok::Name && is(1, Tok::Punct, "=")) {
      const std::string_view n = t_[0].s;
      if (isKeyword(n) || !std::isdigit(static_cast<unsigned char>(n.back())) ||
          !std::islower(static_cast<unsigned char>(n[0])))
        return false;
      i_ = 2;
      if (!expr(0) || t_[i_].kind != Tok::End) return false;
      vars_.emplace(n);  // after its value: `x = x` does not define x
      return true;
    }
    if (t_[0].kind == Tok::Name && is(1, Tok::Punct, ".") && t_[2].kind == Tok::Name && is(3, Tok::Punct, "=")) {
      if (!vars_.count(t_[0].s) || isKeyword(t_[2].s)) return false;
      i_ = 4;
    }
    return expr(0) && t_[i_].kind == Tok::End;
  }

 private:
  bool is(size_t i, Tok::Kind k, std::string_view s) const { return i < t_.size() && t_[i].kind == k && t_[i].s == s; }
  bool punct(std::string_view s) {
    if (!is(i_, Tok::Punct, s)) return false;
    ++i_;
    return true;
  }

  bool expr(int depth) {
    if (depth > 32) return false;
    if (punct("-")) return expr(depth + 1);
    const Tok a = t_[i_++];
    if (a.kind == Tok::Num || a.kind == Tok::Str) return true;
    if (a.kind == Tok::Punct && (a.s == "(" || a.s == "[")) return list(a.s == "(" ? ")" : "]", depth);
    if (a.kind != Tok::Name) return false;
    if (a.s == "None" || a.s == "True" || a.s == "False") return true;
    const bool callable =
        a.s == "weights" || a.s == "save" || a.s == "stream" || a.s == "read" || a.s == "read_call" || a.s == "float";
    if (isKeyword(a.s) || !(vars_.count(a.s) || callable) || (callable != is(i_, Tok::Punct, "("))) return false;
    while (true) {  // trailers: .name and (args)
      if (punct(".")) {
        if (t_[i_].kind != Tok::Name || isKeyword(t_[i_].s)) return false;
        ++i_;
      } else if (punct("(")) {
        if (!list(")", depth)) return false;
      } else {
        return true;
      }
    }
  }

  // The items after an opening bracket, up to and including `close`.
  bool list(std::string_view close, int depth) {
    while (!punct(close)) {
      if (!expr(depth + 1)) return false;
      if (!punct(",") && !is(i_, Tok::Punct, close)) return false;
    }
    return true;
  }

  const std::vector<Tok>& t_;
  std::set<std::string, std::less<>>& vars_;
  size_t i_ = 0;
};

// The docstring after the shebang; returns the position after its closing line, or npos.
inline size_t docstringEnd(std::string_view script) {
  static const std::string_view open = "#!/usr/bin/env python3\n\"\"\"";
  if (script.substr(0, open.size()) != open) return std::string_view::npos;
  const size_t close = literalEnd(script, open.size());  // no '"' inside: the first one closes it
  if (close == std::string_view::npos || script.substr(close, 4) != "\"\"\"\n") return std::string_view::npos;
  return close + 4;
}

}  // namespace pycheck

// "" if `script` is a build.py the exporter may write (see the file comment), else what is wrong.
inline std::string checkScript(std::string_view script, std::string_view prelude, std::string_view end) {
  using namespace pycheck;
  for (char c : script)
    if (c != '\n' && (c < 0x20 || c > 0x7e)) return "holds a byte that is not printable ASCII";
  size_t at = docstringEnd(script);
  if (at == std::string_view::npos) return "does not start with the shebang and a well-formed docstring";
  static const std::string_view networks = "NETWORKS = ";
  if (script.substr(at, prelude.size()) != prelude || script.substr(at + prelude.size(), networks.size()) != networks)
    return "does not have the fixed prelude after its docstring";
  at += prelude.size() + networks.size();
  const size_t nl = script.find('\n', at);
  if (nl == std::string_view::npos || nl == at ||
      script.substr(at, nl - at).find_first_not_of("0123456789") != std::string_view::npos)
    return "NETWORKS is not a number";
  if (script.size() < nl + 1 + end.size() || script.substr(script.size() - end.size()) != end)
    return "does not have the fixed end";
  std::string_view body = script.substr(nl + 1, script.size() - end.size() - nl - 1);
  std::set<std::string, std::less<>> vars = {"trt", "logger"};
  std::vector<Tok> toks;
  for (size_t line = 1; !body.empty(); ++line) {
    const size_t e = body.find('\n');
    if (e == std::string_view::npos) return "body line " + std::to_string(line) + " has no end";
    const std::string_view s = body.substr(0, e);
    body.remove_prefix(e + 1);
    if (s.substr(0, 2) == "# ") continue;
    if (!lex(s, toks) || !Statement(toks, vars).parse())
      return "body line " + std::to_string(line) +
             " is not a statement the generator writes: " + std::string(s.substr(0, 200));
  }
  return "";
}

}  // namespace fz
