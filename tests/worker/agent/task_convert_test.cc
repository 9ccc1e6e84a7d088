#include "worker/agent/task_convert.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(TaskConvertTest, EveryJobSpecFieldTheTrainerUsesArrives) {
  v1::JobSpec spec;
  spec.mutable_dataset()->set_path("/data/fashion");
  spec.mutable_dataset()->set_split("train");
  spec.mutable_dataset()->set_eval_split("test");
  spec.mutable_dataset()->set_channels(1);
  spec.set_augmentation("affine");
  spec.set_loader_threads(3);
  spec.set_prefetch_depth(4);
  spec.set_model("fashion_cnn");
  spec.set_epochs(5);
  spec.set_batch_size(100);
  spec.set_seed(42);
  spec.mutable_optimizer()->set_type(v1::OPTIMIZER_TYPE_SGD);
  spec.mutable_optimizer()->set_learning_rate(0.5);
  spec.mutable_optimizer()->set_momentum(0.9);
  spec.mutable_optimizer()->set_weight_decay(1e-4);
  spec.set_grad_accumulation_steps(2);
  spec.set_gradient_compression(v1::GRADIENT_COMPRESSION_BF16);
  spec.set_bucket_cap_bytes(1 << 20);
  spec.set_precision(v1::PRECISION_BF16_MIXED);
  spec.mutable_checkpoint()->set_directory("/ckpt");
  spec.mutable_checkpoint()->set_interval_steps(7);
  spec.mutable_checkpoint()->set_resume_from("/ckpt/model-step-7.pt");

  const TrainSpec t = ToTrainSpec(spec);
  EXPECT_EQ(t.dataset_path, "/data/fashion");
  EXPECT_EQ(t.split, "train");
  EXPECT_EQ(t.eval_split, "test");
  EXPECT_EQ(t.channels, 1);
  EXPECT_EQ(t.augmentation, "affine");
  EXPECT_EQ(t.loader_threads, 3);
  EXPECT_EQ(t.prefetch_depth, 4);
  EXPECT_EQ(t.model, "fashion_cnn");
  EXPECT_EQ(t.epochs, 5);
  EXPECT_EQ(t.batch_size, 100);
  EXPECT_EQ(t.seed, 42);
  EXPECT_EQ(t.optimizer, OptimizerKind::kSgd);
  EXPECT_DOUBLE_EQ(t.learning_rate, 0.5);
  EXPECT_DOUBLE_EQ(t.momentum, 0.9);
  EXPECT_DOUBLE_EQ(t.weight_decay, 1e-4);
  EXPECT_EQ(t.grad_accumulation_steps, 2);
  EXPECT_EQ(t.compression, WireCompression::kBf16);
  EXPECT_EQ(t.bucket_cap_bytes, 1 << 20);
  EXPECT_EQ(t.precision, Precision::kBf16Mixed);
  EXPECT_EQ(t.checkpoint_directory, "/ckpt");
  EXPECT_EQ(t.checkpoint_interval_steps, 7);
  EXPECT_EQ(t.resume_from, "/ckpt/model-step-7.pt");
  EXPECT_EQ(t.description, spec.ShortDebugString());

  spec.mutable_optimizer()->set_type(v1::OPTIMIZER_TYPE_UNSPECIFIED);
  spec.set_gradient_compression(v1::GRADIENT_COMPRESSION_FP16);
  EXPECT_EQ(ToTrainSpec(spec).optimizer, OptimizerKind::kAdam);
  EXPECT_EQ(ToTrainSpec(spec).compression, WireCompression::kFp16);
  spec.set_precision(v1::PRECISION_16_MIXED);
  EXPECT_EQ(ToTrainSpec(spec).precision, Precision::k16Mixed);
  spec.clear_precision();
  EXPECT_EQ(ToTrainSpec(spec).precision, Precision::k32);
}

TEST(TaskConvertTest, BackendsAndReports) {
  EXPECT_EQ(ToBackend(v1::BACKEND_NCCL), Backend::kNccl);
  EXPECT_EQ(ToBackend(v1::BACKEND_GLOO), Backend::kGloo);

  StepReport s;
  s.rank = 1;
  s.epoch = 2;
  s.step = 30;
  s.steps_per_epoch = 12;
  s.loss = 0.25;
  s.samples_per_sec = 1000;
  s.data_wait_ms = 1;
  s.compute_ms = 2;
  s.forward_ms = 0.5;
  s.backward_ms = 1.25;
  s.optimizer_ms = 0.25;
  s.allreduce_ms = 3;
  s.allreduce_total_ms = 4;
  s.step_ms = 6;
  s.time_unix_ms = 123;
  s.skipped_samples = 5;
  s.param_checksum = 7.5;
  const v1::StepMetrics m = ToProto(s);
  EXPECT_EQ(m.rank(), 1);
  EXPECT_EQ(m.epoch(), 2);
  EXPECT_EQ(m.step(), 30);
  EXPECT_EQ(m.steps_per_epoch(), 12);
  EXPECT_DOUBLE_EQ(m.loss(), 0.25);
  EXPECT_DOUBLE_EQ(m.samples_per_sec(), 1000);
  EXPECT_DOUBLE_EQ(m.data_wait_ms(), 1);
  EXPECT_DOUBLE_EQ(m.compute_ms(), 2);
  EXPECT_DOUBLE_EQ(m.forward_ms(), 0.5);
  EXPECT_DOUBLE_EQ(m.backward_ms(), 1.25);
  EXPECT_DOUBLE_EQ(m.optimizer_ms(), 0.25);
  EXPECT_DOUBLE_EQ(m.allreduce_ms(), 3);
  EXPECT_DOUBLE_EQ(m.allreduce_total_ms(), 4);
  EXPECT_DOUBLE_EQ(m.step_ms(), 6);
  EXPECT_EQ(m.time_unix_ms(), 123);
  EXPECT_EQ(m.skipped_samples(), 5);
  EXPECT_DOUBLE_EQ(m.param_checksum(), 7.5);

  const v1::EvalMetrics e = ToProto(EvalReport{3, 0.9, 0.3, 1000});
  EXPECT_EQ(e.epoch(), 3);
  EXPECT_DOUBLE_EQ(e.accuracy(), 0.9);
  EXPECT_DOUBLE_EQ(e.loss(), 0.3);
  EXPECT_EQ(e.samples(), 1000);

  const v1::CheckpointCommit c =
      ToProto(CheckpointReport{"/ckpt/model-step-9.pt", 1, 4, 9});
  EXPECT_EQ(c.path(), "/ckpt/model-step-9.pt");
  EXPECT_EQ(c.epoch(), 1);
  EXPECT_EQ(c.epoch_batch(), 4);
  EXPECT_EQ(c.step(), 9);
  EXPECT_FALSE(c.uploaded());
}

}  // namespace
}  // namespace gradsync
