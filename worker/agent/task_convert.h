// Between the wire and the data plane: the agent turns the job's
// v1::JobSpec into the trainer's TrainSpec (worker/train/train_spec.h) and
// the trainer's reports into the v1 metrics it sends to the coordinator.
// Pure functions; thread-safe.
#pragma once

#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/worker_service.pb.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_spec.h"

namespace gradsync {

// The spec as the coordinator stored it (defaults applied).
TrainSpec ToTrainSpec(const v1::JobSpec& spec);
// The backend the coordinator resolved for the attempt (never AUTO there).
Backend ToBackend(v1::Backend backend);

v1::StepMetrics ToProto(const StepReport& report);
v1::EvalMetrics ToProto(const EvalReport& report);
v1::CheckpointCommit ToProto(const CheckpointReport& report);

}  // namespace gradsync
