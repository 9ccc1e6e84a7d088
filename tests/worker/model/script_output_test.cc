// What a model's code prints and warns reaches the log escaped, one line
// each: printer.pt's forward prints and warns ESC ] 0 ; ... BEL ESC [ 2 J
// and a newline followed by a forged log line.
#include "worker/model/script_output.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fakes/model_files.h"
#include "worker/model/script_forward.h"
#include "worker/model/script_module_check.h"

namespace gradsync {
namespace {

using testing::ModelFiles;

class ScriptOutputTest : public testing::ModelFilesTest {};

TEST_F(ScriptOutputTest, PrintsAndWarningsAreEscapedLines) {
  std::vector<std::string> lines;
  RouteModelOutput(
      [&lines](const std::string& line) { lines.push_back(line); });
  torch::jit::Module printer =
      torch::jit::load(ModelFiles::Get().path("printer.pt").string());
  // Printing and warning are allowed (prim::Print, aten::warn): escaped.
  EXPECT_TRUE(CheckScriptModule(printer).ok()) << CheckScriptModule(printer);
  ASSERT_TRUE(ScriptForward(printer, torch::randn({2, 4}), 2).ok());
  RouteModelOutput();  // back to stderr
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[0],
      "model: evil\\x1b]0;title\\x07\\x1b[2J\\x0agradsync-worker: FORGED");
  EXPECT_EQ(lines[1], "model warning: warned\\x1b[2J\\x0aFORGED");
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace gradsync
