// Which idle workers a pending job starts on, and as which ranks, as a rule
// over plain inputs; the Coordinator's scheduler (scheduler.cc) gathers the
// idle workers under its lock and applies the plan (ports, the attempt's
// store, the assignments).
// - One GPU per rank (gpu_placement.h): backend nccl takes only workers
//   that get a GPU no running rank on their host holds; auto runs nccl when
//   every chosen worker gets one, else gloo.
// - Up to max_workers workers in the order given (the scheduler gives them
//   in registration order); fewer than min_workers: no start.
// - Ranks are grouped by host, as torchrun numbers them node by node, and
//   local ranks count up within each host.
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "coordinator/control/gpu_placement.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync {

struct IdleWorker {
  std::string host;
  std::vector<std::string> gpus;  // the GPUs it offers, by identity
};

struct RankPlan {
  bool start = false;
  // Without start: why, where there is more to say than "too few workers"
  // (backend nccl waiting for free GPUs); else empty.
  std::string wait_message;
  // Rank r runs on idle[workers[r]] with local rank local_rank[r] and, for
  // nccl, that worker's GPU cuda_device[r] (an index into its gpus; -1
  // for gloo).
  std::vector<int> workers, local_rank, cuda_device;
  bool nccl = false;  // the backend the attempt runs
};

RankPlan PlanRanks(const std::vector<IdleWorker>& idle, int min_workers,
                   int max_workers, v1::Backend backend,
                   const TakenGpus& taken);

}  // namespace gradsync
