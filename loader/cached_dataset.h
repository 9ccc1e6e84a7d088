// CachedDataset: keeps the decoded 8-bit images of another Dataset in memory
// after their first Load, so that later epochs of a small data set do not
// decode again (what torchvision's FashionMNIST gets by holding its images
// as one uint8 tensor). Augmentation is unaffected: it runs on the copy
// Load returns, every epoch.
//
// Memory is drawn from a MemoryBudget shared with other caches; once it is
// spent, samples not yet cached are decoded on every Load as before (the
// first ones loaded stay cached). Errors are not cached: a corrupt file fails
// (and is counted in skip mode) every epoch, naming its path. Destroying the
// cache frees its images and gives their bytes back to the budget.
//
// Thread-safe: Load may be called from many threads at once; two threads
// loading the same uncached sample both decode it and one copy is kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "loader/dataset.h"
#include "loader/memory_budget.h"

namespace gradsync {

class CachedDataset : public Dataset {
 public:
  CachedDataset(std::shared_ptr<const Dataset> inner,
                std::shared_ptr<MemoryBudget> budget);
  ~CachedDataset() override;
  CachedDataset(const CachedDataset&) = delete;
  CachedDataset& operator=(const CachedDataset&) = delete;

  int64_t size() const override { return inner_->size(); }
  int64_t label(int64_t i) const override { return inner_->label(i); }
  std::string name(int64_t i) const override { return inner_->name(i); }
  int num_classes() const override { return inner_->num_classes(); }
  absl::StatusOr<Image> Load(int64_t index) const override;

  // Samples held and the budget bytes they take.
  int64_t cached_samples() const { return cached_.load(); }
  int64_t cached_bytes() const { return charged_.load(); }
  // Bytes one cached image of `image`'s size is charged (pixels and
  // bookkeeping).
  static int64_t ChargeFor(const Image& image);

 private:
  const std::shared_ptr<const Dataset> inner_;
  const std::shared_ptr<MemoryBudget> budget_;
  // One slot per sample: null until its image is cached, then never changed.
  const std::unique_ptr<std::atomic<const Image*>[]> slots_;
  mutable std::atomic<int64_t> cached_{0}, charged_{0};
};

// The default decoded-cache budget of a worker process: an eighth of this
// host's physical memory, at most 2 GiB (Fashion-MNIST takes about 60 MB,
// CIFAR-10 about 200 MB).
int64_t DefaultDecodedCacheBytes();

}  // namespace gradsync
