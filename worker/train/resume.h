// Resume: every rank of a job starts from one checkpoint. Rank 0 reads its
// bytes (from TrainContext::read_resume when set, else from
// spec.resume_from, a file or a directory's newest) and broadcasts them over
// the communicator, so hosts need no shared file system; every rank restores
// model, optimizer and RNG from them. A mid-epoch position needs the writer's
// world size and batch size (FAILED_PRECONDITION naming both otherwise), except
// after an elastic restart, whose shards already leave out what was committed.
// A job training a model file resumes only from a checkpoint of the same
// file (the digest in both metadata; FAILED_PRECONDITION otherwise).
// Thread safety: the training thread; a collective, so every rank calls it.
#pragma once

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "worker/model/checkpoint.h"
#include "worker/train/train_context.h"

namespace gradsync {

absl::StatusOr<TrainPosition> ResumeFromCheckpoint(
    const TrainContext& context, TrainableModel& model,
    torch::optim::Optimizer& optimizer);

}  // namespace gradsync
