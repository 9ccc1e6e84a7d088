#include "worker/agent/task_convert.h"

#include "worker/train/loss.h"

namespace gradsync {

TrainSpec ToTrainSpec(const v1::JobSpec& spec) {
  TrainSpec t;
  t.dataset_path = spec.dataset().path();
  t.split = spec.dataset().split();
  t.eval_split = spec.dataset().eval_split();
  t.channels = spec.dataset().channels();
  t.augmentation = spec.augmentation();
  t.loader_threads = spec.loader_threads();
  t.prefetch_depth = spec.prefetch_depth();
  t.model = spec.model();
  // The coordinator checked the name (job_spec.h); the default otherwise.
  t.loss = ParseLoss(spec.loss()).value_or(LossKind::kCrossEntropy);
  t.epochs = spec.epochs();
  t.batch_size = spec.batch_size();
  t.seed = spec.seed();
  t.optimizer = spec.optimizer().type() == v1::OPTIMIZER_TYPE_SGD
                    ? OptimizerKind::kSgd
                    : OptimizerKind::kAdam;
  t.learning_rate = spec.optimizer().learning_rate();
  t.momentum = spec.optimizer().momentum();
  t.weight_decay = spec.optimizer().weight_decay();
  t.grad_accumulation_steps = spec.grad_accumulation_steps();
  t.step_timeout = absl::Milliseconds(spec.step_timeout_ms());
  switch (spec.gradient_compression()) {
    case v1::GRADIENT_COMPRESSION_FP16:
      t.compression = WireCompression::kFp16;
      break;
    case v1::GRADIENT_COMPRESSION_BF16:
      t.compression = WireCompression::kBf16;
      break;
    default:
      t.compression = WireCompression::kNone;
  }
  switch (spec.precision()) {
    case v1::PRECISION_BF16_MIXED:
      t.precision = Precision::kBf16Mixed;
      break;
    case v1::PRECISION_16_MIXED:
      t.precision = Precision::k16Mixed;
      break;
    default:
      t.precision = Precision::k32;
  }
  t.bucket_cap_bytes = spec.bucket_cap_bytes();
  t.checkpoint_directory = spec.checkpoint().directory();
  t.checkpoint_interval_steps = spec.checkpoint().interval_steps();
  t.resume_from = spec.checkpoint().resume_from();
  t.description = spec.ShortDebugString();
  return t;
}

Backend ToBackend(v1::Backend backend) {
  return backend == v1::BACKEND_NCCL ? Backend::kNccl : Backend::kGloo;
}

v1::StepMetrics ToProto(const StepReport& r) {
  v1::StepMetrics m;
  m.set_rank(r.rank);
  m.set_epoch(r.epoch);
  m.set_step(r.step);
  m.set_steps_per_epoch(r.steps_per_epoch);
  m.set_loss(r.loss);
  m.set_samples_per_sec(r.samples_per_sec);
  m.set_data_wait_ms(r.data_wait_ms);
  m.set_compute_ms(r.compute_ms);
  m.set_forward_ms(r.forward_ms);
  m.set_backward_ms(r.backward_ms);
  m.set_optimizer_ms(r.optimizer_ms);
  m.set_allreduce_ms(r.allreduce_ms);
  m.set_allreduce_total_ms(r.allreduce_total_ms);
  m.set_step_ms(r.step_ms);
  m.set_time_unix_ms(r.time_unix_ms);
  m.set_skipped_samples(r.skipped_samples);
  m.set_param_checksum(r.param_checksum);
  return m;
}

v1::EvalMetrics ToProto(const EvalReport& r) {
  v1::EvalMetrics e;
  e.set_epoch(r.epoch);
  e.set_accuracy(r.accuracy);
  e.set_loss(r.loss);
  e.set_samples(r.samples);
  return e;
}

v1::CheckpointCommit ToProto(const CheckpointReport& r) {
  v1::CheckpointCommit c;
  c.set_path(r.path);
  c.set_epoch(r.epoch);
  c.set_epoch_batch(r.epoch_batch);
  c.set_step(r.step);
  return c;
}

}  // namespace gradsync
