// Terminal-safe text and log lines: escapes (C0 but newline and tab, DEL,
// C1), one-line fields, and LogLine's single escaped line.
#include "foundation/text/terminal_text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace gradsync {
namespace {

TEST(TerminalTextTest, ControlsAreEscapedAndTextIsKept) {
  EXPECT_EQ(TerminalSafe("plain é ✓"), "plain é ✓");
  EXPECT_EQ(TerminalSafe("a\x1b]0;title\x07z"), "a\\x1b]0;title\\x07z");
  EXPECT_EQ(TerminalSafe("del\x7f c1\xc2\x9b"), "del\\x7f c1\\xc2\\x9b");
  EXPECT_EQ(TerminalSafe("two\nlines\tand tab"), "two\nlines\tand tab");
  EXPECT_EQ(OneLine("two\nlines\tand tab"), "two\\x0alines\\x09and tab");
  EXPECT_EQ(OneLine("\r"), "\\x0d");
}

// Finding (issue 39, 7 and 8): the coordinator's and workers' stderr
// carried raw escapes and forged lines from what workers and data sets
// named. LogLine writes one escaped line.
TEST(TerminalTextTest, LogLineWritesOneEscapedLine) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  LogLine("coordinator",
          "job-1 failed: \x1b[2J innocent\n[rank 0] step 9 (FORGED)", file);
  LogLine("gradsync-worker", "ok", file);
  std::rewind(file);
  std::string out;
  char buffer[256];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    out.append(buffer, n);
  }
  std::fclose(file);
  EXPECT_EQ(out,
            "coordinator: job-1 failed: \\x1b[2J innocent\\x0a[rank 0] step 9 "
            "(FORGED)\ngradsync-worker: ok\n");
}

}  // namespace
}  // namespace gradsync
