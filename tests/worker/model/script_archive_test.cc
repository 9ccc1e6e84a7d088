// A model file is code: CheckScriptArchive refuses, before LibTorch reads
// it, a module whose __setstate__ writes a file when loaded (the test's
// generator shows Python's loader does write it), a zip bomb, a truncated
// archive, pickles naming os.system, a torch.classes object or a class no
// code defines, and a file format this LibTorch does not read; a plain
// scripted module passes. The files are made by make_model_files.py with
// Debian's PyTorch (skipped without it).
#include "worker/model/script_archive.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fakes/model_files.h"

namespace gradsync {
namespace {

using testing::ModelFiles;

class ScriptArchiveTest : public testing::ModelFilesTest {
 protected:
  static absl::Status Check(const std::string& name,
                            const ScriptArchiveLimits& limits = {}) {
    return CheckScriptArchive(ModelFiles::Get().Read(name), limits);
  }
  static void ExpectRefused(const std::string& name, absl::StatusCode code,
                            const std::string& says) {
    const absl::Status s = Check(name);
    EXPECT_EQ(s.code(), code) << name << ": " << s;
    EXPECT_NE(s.message().find(says), std::string::npos) << name << ": " << s;
  }
};

TEST_F(ScriptArchiveTest, PlainScriptedModulesPass) {
  for (const char* name : {"good.pt", "resnet18.pt", "recurrent.pt"}) {
    EXPECT_TRUE(Check(name).ok()) << name << ": " << Check(name);
  }
}

TEST_F(ScriptArchiveTest, ASetstateThatRunsWhileLoadingIsRefused) {
  // The file is hostile for real: Python's torch.jit.load wrote the file.
  EXPECT_EQ(ModelFiles::Get().Read("setstate.proof"), "wrote\n");
  ExpectRefused("setstate.pt", absl::StatusCode::kInvalidArgument,
                "defines __setstate__, which LibTorch runs while loading");
  EXPECT_FALSE(std::filesystem::exists(ModelFiles::Get().path("pwned")));
}

TEST_F(ScriptArchiveTest, BombsAndBrokenArchivesAreRefusedBeforeInflating) {
  ExpectRefused("bomb.pt", absl::StatusCode::kInvalidArgument,
                "code/__torch__/bomb.py: inflates to 67108864 bytes, more "
                "than the limit of 16777216");
  ExpectRefused("truncated.pt", absl::StatusCode::kInvalidArgument,
                "not a TorchScript archive");
  ExpectRefused("version.pt", absl::StatusCode::kFailedPrecondition,
                "file format version 99");
  // Smaller limits apply to every entry and to the whole.
  ScriptArchiveLimits tight;
  tight.max_entry_bytes = 1000;
  EXPECT_EQ(Check("good.pt", tight).code(), absl::StatusCode::kInvalidArgument);
  tight = {};
  tight.max_entries = 3;
  EXPECT_NE(Check("good.pt", tight).message().find("more than 3"),
            std::string::npos);
}

TEST_F(ScriptArchiveTest, PicklesNameOnlyWhatAPlainModuleNeeds) {
  ExpectRefused("global.pt", absl::StatusCode::kInvalidArgument,
                "data.pkl: names the global 'os system'");
  ExpectRefused("classes.pt", absl::StatusCode::kInvalidArgument,
                "'__torch__.torch.classes.evil Thing'");
  ExpectRefused("stranger.pt", absl::StatusCode::kInvalidArgument,
                "names the class '__torch__ Stranger', which the file's code "
                "does not define");
}

TEST(ScriptArchiveBytesTest, NotAZipIsRefused) {
  const absl::Status s = CheckScriptArchive("this is not a zip archive");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("not a TorchScript archive"), std::string::npos);
}

}  // namespace
}  // namespace gradsync
