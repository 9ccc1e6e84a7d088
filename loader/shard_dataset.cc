#include "loader/shard_dataset.h"

#include "absl/strings/str_cat.h"
#include "foundation/files/confined_path.h"
#include "foundation/files/pread_full.h"
#include "foundation/files/regular_file.h"
#include "loader/image_decoder.h"
#include "loader/npy_image.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<ShardDataset>> ShardDataset::Open(
    const std::string& dir, int channels, const DatasetAccess& access) {
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  if (absl::Status s = CheckUnderRoots("data set", dir, access.data_roots);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<ShardIndex> index = IndexShards(dir);
  if (!index.ok()) return index.status();
  std::vector<RegularFile> files;
  for (const ShardFile& shard : index->shards) {
    if (absl::Status s =
            CheckUnderRoots("data set", shard.path, access.data_roots);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<RegularFile> file = RegularFile::Open(shard.path, "shard");
    if (!file.ok()) return absl::InvalidArgumentError(file.status().message());
    files.push_back(std::move(*file));
  }
  return std::unique_ptr<ShardDataset>(new ShardDataset(
      std::move(*index), std::move(files), channels, access.decode));
}

std::string ShardDataset::name(int64_t i) const {
  const ShardSample& s = index_.samples[i];
  return absl::StrCat(index_.shards[s.shard].path, ":", s.key, ".", s.ext);
}

absl::StatusOr<Image> ShardDataset::Load(int64_t index) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat("sample index ", index, " outside [0, ", size(), ")"));
  }
  const ShardSample& s = index_.samples[index];
  if (absl::Status st = CheckShardUnchanged(index_.shards[s.shard]); !st.ok()) {
    return st;
  }
  if (s.size > limits_.max_file_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name(index), " is ", s.size, " bytes, more than the ",
                     limits_.max_file_bytes, " an image may have"));
  }
  std::string bytes(s.size, '\0');
  if (absl::Status st =
          PreadFull(files_[s.shard].fd(), bytes.data(), s.size, s.offset);
      !st.ok()) {
    return absl::DataLossError(
        absl::StrCat("cannot read ", name(index), ": ", st.message()));
  }
  if (s.ext == "npy")
    return DecodeNpyImage(bytes, channels_, name(index), limits_);
  return DecodeImageBytes(bytes, channels_, name(index), limits_);
}

}  // namespace gradsync
