// DDP semantics: W ranks with batch b reach the parameters of one process
// with batch W*b; parameters stay identical across ranks; every bucket is
// launched from a hook, during backward.
// cuda_reducer_test (GRADSYNC_TEST_NCCL, label gpu) runs the equivalence
// cases with the model on cuda:r and NCCL (buckets on the GPU, ordered with
// the compute stream), against the same CPU single-process run: one GPU per
// rank where there are enough, processes sharing them where not
// (rank_processes.h); it skips them, saying why, without a GPU and a CUDA
// LibTorch.
#include "worker/reducer/reducer.h"

#include <gtest/gtest.h>

#include <thread>

#include "absl/synchronization/mutex.h"
#include "tests/fakes/rank_threads.h"
#include "worker/model/memory_format.h"
#include "worker/model/models.h"

namespace gradsync {
namespace {

ModelShape Shape() {
  ModelShape s;
  s.channels = 1;
  s.height = 12;
  s.width = 12;
  s.classes = 5;
  return s;
}

// `accumulate` micro-batches per optimizer step, as the trainer does.
std::vector<torch::Tensor> Train(int rank, int world, Communicator* comm,
                                 const torch::Tensor& x, const torch::Tensor& y,
                                 int steps, ReducerOptions ro,
                                 int accumulate = 1,
                                 torch::Device device = torch::kCPU,
                                 bool channels_last = false) {
  std::shared_ptr<ImageClassifier> model;
  {
    // The global generator is shared by the rank threads: seed and build
    // atomically so rank 0's initialisation is the one the solo run has.
    static absl::Mutex init_mu(absl::kConstInit);
    absl::MutexLock lock(&init_mu);
    torch::manual_seed(1000 + rank);  // different inits: broadcast must fix
    model = *MakeModel("lenet", Shape());
  }
  model->to(device);
  if (channels_last)
    UseChannelsLast(model->parameters());  // as the trainer on CPU
  std::vector<torch::Tensor> all = model->parameters();
  for (const torch::Tensor& b : model->buffers()) all.push_back(b);
  EXPECT_TRUE(Reducer::BroadcastTensors(all, *comm).ok());
  auto reducer = Reducer::Create(model->parameters(), comm, ro);
  EXPECT_TRUE(reducer.ok()) << reducer.status();
  torch::optim::SGD opt(model->parameters(),
                        torch::optim::SGDOptions(0.1).momentum(0.9));
  const int64_t b = x.size(0) / world;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    const int64_t mb = b / accumulate;
    for (int micro = 0; micro < accumulate; ++micro) {
      const bool sync = micro == accumulate - 1;
      torch::Tensor xs = x.narrow(0, rank * b + micro * mb, mb).to(device);
      torch::Tensor ys = y.narrow(0, rank * b + micro * mb, mb).to(device);
      (*reducer)->set_require_sync(sync);
      if (sync) (*reducer)->PrepareForBackward();
      (torch::nn::functional::cross_entropy(model->forward(xs), ys) /
       accumulate)
          .backward();
    }
    EXPECT_TRUE((*reducer)->Finalize().ok());
    // Every bucket's all-reduce started from a hook, during backward.
    EXPECT_EQ((*reducer)->launched_during_backward(),
              (*reducer)->num_buckets());
    opt.step();
  }
  // CUDA: the last step's all-reduces were left in flight; none failed.
  EXPECT_TRUE((*reducer)->Drain().ok());
  std::vector<torch::Tensor> out;
  for (auto& p : model->parameters()) out.push_back(p.detach().cpu().clone());
  return out;
}

// A hash of the parameters' bytes, to compare ranks bit for bit.
std::string BytesHash(const std::vector<torch::Tensor>& params) {
  std::string bytes;
  for (const torch::Tensor& p : params) {
    const torch::Tensor c = p.contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  return std::to_string(std::hash<std::string>{}(bytes));
}

void ExpectEquivalent(int world, ReducerOptions ro, double rtol = 1e-4,
                      double atol = 1e-5, int accumulate = 1,
                      bool channels_last = false) {
  if (const std::string why = CannotRunRanks(kBackend, world); !why.empty()) {
    GTEST_SKIP() << why;
  }
  if (kBackend == Backend::kNccl) {
    // GPU kernels (TF32 convolutions by default on Ampere and later)
    // against the CPU's float32.
    rtol = std::max(rtol, 1e-2);
    atol = std::max(atol, 1e-3);
  }
  torch::manual_seed(7);
  const torch::Tensor x = torch::randn({8 * world, 1, 12, 12});
  const torch::Tensor y = torch::randint(0, 5, {8 * world});
  // One process on the whole batch (its own single-rank communicator).
  auto solo = SoloCommunicator();
  ASSERT_TRUE(solo.ok()) << solo.status();
  std::vector<torch::Tensor> expected = Train(0, 1, solo->get(), x, y, 5, ro);

  // Each rank checks its own parameters (ranks may be processes:
  // rank_processes.h), and that they hash as rank 0's do.
  RunRanks(kBackend, world, absl::Seconds(60), [&](int r, Communicator& comm) {
    at::set_num_threads(1);
    std::vector<torch::Tensor> got =
        Train(r, world, &comm, x, y, 5, ro, accumulate, RankDevice(kBackend, r),
              channels_last);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], expected[i], rtol, atol))
          << "rank " << r << " param " << i << " max diff "
          << (got[i] - expected[i]).abs().max().item<float>();
    }
    auto hashes = comm.AllGather(BytesHash(got));
    ASSERT_TRUE(hashes.ok()) << hashes.status();
    EXPECT_EQ((*hashes)[r], (*hashes)[0])
        << "rank " << r << "'s parameters differ from rank 0's";
  });
}

TEST(ReducerTest, OneRankEqualsTheSameBatch) { ExpectEquivalent(1, {}); }
TEST(ReducerTest, TwoRanksEqualOneDoubleBatch) { ExpectEquivalent(2, {}); }
TEST(ReducerTest, FourRanksEqualOneQuadrupleBatch) { ExpectEquivalent(4, {}); }
TEST(ReducerTest, ManySmallBucketsGiveTheSameResult) {
  ReducerOptions ro;
  ro.first_bucket_cap_bytes = 64;
  ro.bucket_cap_bytes = 4096;
  ExpectEquivalent(3, ro);
}

TEST(ReducerTest, GradientAccumulationMatchesTheWholeBatch) {
  ExpectEquivalent(2, {}, 1e-4, 1e-5, /*accumulate=*/2);
}

// The ranks' convolution weights are channels-last (memory_format.h), the
// single process's are not: broadcast, buckets and copies back respect the
// layout.
TEST(ReducerTest, ChannelsLastRanksEqualOneDoubleBatch) {
  ExpectEquivalent(2, {}, 1e-4, 1e-5, 1, /*channels_last=*/true);
}

TEST(ReducerTest, Fp16AndBf16CompressionStayClose) {
  ReducerOptions fp16;
  fp16.wire_dtype = torch::kHalf;
  ExpectEquivalent(2, fp16, 1e-2, 2e-3);
  ReducerOptions bf16;
  bf16.wire_dtype = torch::kBFloat16;
  ExpectEquivalent(2, bf16, 5e-2, 1e-2);
}

#ifndef GRADSYNC_TEST_NCCL  // the rest does not depend on the backend

TEST(ReducerTest, BucketsFollowDdpLayout) {
  auto comm = SoloCommunicator();
  ASSERT_TRUE(comm.ok()) << comm.status();
  ModelShape s;
  s.channels = 3;
  s.height = s.width = 32;
  auto model = *MakeModel("resnet18", s);
  auto params = model->parameters();
  auto reducer = Reducer::Create(params, comm->get(), {});
  ASSERT_TRUE(reducer.ok());
  // First bucket: the last parameters, about 1 MB; later ones up to 25 MB.
  const std::vector<int> first = (*reducer)->bucket_params(0);
  EXPECT_EQ(first.front(), static_cast<int>(params.size()) - 1);
  int64_t bytes = 0;
  for (int i : first) bytes += params[i].numel() * 4;
  EXPECT_LE(bytes, 3 << 20);
  EXPECT_GE((*reducer)->num_buckets(), 2);
  for (int b = 1; b < (*reducer)->num_buckets(); ++b) {
    int64_t bb = 0;
    for (int i : (*reducer)->bucket_params(b)) bb += params[i].numel() * 4;
    EXPECT_LE(bb, (25 << 20) + (10 << 20));
  }
}

// Gloo's default cap puts fashion_cnn's fc1.weight (5.5 MB, ready early in
// backward) in a bucket of its own, before the bucket of the convolutions'
// gradients (ready last); DDP's 25 MiB would put them together.
TEST(ReducerTest, GlooDefaultCapSendsALargeEarlyGradientAlone) {
  EXPECT_EQ(DefaultBucketCapBytes(Backend::kNccl), 25 << 20);
  auto comm = SoloCommunicator();
  ASSERT_TRUE(comm.ok()) << comm.status();
  auto model = *MakeModel("fashion_cnn", ModelShape{});
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  auto bucket_names = [&](const ReducerOptions& ro) {
    auto reducer = Reducer::Create(model->parameters(), comm->get(), ro);
    EXPECT_TRUE(reducer.ok()) << reducer.status();
    std::vector<std::vector<std::string>> out;
    for (int b = 0; b < (*reducer)->num_buckets(); ++b) {
      out.emplace_back();
      for (int i : (*reducer)->bucket_params(b)) out.back().push_back(names[i]);
    }
    return out;
  };
  ReducerOptions gloo;
  gloo.bucket_cap_bytes = DefaultBucketCapBytes(Backend::kGloo);
  const auto buckets = bucket_names(gloo);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[1], std::vector<std::string>{"fc1.weight"});
  EXPECT_EQ(buckets[2].back(), "layer1.0.weight");
  const auto ddp = bucket_names({});
  ASSERT_EQ(ddp.size(), 2u);  // fc1.weight waits with the convolutions
  EXPECT_EQ(ddp[1].front(), "fc1.weight");
}

// The seeds' Dropout2d on (N, 600) drops single activations in Python; a
// whole sample's activations are never all dropped together.
TEST(ModelsTest, Dropout2dOnFlatActivationsDropsElementsLikePython) {
  torch::manual_seed(3);
  const torch::Tensor y = PythonDropout2d(torch::ones({256, 600}), 0.25, true);
  const torch::Tensor zeros_per_row = y.eq(0).sum(1);
  EXPECT_EQ(zeros_per_row.eq(600).sum().item<int64_t>(), 0);
  EXPECT_EQ(zeros_per_row.eq(0).sum().item<int64_t>(), 0);
  EXPECT_NEAR(y.eq(0).to(torch::kFloat).mean().item<float>(), 0.25, 0.01);
  EXPECT_FLOAT_EQ(y.max().item<float>(), 1 / 0.75f);
  EXPECT_TRUE(torch::equal(PythonDropout2d(torch::ones({4, 6}), 0.25, false),
                           torch::ones({4, 6})));
}

// The layer's PyTorch order (Sequential: conv, bn, ReLU, pool) and the
// pool-before-ReLU order give the same outputs and gradients, bit for bit,
// also where windows hold ties and values <= 0.
TEST(ModelsTest, PoolingBeforeReluIsTheSameFunction) {
  for (bool channels_last : {false, true}) {
    torch::manual_seed(5);
    torch::nn::Sequential layer(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)),
        torch::nn::BatchNorm2d(4), torch::nn::ReLU(),
        torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
    if (channels_last) UseChannelsLast(layer->parameters());
    // Rounded inputs make equal values (ties) common.
    const torch::Tensor x = (torch::randn({3, 2, 8, 8}) * 2).round();
    auto run = [&](bool pytorch_order) {
      layer->zero_grad();
      torch::Tensor in = x.clone().requires_grad_(true);
      torch::Tensor out =
          pytorch_order ? layer->forward(in) : ConvBnPoolRelu(*layer, in);
      (out * torch::arange(out.numel()).view(out.sizes())).sum().backward();
      std::vector<torch::Tensor> r = {out.detach(), in.grad()};
      for (const auto& p : layer->parameters()) r.push_back(p.grad().clone());
      return r;
    };
    const auto a = run(true), b = run(false);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_GT(a[0].eq(0).sum().item<int64_t>(), 0);  // ReLU cut something
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::equal(a[i], b[i]))
          << "tensor " << i << (channels_last ? " (channels-last)" : "");
    }
  }
}

TEST(ModelsTest, ShapesAndNames) {
  ModelShape fm;
  auto cnn = MakeModel("fashion_cnn", fm);
  ASSERT_TRUE(cnn.ok());
  EXPECT_EQ((*cnn)->forward(torch::zeros({2, 1, 28, 28})).sizes(),
            (std::vector<int64_t>{2, 10}));
  std::vector<std::string> names;
  for (const auto& p : (*cnn)->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names.front(), "layer1.0.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "fc1.weight"), names.end());
  EXPECT_EQ((*cnn)->named_parameters()["fc1.weight"].sizes(),
            (std::vector<int64_t>{600, 2304}));
  for (const char* name : {"lenet", "mlp", "resnet18"}) {
    auto m = MakeModel(name, fm);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ((*m)->forward(torch::zeros({2, 1, 28, 28})).size(1), 10) << name;
  }
  ModelShape big;
  big.height = big.width = 32;
  EXPECT_EQ(MakeModel("fashion_cnn", big).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeModel("vgg", fm).status().code(),
            absl::StatusCode::kInvalidArgument);
}

#endif  // GRADSYNC_TEST_NCCL

}  // namespace
}  // namespace gradsync
