// RemoteStore against a real coordinator, over its StoreSession stream and
// over unary calls: the Store contract on both paths, pipelined sets (a
// refused set fails the next op, naming its key), one thread's blocking get
// not holding up another thread's set, and a stream whose server never
// answers failing by the deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/client/remote_store.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

// A one-rank job's store as its rank 0 sees it through RemoteStore.
class StoreSessionTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    worker_ = std::make_unique<SimWorker>(cluster_.workers(), "host-a");
    cluster_.Submit(cluster_.Spec(1));
    const v1::Assignment a = worker_->AwaitAssignment();
    task_.set_worker_id(worker_->id());
    task_.set_job_id(a.job_id());
    task_.set_attempt(a.attempt());
    task_.set_rank(a.rank());
    store_ = NewStore();
  }

  std::unique_ptr<RemoteStore> NewStore() {
    RemoteStoreOptions options;
    options.stream = GetParam();
    return std::make_unique<RemoteStore>(
        v1::WorkerService::NewStub(grpc::CreateChannel(
            cluster_.address(), grpc::InsecureChannelCredentials())),
        task_, worker_->key(), options);
  }

  TestCluster cluster_;
  std::unique_ptr<SimWorker> worker_;
  v1::TaskRef task_;
  std::unique_ptr<RemoteStore> store_;
};

TEST_P(StoreSessionTest, SetThenGetWithoutWaiting) {
  // A set is visible to this client's next op, even one that may not wait.
  ASSERT_TRUE(store_->Set("k/v", "value").ok());
  auto v = store_->Get("k/v", absl::ZeroDuration());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "value");
}

TEST_P(StoreSessionTest, GetTimesOutNamingTheKey) {
  auto v = store_->Get("never", absl::Milliseconds(50));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(absl::StrContains(v.status().message(), "never")) << v.status();
  // The stream stays usable after a failed op.
  ASSERT_TRUE(store_->Set("after", "1").ok());
  EXPECT_TRUE(store_->Get("after", absl::Seconds(5)).ok());
}

TEST_P(StoreSessionTest, AddCountsAndRejectsNonIntegers) {
  EXPECT_EQ(*store_->Add("n/v", 2), 2);
  EXPECT_EQ(*store_->Add("n/v", 3), 5);
  ASSERT_TRUE(store_->Set("text", "abc").ok());
  EXPECT_EQ(store_->Add("text", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreSessionTest, WaitAndMultiGet) {
  ASSERT_TRUE(store_->Set("a", "1").ok());
  absl::Status missing = store_->Wait({"a", "b"}, absl::Milliseconds(50));
  EXPECT_EQ(missing.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(absl::StrContains(missing.message(), "b")) << missing;
  ASSERT_TRUE(store_->Set("b", "2").ok());
  auto values = store_->MultiGet({"b", "a"}, absl::Seconds(5));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<std::string>{"2", "1"}));
}

TEST_P(StoreSessionTest, AGetWaitsForASetFromAnotherClient) {
  std::unique_ptr<RemoteStore> other = NewStore();
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE(other->Set("late", "v").ok());
  });
  auto v = store_->Get("late", absl::Seconds(20));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "v");
}

TEST_P(StoreSessionTest, OneThreadsBlockingGetDoesNotHoldUpAnothersSet) {
  // Both threads share one RemoteStore: the set goes by unary call while
  // the get holds the stream, so the get is answered, not timed out.
  absl::StatusOr<std::string> v;
  std::thread getter([&] { v = store_->Get("shared", absl::Seconds(20)); });
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(store_->Set("shared", "v").ok());
  getter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "v");
}

TEST_P(StoreSessionTest, ARefusedSetIsReportedNamingItsKey) {
  // Keys ending in a number belong to that rank (key_owner.h): rank 0 may
  // not write "addr/1".
  absl::Status set = store_->Set("addr/1", "x");
  absl::Status reported = set;
  if (GetParam()) {
    // Pipelined: the set returns once sent; the next op reports it.
    EXPECT_TRUE(set.ok()) << set;
    reported = store_->Get("addr/1", absl::ZeroDuration()).status();
  }
  EXPECT_EQ(reported.code(), absl::StatusCode::kPermissionDenied) << reported;
  EXPECT_TRUE(absl::StrContains(reported.message(), "addr/1")) << reported;
  // Reported once; the next op is the store's as before.
  ASSERT_TRUE(store_->Set("addr/0", "mine").ok());
  auto v = store_->Get("addr/0", absl::ZeroDuration());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "mine");
}

TEST_P(StoreSessionTest, ManySetsInARowAreAllApplied) {
  // More sets than the stream leaves unsettled (64): settled on the way.
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) {
    keys.push_back(absl::StrCat("many/", i, "/v"));
    ASSERT_TRUE(store_->Set(keys.back(), absl::StrCat(i)).ok());
  }
  auto values = store_->MultiGet(keys, absl::Seconds(5));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0], "0");
  EXPECT_EQ((*values)[199], "199");
}

TEST_P(StoreSessionTest, ARefusedSetAmongManyIsNamed) {
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(store_->Set(absl::StrCat("ok/", i, "/v"), "1").ok());
  }
  absl::Status refused = store_->Set("bad/7", "x");
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(store_->Set(absl::StrCat("more/", i, "/v"), "1").ok());
  }
  if (GetParam()) {
    EXPECT_TRUE(refused.ok());
    refused = store_->Add("count", 1).status();
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(refused.message(), "bad/7")) << refused;
  // The sets after it were applied.
  EXPECT_TRUE(store_->Get("more/9/v", absl::ZeroDuration()).ok());
}

INSTANTIATE_TEST_SUITE_P(Paths, StoreSessionTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Stream" : "Unary";
                         });

// A gRPC server on a loopback port serving `service` (a fake coordinator),
// shut down at destruction.
class FakeServer {
 public:
  explicit FakeServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
  }
  // A RemoteStore of an empty task on it, whose calls are given `grace`
  // past their own deadline (RemoteStoreOptions::grace).
  RemoteStore Store(absl::Duration grace) const {
    RemoteStoreOptions options;
    options.grace = grace;
    return RemoteStore(v1::WorkerService::NewStub(grpc::CreateChannel(
                           absl::StrCat("127.0.0.1:", port_),
                           grpc::InsecureChannelCredentials())),
                       v1::TaskRef(), "key", options);
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A server that reads store ops and never answers them.
class SilentReactor
    : public grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply> {
 public:
  SilentReactor() { StartRead(&op_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      StartRead(&op_);
    } else {
      Finish(grpc::Status::OK);
    }
  }
  void OnDone() override { delete this; }

 private:
  v1::StoreOp op_;
};

class SilentStoreService : public v1::WorkerService::CallbackService {
  grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply>* StoreSession(
      grpc::CallbackServerContext*) override {
    return new SilentReactor;
  }
};

TEST(StoreSessionDeadlineTest, AServerThatNeverAnswersFailsTheOpByItsDeadline) {
  SilentStoreService service;
  FakeServer server(&service);
  {
    RemoteStore store = server.Store(absl::Milliseconds(300));
    // The set is sent (pipelined); the get waits for a reply that never
    // comes, and names both.
    ASSERT_TRUE(store.Set("s", "1").ok());
    auto v = store.Get("k", absl::Milliseconds(100));
    EXPECT_EQ(v.status().code(), absl::StatusCode::kDeadlineExceeded)
        << v.status();
    EXPECT_TRUE(absl::StrContains(v.status().message(), "store get"))
        << v.status();
    EXPECT_TRUE(absl::StrContains(v.status().message(), "keys s"))
        << v.status();
    // The next op opens a new stream, and fails the same way.
    EXPECT_EQ(store.Add("n", 1).status().code(),
              absl::StatusCode::kDeadlineExceeded);
  }  // closing the store does not wait for the silent server past its bound
}

// A server that answers one op per stream ("v" to a get) and then ends
// the stream, as a coordinator that restarted or a dropped connection
// would leave a client's idle stream.
class OneOpReactor
    : public grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply> {
 public:
  explicit OneOpReactor(std::atomic<int>* adds) : adds_(adds) {
    StartRead(&op_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    if (op_.has_add()) ++*adds_;
    reply_.mutable_get()->set_value("v");
    StartWrite(&reply_);
  }
  void OnWriteDone(bool) override { Finish(grpc::Status::OK); }
  void OnDone() override { delete this; }

 private:
  std::atomic<int>* adds_;
  v1::StoreOp op_;
  v1::StoreReply reply_;
};

class OneOpStoreService : public v1::WorkerService::CallbackService {
 public:
  std::atomic<int> adds{0};

 private:
  grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply>* StoreSession(
      grpc::CallbackServerContext*) override {
    return new OneOpReactor(&adds);
  }
};

TEST(StoreSessionDeadlineTest, AnOpOnAStreamThatDiedIdleGoesOnANewOne) {
  OneOpStoreService service;
  FakeServer server(&service);
  {
    RemoteStore store = server.Store(absl::Seconds(5));
    for (int i = 0; i < 3; ++i) {
      // Each get after the first finds the last stream ended.
      auto v = store.Get("k", absl::ZeroDuration());
      ASSERT_TRUE(v.ok()) << "get " << i << ": " << v.status();
      EXPECT_EQ(*v, "v");
    }
    // An add is not repeated (the first may have been applied): it fails,
    // naming the op, and the next op works.
    auto added = store.Add("n", 1);
    EXPECT_EQ(added.status().code(), absl::StatusCode::kUnavailable)
        << added.status();
    EXPECT_TRUE(absl::StrContains(added.status().message(), "store add"))
        << added.status();
    EXPECT_LE(service.adds.load(), 1);
    EXPECT_TRUE(store.Get("k", absl::ZeroDuration()).ok());
  }
}

}  // namespace
}  // namespace gradsync::testing
