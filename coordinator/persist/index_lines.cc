#include "coordinator/persist/index_lines.h"

#include <fstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

void ReadIndexLines(
    const std::string& path, absl::string_view what, int max_fields,
    const std::function<bool(const std::vector<std::string>& fields)>& parse) {
  std::ifstream in(path);
  if (!in) return;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::vector<std::string> fields;
    if (max_fields > 0) {
      fields = absl::StrSplit(line, absl::MaxSplits('\t', max_fields - 1));
    } else {
      fields = absl::StrSplit(line, '\t');
    }
    if (!parse(fields)) {
      LogLine("coordinator",
              absl::StrFormat("%s %s line %d is malformed; skipped: %s", what,
                              path, line_no, line));
    }
  }
}

}  // namespace gradsync
