#include "worker/train/resume.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

// Rank 0's bytes of the checkpoint to resume from, and the name errors
// use for it.
struct ResumeBytes {
  std::vector<char> bytes;
  std::string name;
  absl::Status status;
};

ResumeBytes ReadOnRankZero(const TrainContext& c) {
  ResumeBytes out;
  out.name = !c.read_resume           ? c.spec.resume_from
             : !c.resume_name.empty() ? c.resume_name
                                      : "the checkpoint to resume from";
  if (c.rank != 0) return out;
  if (c.read_resume) {
    auto read = c.read_resume();
    if (read.ok()) out.bytes = std::move(*read);
    out.status = read.status();
    return out;
  }
  auto path = ResolveCheckpoint(c.spec.resume_from);
  if (!path.ok()) {
    out.status = path.status();
    return out;
  }
  out.name = *path;
  auto read = ReadFileBytes(*path);
  if (read.ok()) out.bytes = std::move(*read);
  out.status = read.status();
  return out;
}

// Rank 0's bytes on every rank: the size first (-1: rank 0 could not read
// them), then the bytes.
absl::Status BroadcastBytes(const TrainContext& c, ResumeBytes& r) {
  at::Tensor size = torch::tensor(
      {r.status.ok() ? static_cast<int64_t>(r.bytes.size()) : int64_t{-1}});
  if (absl::Status s = c.comm->Broadcast(size, 0); !s.ok()) return s;
  if (!r.status.ok()) return r.status;
  if (size.item<int64_t>() < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank 0 could not read ", r.name));
  }
  at::Tensor buffer = torch::empty({size.item<int64_t>()}, torch::kUInt8);
  if (c.rank == 0)
    std::memcpy(buffer.data_ptr(), r.bytes.data(), r.bytes.size());
  if (absl::Status s = c.comm->Broadcast(buffer, 0); !s.ok()) return s;
  r.bytes.assign(static_cast<char*>(buffer.data_ptr()),
                 static_cast<char*>(buffer.data_ptr()) + buffer.numel());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainPosition> ResumeFromCheckpoint(
    const TrainContext& c, TrainableModel& model,
    torch::optim::Optimizer& optimizer) {
  ResumeBytes r = ReadOnRankZero(c);
  if (absl::Status s = BroadcastBytes(c, r); !s.ok()) return s;
  // A job that trains a model file resumes only from that file's
  // checkpoints, and a built-in model only from one of a built-in model.
  const auto digest = c.metadata.find(kModelFileMetadataKey);
  auto position =
      RestoreCheckpoint(r.bytes, r.name, model, optimizer,
                        {{kModelFileMetadataKey,
                          digest == c.metadata.end() ? "" : digest->second}});
  if (!position.ok()) return position.status();
  if (c.resume_remaining) {
    // The coordinator's shards of this epoch hold only what is left.
    position->epoch_batch = 0;
    return position;
  }
  if (position->epoch_batch > 0 &&
      (position->world_size != c.world_size ||
       position->batch_size != c.spec.batch_size)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s stops mid-epoch (epoch %d, batch %d) under %d rank(s) of batch "
        "%d; this job has %d rank(s) of batch %d: resume mid-epoch with the "
        "same world size and batch size",
        r.name, position->epoch, position->epoch_batch, position->world_size,
        position->batch_size, c.world_size, c.spec.batch_size));
  }
  return position;
}

}  // namespace gradsync
