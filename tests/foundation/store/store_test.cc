// The Store contract (foundation/store/store.h), checked against every
// in-process implementation: MemoryStore, FileStore and PrefixStore over a
// MemoryStore. RemoteStore is checked through a real server
// (tests/coordinator/server/).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "foundation/store/file_store.h"
#include "foundation/store/memory_store.h"
#include "foundation/store/prefix_store.h"

namespace gradsync {
namespace {

struct StoreKind {
  std::string name;
  std::function<std::shared_ptr<Store>(const std::string& dir)> make;
};

void PrintTo(const StoreKind& kind, std::ostream* os) { *os << kind.name; }

std::string PrintKind(const testing::TestParamInfo<StoreKind>& info) {
  return info.param.name;
}

class StoreContractTest : public testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        testing::TempDir(), "/store_test_", getpid(), "_", GetParam().name, "_",
        testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    store_ = GetParam().make(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::shared_ptr<Store> store_;
};

TEST_P(StoreContractTest, SetThenGet) {
  ASSERT_TRUE(store_->Set("k", "v").ok());
  auto v = store_->Get("k", absl::ZeroDuration());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "v");
  ASSERT_TRUE(store_->Set("k", "w").ok());
  EXPECT_EQ(*store_->Get("k", absl::ZeroDuration()), "w");
}

TEST_P(StoreContractTest, GetWaitsForASetFromAnotherThread) {
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(store_->Set("late", "x").ok());
  });
  auto v = store_->Get("late", absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "x");
}

TEST_P(StoreContractTest, GetTimesOutNamingTheKey) {
  auto v = store_->Get("missing", absl::Milliseconds(20));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(v.status().message().find("missing"), std::string::npos)
      << v.status();
}

TEST_P(StoreContractTest, AddCountsAndRejectsNonIntegers) {
  EXPECT_EQ(*store_->Add("n", 2), 2);
  EXPECT_EQ(*store_->Add("n", -5), -3);
  ASSERT_TRUE(store_->Set("s", "abc").ok());
  EXPECT_EQ(store_->Add("s", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Finding: the sum overflowed (undefined behaviour); now OUT_OF_RANGE and
  // the value stays.
  ASSERT_TRUE(store_->Set("big", "9223372036854775800").ok());
  EXPECT_EQ(store_->Add("big", 100).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*store_->Get("big", absl::Seconds(1)), "9223372036854775800");
  EXPECT_EQ(*store_->Add("big", 7), INT64_MAX);
}

TEST_P(StoreContractTest, AddIsAtomicAcrossThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) ASSERT_TRUE(store_->Add("c", 1).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(*store_->Add("c", 0), 100);
}

TEST_P(StoreContractTest, WaitNamesMissingKeys) {
  ASSERT_TRUE(store_->Set("a", "1").ok());
  absl::Status s = store_->Wait({"a", "b", "c"}, absl::Milliseconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("b"), std::string::npos) << s;
  EXPECT_NE(s.message().find("c"), std::string::npos) << s;
  ASSERT_TRUE(store_->Set("b", "").ok());
  ASSERT_TRUE(store_->Set("c", "").ok());
  EXPECT_TRUE(store_->Wait({"a", "b", "c"}, absl::ZeroDuration()).ok());
}

TEST_P(StoreContractTest, MultiGetReturnsValuesInOrderOnceAllExist) {
  ASSERT_TRUE(store_->Set("b", "2").ok());
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(store_->Set("a", "1").ok());
    ASSERT_TRUE(store_->Set("c", "").ok());
  });
  auto values = store_->MultiGet({"c", "a", "b", "a"}, absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<std::string>{"", "1", "2", "1"}));
}

TEST_P(StoreContractTest, MultiGetNamesMissingKeys) {
  ASSERT_TRUE(store_->Set("a", "1").ok());
  auto values = store_->MultiGet({"a", "b"}, absl::Milliseconds(20));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  // (A PrefixStore names the key as its base store holds it: "ns/b".)
  EXPECT_TRUE(absl::StrContains(values.status().message(), "missing keys: ") &&
              absl::EndsWith(values.status().message(), "b"))
      << values.status();
}

INSTANTIATE_TEST_SUITE_P(
    Implementations, StoreContractTest,
    testing::Values(StoreKind{"memory",
                              [](const std::string&) -> std::shared_ptr<Store> {
                                return std::make_shared<MemoryStore>();
                              }},
                    StoreKind{
                        "file",
                        [](const std::string& dir) -> std::shared_ptr<Store> {
                          return std::make_shared<FileStore>(dir);
                        }},
                    StoreKind{"prefix",
                              [](const std::string&) -> std::shared_ptr<Store> {
                                return std::make_shared<PrefixStore>(
                                    "ns/", std::make_shared<MemoryStore>());
                              }}),
    PrintKind);

TEST(PrefixStoreTest, KeepsNamespacesApart) {
  auto base = std::make_shared<MemoryStore>();
  PrefixStore a("a/", base), b("b/", base);
  ASSERT_TRUE(a.Set("k", "1").ok());
  ASSERT_TRUE(b.Set("k", "2").ok());
  EXPECT_EQ(*a.Get("k", absl::ZeroDuration()), "1");
  EXPECT_EQ(*b.Get("k", absl::ZeroDuration()), "2");
  EXPECT_EQ(*base->Get("a/k", absl::ZeroDuration()), "1");
  EXPECT_EQ(base->Size(), 2u);
}

TEST(FileStoreTest, ProcessesOnOneHostShareTheDirectory) {
  const std::string dir =
      absl::StrCat(testing::TempDir(), "/file_store_shared_", getpid());
  std::filesystem::remove_all(dir);
  FileStore first(dir), second(dir);
  ASSERT_TRUE(first.Set("k", "v").ok());
  EXPECT_EQ(*second.Get("k", absl::ZeroDuration()), "v");
  EXPECT_EQ(*first.Add("n", 3), 3);
  EXPECT_EQ(*second.Add("n", 4), 7);
  std::filesystem::remove_all(dir);
}

// Finding: a worker could fill the coordinator's memory through its
// attempt's store. Keys and bytes are bounded; replacing a value counts its
// new size only.
TEST(MemoryStoreTest, KeysAndBytesAreBounded) {
  MemoryStore store(MemoryStoreLimits{3, 40});
  ASSERT_TRUE(store.Set("a", "1234567890").ok());            // 11 bytes
  ASSERT_TRUE(store.Set("a", "12345678901234567890").ok());  // 21, replaced
  ASSERT_TRUE(store.Set("b", "x").ok());                     // 23
  EXPECT_EQ(store.Set("c", std::string(30, 'y')).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(*store.Add("n", 5) == 5);  // 25, three keys
  const absl::Status fourth = store.Set("d", "1");
  EXPECT_EQ(fourth.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.message().find("already 3 keys"), std::string::npos)
      << fourth;
  ASSERT_TRUE(store.Set("a", "").ok());  // shrinking is fine: 5 bytes
  EXPECT_TRUE(store.Set("c", std::string(30, 'y')).ok() == false);  // 4th key
  EXPECT_TRUE(store.Set("b", std::string(30, 'y')).ok());  // 1+5+31 = 37
}

TEST(MemoryStoreTest, CloseWakesWaitersAndFailsLaterCalls) {
  MemoryStore store;
  std::thread closer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    store.Close(absl::AbortedError("job ended"));
  });
  auto v = store.Get("never", absl::Seconds(60));
  closer.join();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.Set("x", "y").code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.Wait({"x"}, absl::Seconds(60)).code(),
            absl::StatusCode::kAborted);
  store.Close(absl::CancelledError("second close"));
  EXPECT_EQ(store.Add("n", 1).status().code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace gradsync
