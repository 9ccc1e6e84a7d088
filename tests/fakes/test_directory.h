// FreshTestDirectory: a directory of the running gtest test's own,
// <TempDir>/<suite>.<test>, emptied and created. ctest runs each test of a
// binary as its own process, in parallel, so each needs its own files.
// Header-only; call from SetUp or the test body.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace gradsync {

inline std::filesystem::path FreshTestDirectory() {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      (std::string(test->test_suite_name()) + "." + test->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace gradsync
