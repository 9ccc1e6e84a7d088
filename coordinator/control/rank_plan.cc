#include "coordinator/control/rank_plan.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"

namespace gradsync {

RankPlan PlanRanks(const std::vector<IdleWorker>& idle, int min_workers,
                   int max_workers, v1::Backend backend,
                   const TakenGpus& taken) {
  std::vector<GpuCandidate> candidates;
  for (const IdleWorker& w : idle) candidates.push_back({w.host, w.gpus});
  const GpuPlacement placement = PlaceGpus(candidates, taken);
  const bool needs_gpu = backend == v1::BACKEND_NCCL;
  std::vector<int> eligible;
  for (size_t i = 0; i < idle.size(); ++i) {
    if (!needs_gpu || placement.device[i] >= 0) {
      eligible.push_back(static_cast<int>(i));
    }
  }
  RankPlan plan;
  if (static_cast<int>(eligible.size()) < min_workers) {
    if (needs_gpu) {
      const int with_gpus = static_cast<int>(
          std::count_if(idle.begin(), idle.end(),
                        [](const IdleWorker& w) { return !w.gpus.empty(); }));
      plan.wait_message = absl::StrFormat(
          "backend nccl: waiting for %d idle worker(s) with a GPU of their "
          "own; %d of %d idle worker(s) have a GPU, %d of them a free one (a "
          "GPU runs one rank at a time, so a host runs at most as many nccl "
          "ranks as it has GPUs)",
          min_workers, with_gpus, idle.size(), eligible.size());
    }
    return plan;
  }
  const int world = std::min<int>(max_workers, eligible.size());
  plan.workers.assign(eligible.begin(), eligible.begin() + world);
  std::stable_sort(
      plan.workers.begin(), plan.workers.end(),
      [&idle](int a, int b) { return idle[a].host < idle[b].host; });
  plan.nccl =
      backend == v1::BACKEND_NCCL ||
      (backend == v1::BACKEND_AUTO &&
       std::all_of(plan.workers.begin(), plan.workers.end(),
                   [&placement](int w) { return placement.device[w] >= 0; }));
  std::map<std::string, int> per_host;
  for (int w : plan.workers) {
    plan.local_rank.push_back(per_host[idle[w].host]++);
    plan.cuda_device.push_back(plan.nccl ? placement.device[w] : -1);
  }
  plan.start = true;
  return plan;
}

}  // namespace gradsync
