#include "coordinator/kv_store.h"

#include <gtest/gtest.h>

#include <thread>

namespace gradsync {
namespace {

TEST(KvStoreTest, SetThenGet) {
  KvStore store;
  ASSERT_TRUE(store.Set("k", "v").ok());
  auto v = store.Get("k", absl::Now());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "v");
}

TEST(KvStoreTest, GetWaitsForASetFromAnotherThread) {
  KvStore store;
  std::thread setter([&] { ASSERT_TRUE(store.Set("late", "x").ok()); });
  auto v = store.Get("late", absl::Now() + absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "x");
}

TEST(KvStoreTest, GetTimesOutNamingTheKey) {
  KvStore store;
  auto v = store.Get("missing", absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(v.status().message().find("missing"), std::string::npos);
}

TEST(KvStoreTest, AddCountsAndRejectsNonIntegers) {
  KvStore store;
  EXPECT_EQ(*store.Add("n", 2), 2);
  EXPECT_EQ(*store.Add("n", -5), -3);
  ASSERT_TRUE(store.Set("s", "abc").ok());
  EXPECT_EQ(store.Add("s", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KvStoreTest, WaitNamesMissingKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set("a", "1").ok());
  absl::Status s = store.Wait({"a", "b", "c"}, absl::Now());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("b, c"), std::string::npos) << s;
  ASSERT_TRUE(store.Set("b", "").ok());
  ASSERT_TRUE(store.Set("c", "").ok());
  EXPECT_TRUE(store.Wait({"a", "b", "c"}, absl::Now()).ok());
}

TEST(KvStoreTest, CloseWakesWaiters) {
  KvStore store;
  std::thread closer([&] { store.Close(absl::AbortedError("job ended")); });
  auto v = store.Get("never", absl::Now() + absl::Seconds(60));
  closer.join();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.Set("x", "y").code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace gradsync
