#include "coordinator/control/gpu_placement.h"

#include <map>

namespace gradsync {
namespace {

// Kuhn's augmenting paths over (candidate -> GPU) edges of one host: a
// candidate already matched stays matched when a later one is added, so
// processing candidates in order keeps the earlier ones placed.
class Matcher {
 public:
  Matcher(const std::vector<GpuCandidate>& candidates, const TakenGpus& taken)
      : candidates_(candidates), taken_(taken) {}

  // Tries to place candidate c, moving earlier ones to other GPUs if that
  // frees one for it.
  bool Place(int c) {
    visited_.clear();
    return Augment(c);
  }

  GpuPlacement Result() const {
    GpuPlacement out;
    out.device.assign(candidates_.size(), -1);
    for (const auto& [gpu, c] : owner_) {
      const std::vector<std::string>& gpus = candidates_[c].gpus;
      for (size_t i = 0; i < gpus.size(); ++i) {
        if (gpus[i] == gpu.second) {
          out.device[c] = static_cast<int>(i);
          break;
        }
      }
    }
    for (int d : out.device) out.placed += d >= 0 ? 1 : 0;
    return out;
  }

 private:
  using Gpu = std::pair<std::string, std::string>;  // host, identity

  bool Augment(int c) {
    const std::string& host = candidates_[c].host;
    // A free GPU first (the lowest index), so nobody moves without need.
    for (const std::string& id : candidates_[c].gpus) {
      const Gpu gpu{host, id};
      if (taken_.count(gpu) == 0 && owner_.count(gpu) == 0) {
        owner_[gpu] = c;
        return true;
      }
    }
    for (const std::string& id : candidates_[c].gpus) {
      const Gpu gpu{host, id};
      if (taken_.count(gpu) != 0 || !visited_.insert(gpu).second) continue;
      auto it = owner_.find(gpu);
      if (it != owner_.end() && Augment(it->second)) {
        owner_[gpu] = c;
        return true;
      }
    }
    return false;
  }

  const std::vector<GpuCandidate>& candidates_;
  const TakenGpus& taken_;
  std::map<Gpu, int> owner_;
  std::set<Gpu> visited_;
};

}  // namespace

GpuPlacement PlaceGpus(const std::vector<GpuCandidate>& candidates,
                       const TakenGpus& taken) {
  Matcher matcher(candidates, taken);
  for (int c = 0; c < static_cast<int>(candidates.size()); ++c) {
    matcher.Place(c);
  }
  return matcher.Result();
}

}  // namespace gradsync
