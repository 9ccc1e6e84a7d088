// DeviceFeeder against a strict fake copy stream (fake_host_to_device.h):
// batches come out whole and in order although the source refills one host
// buffer on every call (as a loader reuses its slots), the next batch's copy
// is queued before the current one is handed over, Drain leaves no copy
// reading host memory, and copy errors reach the caller.
#include "worker/train/device_feeder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/fakes/fake_host_to_device.h"

namespace gradsync {
namespace {

// `n` batches of 2 images; batch i's images are all i and its labels i.
// One host buffer serves every batch, refilled in place by each call, so a
// batch's memory is only good until the next call.
class RefillingSource {
 public:
  explicit RefillingSource(int n) : n_(n) {}

  absl::StatusOr<bool> Next(Batch* batch) {
    ++calls_;
    if (next_ == n_) return false;
    images_.fill_(next_);
    labels_.fill_(next_);
    batch->index = next_++;
    batch->images = images_;
    batch->labels = labels_;
    batch->wait_ms = 0;
    return true;
  }
  DeviceFeeder::Source AsSource() {
    return [this](Batch* b) { return Next(b); };
  }
  int calls() const { return calls_; }

 private:
  const int n_;
  int next_ = 0, calls_ = 0;
  torch::Tensor images_ = torch::zeros({2, 1, 3, 3});
  torch::Tensor labels_ = torch::zeros({2}, torch::kLong);
};

TEST(DeviceFeederTest, BatchesArriveWholeAndInOrderWhileTheNextOneCopies) {
  FakeHostToDevice copies;
  DeviceFeeder feeder(&copies, absl::Seconds(5));
  RefillingSource source(5);
  feeder.Start(source.AsSource());
  Batch batch;
  for (int k = 0; k < 5; ++k) {
    auto got = feeder.Next(&batch);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(*got);
    EXPECT_EQ(batch.index, k);
    // Usable at once (the compute stream was ordered after its copy) and
    // batch k's own data, not the refill that followed it.
    EXPECT_TRUE(torch::all(batch.images == k).item<bool>()) << "batch " << k;
    EXPECT_TRUE(torch::all(batch.labels == k).item<bool>()) << "batch " << k;
    // Batch k+1 was on its way before batch k was handed over.
    EXPECT_EQ(copies.copies(), std::min(k + 2, 5)) << "batch " << k;
    EXPECT_GE(batch.wait_ms, 0);
  }
  auto end = feeder.Next(&batch);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(*end);
  EXPECT_TRUE(copies.violations().empty()) << copies.violations()[0];
}

TEST(DeviceFeederTest, DrainWaitsForTheQueuedCopyBeforeANewEpoch) {
  FakeHostToDevice copies;
  DeviceFeeder feeder(&copies, absl::Seconds(5));
  RefillingSource first(4);
  feeder.Start(first.AsSource());
  Batch batch;
  ASSERT_TRUE(feeder.Next(&batch).ok());  // batch 1 is now queued
  EXPECT_FALSE(copies.all_done());
  ASSERT_TRUE(feeder.Drain().ok());
  EXPECT_TRUE(copies.all_done());

  RefillingSource second(2);  // the next epoch starts over
  feeder.Start(second.AsSource());
  for (int k = 0; k < 2; ++k) {
    auto got = feeder.Next(&batch);
    ASSERT_TRUE(got.ok() && *got) << got.status();
    EXPECT_EQ(batch.index, k);
    EXPECT_TRUE(torch::all(batch.images == k).item<bool>());
  }
  EXPECT_TRUE(copies.violations().empty()) << copies.violations()[0];
}

TEST(DeviceFeederTest, ACopyThatFailsFailsNextWithItsError) {
  FakeHostToDevice copies;
  DeviceFeeder feeder(&copies, absl::Seconds(5));
  RefillingSource source(3);
  feeder.Start(source.AsSource());
  copies.FailWaits(absl::DeadlineExceededError("the copy did not finish"));
  Batch batch;
  auto got = feeder.Next(&batch);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(got.status().message(), "the copy did not finish");
  // The loader slot the copy may still read was not handed back.
  EXPECT_EQ(source.calls(), 1);
}

TEST(DeviceFeederTest, WithoutACopyStreamBatchesPassThrough) {
  DeviceFeeder feeder(nullptr, absl::Seconds(5));
  RefillingSource source(2);
  feeder.Start(source.AsSource());
  Batch batch;
  auto got = feeder.Next(&batch);
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ(batch.index, 0);
  EXPECT_EQ(source.calls(), 1);  // nothing read ahead
}

}  // namespace
}  // namespace gradsync
