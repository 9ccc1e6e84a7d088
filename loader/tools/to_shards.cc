#include "loader/tools/to_shards.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "foundation/data_index/image_folder_index.h"
#include "foundation/data_index/tar_member.h"
#include "foundation/files/durable_file.h"
#include "foundation/files/regular_file.h"
#include "loader/image_decoder.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

const int64_t kMaxImageBytes = DecodeLimits{}.max_file_bytes;

}  // namespace

absl::StatusOr<int64_t> WriteShards(const ToShardsOptions& o,
                                    std::ostream& progress) {
  if (o.shard_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard-size must be >= 1 (got ", o.shard_size, ")"));
  }
  absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(o.folder);
  if (!index.ok()) return index.status();
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", o.out, ": ", ec.message()));
  }
  const int64_t n = static_cast<int64_t>(index->samples.size());
  int64_t shards = 0;
  for (int64_t first = 0; first < n; first += o.shard_size) {
    std::string tar;
    const int64_t last = std::min(n, first + o.shard_size);
    for (int64_t i = first; i < last; ++i) {
      const ImageFolderSample& s = index->samples[i];
      const std::string ext = absl::AsciiStrToLower(
          fs::path(s.path).extension().string().substr(1));
      if (ext != "png" && ext != "jpg" && ext != "jpeg") {
        return absl::InvalidArgumentError(absl::StrCat(
            s.path, ": shards hold .png, .jpg or .jpeg images, not .", ext));
      }
      // The reader's limits (image_decoder.h): a file it would refuse is
      // refused here, and a FIFO or device is not waited on or read.
      absl::StatusOr<RegularFile> file = RegularFile::Open(s.path, "image");
      if (!file.ok()) return file.status();
      if (file->size() > kMaxImageBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "image ", s.path, " is ", file->size(), " bytes, more than the ",
            kMaxImageBytes, " a loader reads (--max-image-bytes)"));
      }
      std::string bytes(static_cast<size_t>(file->size()), '\0');
      if (absl::Status st = file->ReadAll(bytes.data()); !st.ok()) return st;
      const std::string key = absl::StrFormat("%08d", i);
      tar += TarFileMember(absl::StrCat(key, ".", ext), bytes);
      tar += TarFileMember(absl::StrCat(key, ".cls"), std::to_string(s.label));
    }
    tar += TarEnd();
    const std::string path =
        (fs::path(o.out) / absl::StrFormat("shard-%06d.tar", shards)).string();
    if (absl::Status s = ReplaceFileDurably(path, tar, 0644); !s.ok()) {
      return s;
    }
    ++shards;
    progress << absl::StrFormat("to-shards: %s: samples %d-%d of %d\n", path,
                                first, last - 1, n)
             << std::flush;
  }
  return shards;
}

}  // namespace gradsync
