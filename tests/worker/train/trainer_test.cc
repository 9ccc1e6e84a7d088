// Checkpoints and resume: a run interrupted at any checkpoint (mid-epoch
// included) and resumed from it ends with the same bits as the run that was
// never interrupted; bad resume requests fail with clear errors.
#include "worker/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "foundation/data_index/sampler.h"
#include "loader/cached_dataset.h"
#include "tests/fakes/fake_host_to_device.h"
#include "tests/fakes/rank_threads.h"
#include "tests/fakes/test_directory.h"
#include "worker/model/checkpoint.h"
#include "worker/train/compute_device.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshTestDirectory();
    // 3 classes x 10 random 28x28 grayscale PNGs.
    std::mt19937 gen(11);
    for (int c = 0; c < 3; ++c) {
      const fs::path dir =
          root_ / "data" / "train" / ("class" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < 10; ++i) {
        cv::Mat image(28, 28, CV_8UC1);
        for (int p = 0; p < 28 * 28; ++p) {
          image.data[p] = static_cast<uint8_t>((gen() % 128) + 40 * c);
        }
        ASSERT_TRUE(
            cv::imwrite((dir / (std::to_string(i) + ".png")).string(), image));
      }
    }
  }

  TrainSpec Spec(const std::string& checkpoint_dir) const {
    TrainSpec spec;
    spec.dataset_path = (root_ / "data").string();
    spec.split = "train";
    spec.model = "fashion_cnn";  // dropout, batch norm buffers
    spec.epochs = 2;
    spec.batch_size = 4;  // 30 samples: 8 batches per epoch
    spec.optimizer = OptimizerKind::kAdam;
    spec.learning_rate = 1e-3;
    spec.seed = 5;
    spec.loader_threads = 2;
    spec.prefetch_depth = 2;
    spec.augmentation = "affine";
    spec.checkpoint_directory = checkpoint_dir;
    spec.checkpoint_interval_steps = 3;
    spec.description = "trainer test: fashion_cnn";
    return spec;
  }

  // One rank (its own single-rank gloo communicator) trains `spec`;
  // `on_step` sees every step's report.
  absl::StatusOr<TrainResult> Run(
      const TrainSpec& spec,
      std::function<void(const StepReport&)> on_step = nullptr,
      HostToDevice* transfers = nullptr) const {
    auto comm = SoloCommunicator();
    if (!comm.ok()) return comm.status();
    TrainContext c;
    c.spec = spec;
    c.train_samples = 30;
    c.comm = comm->get();
    c.checksum_every = 0;
    c.metadata = {{"RANK", "0"}, {"WORLD_SIZE", "1"}};
    c.shard = [&spec](int epoch, bool) {
      SamplerOptions so;
      so.dataset_size = 30;
      so.seed = spec.seed;
      so.epoch = epoch;
      return DistributedSamplerIndices(so);
    };
    c.on_step = std::move(on_step);
    c.transfers = transfers;
    return Train(c);
  }

  std::string Dir(const std::string& name) const {
    return (root_ / name).string();
  }

  fs::path root_;
};

c10::impl::GenericDict Load(const std::string& path) {
  auto bytes = ReadFileBytes(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return torch::pickle_load(*bytes).toGenericDict();
}

void ExpectSameModel(const std::string& a, const std::string& b) {
  const auto ma = Load(a).at("model").toGenericDict();
  const auto mb = Load(b).at("model").toGenericDict();
  ASSERT_EQ(ma.size(), mb.size());
  for (const auto& item : ma) {
    const std::string name = item.key().toStringRef();
    EXPECT_TRUE(torch::equal(item.value().toTensor(), mb.at(name).toTensor()))
        << name << " differs between " << a << " and " << b;
  }
}

TEST_F(TrainerTest, ResumeFromAnyCheckpointEqualsTheUninterruptedRun) {
  auto full = Run(Spec(Dir("full")));
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->steps, 16);
  EXPECT_EQ(full->checkpoint, Dir("full") + "/model-step-16.pt");

  // Step 3: mid-epoch 0; step 9: mid-epoch 1.
  for (int from : {3, 9}) {
    SCOPED_TRACE("resumed from step " + std::to_string(from));
    const std::string out = Dir("resumed" + std::to_string(from));
    TrainSpec spec = Spec(out);
    spec.resume_from =
        Dir("full") + "/model-step-" + std::to_string(from) + ".pt";
    torch::manual_seed(999);  // the RNG must come from the checkpoint
    auto resumed = Run(spec);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->steps, 16);
    ExpectSameModel(full->checkpoint, resumed->checkpoint);
    // Adam's state continues too: the optimizer entries match.
    const auto oa = Load(full->checkpoint).at("optimizer").toGenericDict();
    const auto ob = Load(resumed->checkpoint).at("optimizer").toGenericDict();
    const auto sa = oa.at("state").toGenericDict();
    const auto sb = ob.at("state").toGenericDict();
    ASSERT_EQ(sa.size(), sb.size());
    for (const auto& item : sa) {
      const auto ea = item.value().toGenericDict();
      const auto eb = sb.at(item.key()).toGenericDict();
      EXPECT_TRUE(torch::equal(ea.at("exp_avg_sq").toTensor(),
                               eb.at("exp_avg_sq").toTensor()));
      EXPECT_EQ(ea.at("step").toTensor().item<float>(), 16);
    }
  }
}

TEST_F(TrainerTest, CheckpointCarriesPositionAndMetadata) {
  auto full = Run(Spec(Dir("full")));
  ASSERT_TRUE(full.ok()) << full.status();
  const auto c = Load(Dir("full") + "/model-step-9.pt");
  EXPECT_EQ(c.at("epoch").toInt(), 1);
  EXPECT_EQ(c.at("epoch_batch").toInt(), 1);
  EXPECT_EQ(c.at("step").toInt(), 9);
  EXPECT_EQ(c.at("world_size").toInt(), 1);
  EXPECT_EQ(c.at("batch_size").toInt(), 4);
  const auto meta = c.at("metadata").toGenericDict();
  EXPECT_EQ(meta.at("RANK").toStringRef(), "0");
  EXPECT_EQ(meta.at("WORLD_SIZE").toStringRef(), "1");
  EXPECT_NE(meta.at("job_spec").toStringRef().find("fashion_cnn"),
            std::string::npos);
  // No wrapper prefix on parameter names.
  const auto model = c.at("model").toGenericDict();
  EXPECT_TRUE(model.contains("layer1.0.weight"));
  EXPECT_TRUE(model.contains("layer1.1.running_mean"));
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(Dir("full"))) {
    EXPECT_EQ(entry.path().extension(), ".pt") << entry.path();
  }
}

TEST_F(TrainerTest, ResumeFromADirectoryTakesItsLatestCheckpoint) {
  ASSERT_TRUE(Run(Spec(Dir("full"))).ok());
  auto latest = ResolveCheckpoint(Dir("full"));
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, Dir("full") + "/model-step-16.pt");
  EXPECT_EQ(ResolveCheckpoint(Dir("nothing")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TrainerTest, BadResumeRequestsFailClearly) {
  ASSERT_TRUE(Run(Spec(Dir("full"))).ok());

  TrainSpec missing = Spec(Dir("x"));
  missing.resume_from = Dir("full") + "/nope.pt";
  auto r = Run(missing);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope.pt"), std::string::npos);

  // Mid-epoch position under another batch size: the samples would differ.
  TrainSpec other_batch = Spec(Dir("y"));
  other_batch.batch_size = 5;
  other_batch.resume_from = Dir("full") + "/model-step-3.pt";
  r = Run(other_batch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("same world size and batch size"),
            std::string::npos)
      << r.status();

  // Another model's checkpoint names the tensor that does not fit.
  TrainSpec other_model = Spec(Dir("z"));
  other_model.model = "mlp";
  other_model.resume_from = Dir("full");
  r = Run(other_model);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("model-step-16.pt"), std::string::npos)
      << r.status();

  // A file that is not a checkpoint.
  const std::string junk = Dir("junk.pt");
  { std::ofstream(junk) << "not a checkpoint"; }
  TrainSpec garbage = Spec(Dir("w"));
  garbage.resume_from = junk;
  r = Run(garbage);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("junk.pt"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// An nccl rank never trains on the CPU: without CUDA in LibTorch it fails
// with the reason (with CUDA it runs on the GPU it was given).
// bf16-mixed runs forward and loss under CPU autocast: it trains (finite,
// falling loss) and its numbers differ from float32's, so autocast was on.
TEST_F(TrainerTest, StepReportsSplitComputeIntoItsParts) {
  TrainSpec spec = Spec("");
  spec.epochs = 1;
  std::vector<StepReport> steps;
  auto run = Run(spec, [&](const StepReport& m) { steps.push_back(m); });
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(steps.size(), 8u);
  for (const StepReport& m : steps) {
    EXPECT_GT(m.forward_ms, 0) << "step " << m.step;
    EXPECT_GT(m.backward_ms, 0) << "step " << m.step;
    EXPECT_GT(m.optimizer_ms, 0) << "step " << m.step;  // Adam ran
    EXPECT_DOUBLE_EQ(m.compute_ms,
                     m.forward_ms + m.backward_ms + m.optimizer_ms);
    EXPECT_LE(m.compute_ms + m.allreduce_ms, m.step_ms);
  }
}

// The GPU's feeding path (batches copied a step ahead, the loss read a step
// late; device_feeder.h), run on the CPU through a strict fake copy stream:
// the same parameters and the same step reports, in order.
TEST_F(TrainerTest, FeedingAndLossReadingAsOnAGpuChangeNothing) {
  TrainSpec direct = Spec(Dir("direct"));
  TrainSpec fed = Spec(Dir("fed"));
  std::vector<StepReport> direct_steps, fed_steps;
  auto a = Run(direct, [&](const StepReport& m) { direct_steps.push_back(m); });
  ASSERT_TRUE(a.ok()) << a.status();
  FakeHostToDevice copies;
  auto b = Run(
      fed,
      [&](const StepReport& m) {
        fed_steps.push_back(m);
        // Reports come out in step order, none lost or doubled.
        EXPECT_EQ(m.step, static_cast<int64_t>(fed_steps.size()));
      },
      &copies);
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSameModel(a->checkpoint, b->checkpoint);
  ASSERT_EQ(fed_steps.size(), direct_steps.size());
  for (size_t i = 0; i < fed_steps.size(); ++i) {
    EXPECT_EQ(fed_steps[i].loss, direct_steps[i].loss) << "step " << i + 1;
    EXPECT_EQ(fed_steps[i].epoch, direct_steps[i].epoch) << "step " << i + 1;
  }
  EXPECT_EQ(copies.copies(), 16);  // 8 batches x 2 epochs, each copied once
  EXPECT_EQ(copies.reads(), 16);   // every loss read
  EXPECT_TRUE(copies.all_done());
  EXPECT_TRUE(copies.violations().empty()) << copies.violations()[0];
}

TEST_F(TrainerTest, DecodedImagesAreCachedWithoutChangingTheRun) {
  TrainSpec plain = Spec(Dir("plain"));
  TrainSpec cached = Spec(Dir("cached"));  // affine augmentation, 2 epochs
  auto budget = std::make_shared<MemoryBudget>(int64_t{1} << 20);
  cached.dataset_access.decoded_cache = budget;
  std::vector<int64_t> used_in_epoch_2;
  auto b = Run(cached, [&](const StepReport& m) {
    if (m.epoch == 1) used_in_epoch_2.push_back(budget->used());
  });
  ASSERT_TRUE(b.ok()) << b.status();
  auto a = Run(plain);
  ASSERT_TRUE(a.ok()) << a.status();
  // All 30 grayscale 28x28 images were held through the second epoch...
  ASSERT_FALSE(used_in_epoch_2.empty());
  for (int64_t used : used_in_epoch_2) {
    EXPECT_EQ(used, 30 * CachedDataset::ChargeFor(Image(28, 28, 1)));
  }
  // ...given back when the task ended, and the augmented run is the same.
  EXPECT_EQ(budget->used(), 0);
  ExpectSameModel(a->checkpoint, b->checkpoint);
}

TEST_F(TrainerTest, Bf16MixedTrainsOnTheCpu) {
  TrainSpec fp32 = Spec(Dir("fp32"));
  fp32.augmentation = "none";
  fp32.epochs = 3;
  TrainSpec bf16 = fp32;
  bf16.checkpoint_directory = Dir("bf16");
  bf16.precision = Precision::kBf16Mixed;
  auto a = Run(fp32);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Run(bf16);
  ASSERT_TRUE(b.ok()) << b.status();
  const auto ma = Load(a->checkpoint).at("model").toGenericDict();
  const auto mb = Load(b->checkpoint).at("model").toGenericDict();
  bool differs = false;
  for (const auto& item : ma) {
    const torch::Tensor wb = mb.at(item.key().toStringRef()).toTensor();
    ASSERT_TRUE(torch::isfinite(wb).all().item<bool>());
    if (wb.is_floating_point()) {
      EXPECT_EQ(wb.dtype(), torch::kFloat32);  // parameters stay float32
    }
    differs = differs || !torch::equal(item.value().toTensor(), wb);
  }
  EXPECT_TRUE(differs) << "bf16-mixed gave float32's exact parameters";
  const auto meta = Load(b->checkpoint).at("metadata").toGenericDict();
  EXPECT_EQ(meta.at("precision").toStringRef(), "bf16-mixed");
}

TEST_F(TrainerTest, SixteenMixedIsRefusedOnTheCpu) {
  TrainSpec spec = Spec("");
  spec.precision = Precision::k16Mixed;
  auto result = Run(spec);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("16-mixed needs a GPU"),
            std::string::npos)
      << result.status();
}

// Finding: --batch-size 2000000000 aborted every assigned worker. The task
// fails with a reason; the process (here: the test) goes on.
TEST_F(TrainerTest, AnImpossibleBatchFailsTheTaskNotTheProcess) {
  TrainSpec spec = Spec("");
  spec.batch_size = 2000000000;
  auto result = Run(spec);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(result.status().message().find("batch_size 2000000000"),
            std::string::npos)
      << result.status();
}

TEST(ComputeDeviceTest, NcclNeedsALibTorchWithCuda) {
  auto gloo = ComputeDevice(Backend::kGloo, 0);
  ASSERT_TRUE(gloo.ok());
  EXPECT_TRUE(gloo->is_cpu());
  auto nccl = ComputeDevice(Backend::kNccl, 0);
  if (torch::cuda::is_available()) {
    ASSERT_TRUE(nccl.ok()) << nccl.status();
    EXPECT_TRUE(nccl->is_cuda());
    EXPECT_EQ(ComputeDevice(Backend::kNccl, 1000).status().code(),
              absl::StatusCode::kInvalidArgument);
  } else {
    EXPECT_EQ(nccl.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(nccl.status().message().find("LibTorch has no CUDA"),
              std::string::npos)
        << nccl.status();
  }
}

}  // namespace
}  // namespace gradsync
