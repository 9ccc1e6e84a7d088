// Exceptions at the data plane's boundaries become Status values: an
// allocation failure is RESOURCE_EXHAUSTED, a LibTorch check INTERNAL
// without its C++ backtrace, and the call's own Status passes through.
#include "loader/exception_status.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <new>
#include <stdexcept>

#include "absl/status/statusor.h"

namespace gradsync {
namespace {

TEST(ExceptionStatusTest, ExceptionsBecomeStatuses) {
  absl::Status s = GuardExceptions(
      "allocating", []() -> absl::Status { throw std::bad_alloc(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("allocating: out of memory"), std::string::npos);

  s = GuardExceptions("checking", []() -> absl::Status {
    TORCH_CHECK(1 == 2, "one is not two");
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("checking: one is not two"), std::string::npos)
      << s;
  EXPECT_EQ(s.message().find("frame #"), std::string::npos) << s;

  // LibTorch's CPU allocator failing is a resource problem too.
  s = GuardExceptions("a huge tensor", []() -> absl::Status {
    torch::empty({int64_t{1} << 50}, torch::kFloat32);
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;

  absl::StatusOr<int> v = GuardExceptions(
      "parsing",
      []() -> absl::StatusOr<int> { throw std::runtime_error("x"); });
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(v.status().message(), "parsing: x");
  v = GuardExceptions("fine", []() -> absl::StatusOr<int> { return 7; });
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
}

}  // namespace
}  // namespace gradsync
