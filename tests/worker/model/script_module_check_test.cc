// A loaded model may compute on tensors, nothing else: CheckScriptModule
// refuses a forward that writes a file with torch.save (the generator shows
// running it in Python does), one that reads a file with torch.from_file,
// a forward hook that writes, a frozen module and a module traced with its
// dropout fixed in eval mode; scripted conv, resnet18
// and LSTM modules pass. Files made by make_model_files.py with Debian's
// PyTorch (skipped without it); each passes CheckScriptArchive first, as a
// worker checks them, and is loaded only then.
#include "worker/model/script_module_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fakes/model_files.h"
#include "worker/model/script_archive.h"

namespace gradsync {
namespace {

using testing::ModelFiles;

class ScriptModuleCheckTest : public testing::ModelFilesTest {
 protected:
  // The archive checks, then LibTorch's load, then the module's checks.
  static absl::Status Check(const std::string& name) {
    if (absl::Status s = CheckScriptArchive(ModelFiles::Get().Read(name));
        !s.ok()) {
      return s;
    }
    return CheckScriptModule(
        torch::jit::load(ModelFiles::Get().path(name).string()));
  }
};

TEST_F(ScriptModuleCheckTest, ModulesThatComputeOnTensorsPass) {
  for (const char* name : {"good.pt", "resnet18.pt", "recurrent.pt"}) {
    EXPECT_TRUE(Check(name).ok()) << name << ": " << Check(name);
  }
}

TEST_F(ScriptModuleCheckTest, FileAccessInForwardOrHooksIsRefused) {
  EXPECT_EQ(ModelFiles::Get().Read("save_forward.proof"), "wrote\n");
  const struct {
    const char* file;
    const char* says;
  } cases[] = {
      {"save_forward.pt", "forward calls aten::save"},
      {"from_file.pt", "forward calls aten::from_file"},
      {"save_hook.pt", "save_hook calls aten::save"},
  };
  for (const auto& c : cases) {
    const absl::Status s = Check(c.file);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition)
        << c.file << ": " << s;
    EXPECT_NE(s.message().find(c.says), std::string::npos)
        << c.file << ": " << s;
  }
  EXPECT_FALSE(std::filesystem::exists(ModelFiles::Get().path("leak")));
  EXPECT_FALSE(std::filesystem::exists("/tmp/gradsync-hook-leak"));
}

TEST_F(ScriptModuleCheckTest, ATraceWithAFixedDropoutModeIsRefused) {
  const absl::Status s = Check("traced_dropout.pt");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("aten::dropout with a constant 'train'"),
            std::string::npos)
      << s;
  // Scripted, the same layers read the module's training flag.
  EXPECT_TRUE(Check("recurrent.pt").ok());
}

TEST_F(ScriptModuleCheckTest, AFrozenModuleHasNothingToTrain) {
  const absl::Status s = Check("frozen.pt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("no trainable floating-point parameter"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace gradsync
