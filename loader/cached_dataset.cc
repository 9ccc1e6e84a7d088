#include "loader/cached_dataset.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

CachedDataset::CachedDataset(std::shared_ptr<const Dataset> inner,
                             std::shared_ptr<MemoryBudget> budget)
    : inner_(std::move(inner)),
      budget_(std::move(budget)),
      slots_(new std::atomic<const Image*>[inner_->size()]) {
  for (int64_t i = 0; i < inner_->size(); ++i) slots_[i] = nullptr;
}

CachedDataset::~CachedDataset() {
  for (int64_t i = 0; i < inner_->size(); ++i) delete slots_[i].load();
  budget_->Release(charged_.load());
}

int64_t CachedDataset::ChargeFor(const Image& image) {
  // The pixels, the Image object and an allocator's usual overhead.
  return static_cast<int64_t>(image.size_bytes() + sizeof(Image) + 32);
}

absl::StatusOr<Image> CachedDataset::Load(int64_t index) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat("sample index ", index, " outside [0, ", size(), ")"));
  }
  if (const Image* hit = slots_[index].load(std::memory_order_acquire)) {
    return *hit;
  }
  absl::StatusOr<Image> image = inner_->Load(index);
  if (!image.ok()) return image;
  const int64_t charge = ChargeFor(*image);
  if (!budget_->TryCharge(charge)) return image;
  auto kept = std::make_unique<Image>(*image);
  const Image* expected = nullptr;
  if (slots_[index].compare_exchange_strong(expected, kept.get(),
                                            std::memory_order_acq_rel)) {
    kept.release();
    cached_.fetch_add(1);
    charged_.fetch_add(charge);
  } else {
    budget_->Release(charge);  // another thread cached it first
  }
  return image;
}

int64_t DefaultDecodedCacheBytes() {
  return std::min<int64_t>(PhysicalMemoryBytes() / 8, int64_t{2} << 30);
}

}  // namespace gradsync
