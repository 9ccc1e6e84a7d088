// Text from elsewhere (what workers send, file names in data sets, what the
// coordinator relays) made safe for a terminal, and log lines written so.
//
// TerminalSafe escapes what a terminal would act on as \xNN: C0 control
// characters but newline and tab, DEL, and C1 controls (UTF-8 C2 80..C2
// 9F), so no string can move the cursor, retitle the window or hide text.
// OneLine also escapes newlines and tabs, for a field that is one line (a
// log line, a host, a job name, a table cell), so no string can forge a
// line or a row. LogLine writes "program: <OneLine(line)>\n" in one write:
// what the coordinator and the workers print on stderr.
//
// Thread safety: pure functions; LogLine's single fwrite keeps concurrent
// lines whole (stdio locks the stream).
#pragma once

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

std::string TerminalSafe(absl::string_view text);
std::string OneLine(absl::string_view text);
void LogLine(absl::string_view program, absl::string_view line,
             std::FILE* to = stderr);

}  // namespace gradsync
