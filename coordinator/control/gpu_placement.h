// GPU placement for NCCL jobs: every rank gets a physical GPU of its own.
// A worker offers the GPUs it sees (CUDA_VISIBLE_DEVICES applied), each
// named by an identity that is the same for every worker on the host (the
// GPU's UUID); two ranks on one host never share an identity, whether they
// belong to one job or two. So a host never runs more ranks of NCCL jobs
// than it has GPUs, however many workers it starts.
//
// Pure function; thread-safe.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gradsync {

struct GpuCandidate {
  std::string host;
  // The GPUs this worker sees, in its own CUDA device order (index i is
  // what the worker calls cuda:i).
  std::vector<std::string> gpus;
};

// (host, GPU identity) pairs held by ranks that are running.
using TakenGpus = std::set<std::pair<std::string, std::string>>;

struct GpuPlacement {
  // Per candidate: the index into its `gpus` it runs on, or -1 when it gets
  // none.
  std::vector<int> device;
  int placed = 0;  // candidates with a device
};

// Gives as many candidates as possible a distinct GPU not in `taken` (a
// maximum bipartite matching per host). Earlier candidates are never left
// out in favour of later ones: if a set of candidates can be placed, and a
// candidate before them could be too, it is.
GpuPlacement PlaceGpus(const std::vector<GpuCandidate>& candidates,
                       const TakenGpus& taken);

}  // namespace gradsync
