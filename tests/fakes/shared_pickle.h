// Pickle bytes whose values are shared through the memo ("billion
// laughs"): SharedChain(n) pushes one tuple that holds the tuple below it
// twice, n levels deep, in 4 bytes a level. Walked once per path it is
// 2^n values; walked once per value, n + 1.
// Header-only.
#pragma once

#include <string>

namespace gradsync::testing {

// Opcodes only (no PROTO, no STOP): EMPTY_LIST, BINPUT 0, then for each
// level BINGET i (the stack holds the previous value twice), TUPLE2,
// BINPUT i+1. n < 255.
inline std::string SharedChain(int n) {
  std::string out = "]q";
  out.push_back('\0');
  for (int i = 0; i < n; ++i) {
    out += 'h';
    out.push_back(static_cast<char>(i));
    out += '\x86';
    out += 'q';
    out.push_back(static_cast<char>(i + 1));
  }
  return out;
}

// BINUNICODE `s`: the string pushed.
inline std::string PickleString(const std::string& s) {
  std::string out = "X";
  for (int i = 0; i < 4; ++i) {
    out.push_back(static_cast<char>((s.size() >> (8 * i)) & 0xff));
  }
  return out + s;
}

}  // namespace gradsync::testing
