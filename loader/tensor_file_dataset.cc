#include "loader/tensor_file_dataset.h"

#include <torch/torch.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "foundation/files/confined_path.h"
#include "foundation/files/mapped_file.h"
#include "foundation/torch_file/tensor_file.h"
#include "loader/exception_status.h"

namespace gradsync {
namespace {

torch::Dtype DtypeOf(absl::string_view name) {
  if (name == "uint8") return torch::kUInt8;
  if (name == "int64") return torch::kInt64;
  return torch::kFloat32;
}

// A CPU tensor holding a copy of `a`'s elements.
torch::Tensor Copy(const TensorFileArray& a) {
  torch::Tensor t =
      torch::empty(a.shape, torch::TensorOptions().dtype(DtypeOf(a.dtype)));
  std::memcpy(t.data_ptr(), a.bytes.data(), a.bytes.size());
  return t;
}

absl::Status Named(const std::string& file, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(file, ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TensorFileDataset>> TensorFileDataset::Open(
    const std::string& file, const DatasetAccess& access) {
  if (absl::Status s = CheckUnderRoots("data set", file, access.data_roots);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<MappedFile> mapped = MappedFile::Open(file);
  if (!mapped.ok()) return mapped.status();
  absl::StatusOr<TensorFileLayout> layout =
      ReadTensorFileLayout(mapped->bytes());
  if (!layout.ok()) return Named(file, layout.status());
  if (absl::Status s = VerifyTensorFileData(*layout); !s.ok()) {
    return Named(file, s);
  }
  TensorSamples samples;
  absl::Status copied = GuardExceptions("reading", [&]() -> absl::Status {
    samples.x = Copy(layout->x);
    samples.y = Copy(layout->y);
    return absl::OkStatus();
  });
  if (!copied.ok()) return Named(file, copied);
  int classes = 0;
  if (samples.y.scalar_type() == torch::kInt64) {
    const int64_t low = samples.y.min().item<int64_t>();
    const int64_t high = samples.y.max().item<int64_t>();
    if (low < 0 || high >= kMaxTensorFileClasses) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": tensor file: y holds the class index ", low < 0 ? low : high,
          "; class indices lie in [0, ", kMaxTensorFileClasses, ")"));
    }
    classes = static_cast<int>(high + 1);
  }
  return std::unique_ptr<TensorFileDataset>(
      new TensorFileDataset(file, std::move(samples), classes));
}

int64_t TensorFileDataset::label(int64_t index) const {
  return classes_ > 0 ? samples_.y[index].item<int64_t>() : 0;
}

std::string TensorFileDataset::name(int64_t index) const {
  return absl::StrCat(file_, " sample ", index);
}

absl::StatusOr<Image> TensorFileDataset::Load(int64_t index) const {
  return absl::FailedPreconditionError(absl::StrCat(
      name(index), ": a tensor file holds tensors, not images to decode"));
}

}  // namespace gradsync
