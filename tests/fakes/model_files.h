// The model files tests check (tests/worker/model/make_model_files.py),
// made once per test process in a temporary directory with Debian's
// PyTorch, and removed at exit. made() is false where the script failed
// (no python3-torch): tests on ModelFilesTest then skip, quoting log().
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace gradsync::testing {

class ModelFiles {
 public:
  // The process's one set, made on first use.
  static const ModelFiles& Get();

  bool made() const { return made_; }
  const std::string& log() const { return log_; }
  std::filesystem::path path(const std::string& name) const {
    return dir_ / name;
  }
  // The bytes of a file (empty when missing).
  std::string Read(const std::string& name) const;

 private:
  ModelFiles();
  std::filesystem::path dir_;
  bool made_ = false;
  std::string log_;
};

// A fixture whose tests skip, saying why, where the files could not be made.
class ModelFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ModelFiles::Get().made()) {
      GTEST_SKIP() << "make_model_files.py failed (no python3-torch?): "
                   << ModelFiles::Get().log();
    }
  }
};

}  // namespace gradsync::testing
