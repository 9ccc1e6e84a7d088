#include "foundation/data_index/shard_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "foundation/data_index/tar_member.h"
#include "foundation/files/pread_full.h"
#include "foundation/files/regular_file.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxLabelBytes = 64;
constexpr int64_t kMaxNameBytes = 4096;

bool IsImageExt(const std::string& ext) {
  return ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "npy";
}

// One shard open for indexing.
class ShardReader {
 public:
  explicit ShardReader(RegularFile fd, const std::string& path)
      : fd_(std::move(fd)), file_{path, fd_.size(), fd_.mtime_ns()} {}

  absl::Status Read(int64_t offset, int64_t size, std::string* out) {
    out->resize(size);
    if (absl::Status s = PreadFull(fd_.fd(), out->data(), size, offset);
        !s.ok()) {
      return Bad(s.message());
    }
    return absl::OkStatus();
  }

  absl::Status Bad(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", file_.path, ": ", what));
  }

  const ShardFile& file() const { return file_; }

 private:
  const RegularFile fd_;
  const ShardFile file_;
};

// A sample being gathered from consecutive members of one key.
struct Group {
  std::string key;
  bool has_image = false, has_label = false;
  ShardSample sample;
};

absl::Status FinishGroup(const ShardReader& r, Group& g,
                         std::vector<ShardSample>* samples) {
  if (g.key.empty()) return absl::OkStatus();
  if (!g.has_image) {
    return r.Bad(absl::StrCat(
        "key ", g.key, " has no image (.png, .jpg, .jpeg or .npy member)"));
  }
  if (!g.has_label) {
    return r.Bad(absl::StrCat("key ", g.key, " has no .cls label"));
  }
  samples->push_back(g.sample);
  g = Group();
  return absl::OkStatus();
}

absl::Status IndexShard(int32_t number, ShardReader& r, int64_t* members,
                        const ScanBudget& budget,
                        std::vector<ShardSample>* samples) {
  const int64_t end = r.file().size;
  int64_t at = 0;
  std::string block, data, long_name;
  PaxOverrides pax;
  Group group;
  while (at < end) {
    if (end - at < kTarBlock) return r.Bad("its last header is cut short");
    if (absl::Status s = r.Read(at, kTarBlock, &block); !s.ok()) return s;
    if (IsZeroBlock(block)) break;
    if (++*members % 1024 == 0) {
      if (budget.cancelled && budget.cancelled()) {
        return absl::CancelledError(absl::StrCat(
            "the scan of shard ", r.file().path,
            " was cancelled (the client gave up or the coordinator is "
            "stopping)"));
      }
      if (absl::Now() >= budget.deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the scan of shard ", r.file().path, " ran out of time"));
      }
    }
    absl::StatusOr<TarHeader> h = ParseTarHeader(block);
    if (!h.ok()) {
      return r.Bad(absl::StrCat("at offset ", at, ": ", h.status().message()));
    }
    if (pax.size >= 0) h->size = pax.size;
    if (!pax.path.empty()) h->name = pax.path;
    if (!long_name.empty()) h->name = long_name;
    pax = PaxOverrides();
    long_name.clear();
    const int64_t data_at = at + kTarBlock;
    if (h->size > end - data_at) {
      return r.Bad(absl::StrCat(
          "member ", h->name, " (", h->size, " bytes at offset ", data_at,
          ") runs past the end of the shard (", end, " bytes): truncated"));
    }
    at = data_at + (h->size + kTarBlock - 1) / kTarBlock * kTarBlock;
    if (h->type == TarHeader::Type::kLongName ||
        h->type == TarHeader::Type::kPax) {
      if (h->size > kMaxNameBytes) return r.Bad("a name header is too long");
      if (absl::Status s = r.Read(data_at, h->size, &data); !s.ok()) return s;
      if (h->type == TarHeader::Type::kLongName) {
        long_name = data.substr(0, data.find('\0'));
      } else {
        absl::StatusOr<PaxOverrides> parsed = ParsePaxRecords(data);
        if (!parsed.ok()) return r.Bad(parsed.status().message());
        pax = *parsed;
      }
      continue;
    }
    if (h->type != TarHeader::Type::kFile) continue;
    if (absl::Status s = CheckMemberName(h->name); !s.ok()) {
      return r.Bad(s.message());
    }
    // WebDataset's split: the key ends at the first '.' of the basename.
    const size_t base = h->name.rfind('/') + 1;  // npos + 1 == 0
    const size_t dot = h->name.find('.', base);
    if (dot == std::string::npos) continue;  // no extension: not a part
    const std::string key = h->name.substr(0, dot);
    const std::string ext = absl::AsciiStrToLower(h->name.substr(dot + 1));
    if (key != group.key) {
      if (absl::Status s = FinishGroup(r, group, samples); !s.ok()) return s;
      group.key = key;
      group.sample.shard = number;
      group.sample.key = key;
    }
    if (IsImageExt(ext)) {
      if (group.has_image) {
        return r.Bad(absl::StrCat("key ", key, " has two images"));
      }
      group.has_image = true;
      group.sample.ext = ext;
      group.sample.offset = data_at;
      group.sample.size = h->size;
    } else if (ext == "cls") {
      if (h->size > kMaxLabelBytes) {
        return r.Bad(absl::StrCat("member ", h->name, " is ", h->size,
                                  " bytes; a .cls label is a number"));
      }
      if (absl::Status s = r.Read(data_at, h->size, &data); !s.ok()) return s;
      int64_t label = -1;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(data), &label) ||
          label < 0 || label >= kMaxShardClasses) {
        return r.Bad(absl::StrCat("member ", h->name,
                                  " does not hold a class index in [0, ",
                                  kMaxShardClasses, ")"));
      }
      group.has_label = true;
      group.sample.label = label;
    }
  }
  return FinishGroup(r, group, samples);
}

// The *.tar entries of `dir`, sorted by name.
absl::StatusOr<std::vector<std::string>> ShardPaths(const std::string& dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), stop; !ec && it != stop;
       it.increment(ec)) {
    if (it->path().extension() == ".tar") paths.push_back(it->path().string());
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list ", dir, ": ", ec.message()));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

bool HoldsShards(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  absl::StatusOr<std::vector<std::string>> paths = ShardPaths(dir);
  return paths.ok() && !paths->empty();
}

absl::StatusOr<ShardIndex> IndexShards(const std::string& dir,
                                       const ScanBudget& budget) {
  ShardIndex index;
  index.root = dir;
  absl::StatusOr<std::vector<std::string>> paths = ShardPaths(dir);
  if (!paths.ok()) return paths.status();
  int64_t members = 0;
  for (const std::string& path : *paths) {
    absl::StatusOr<RegularFile> fd = RegularFile::Open(path, "shard");
    if (!fd.ok()) return absl::InvalidArgumentError(fd.status().message());
    ShardReader reader(std::move(*fd), path);
    const auto number = static_cast<int32_t>(index.shards.size());
    if (absl::Status s =
            IndexShard(number, reader, &members, budget, &index.samples);
        !s.ok()) {
      return s;
    }
    index.shards.push_back(reader.file());
  }
  if (index.samples.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, " holds no sample in its .tar shards"));
  }
  int64_t top = 0;
  for (const ShardSample& s : index.samples) top = std::max(top, s.label);
  index.num_classes = static_cast<int>(top + 1);
  return index;
}

absl::Status CheckShardUnchanged(const ShardFile& shard) {
  struct stat st;
  if (::stat(shard.path.c_str(), &st) != 0) {
    return absl::DataLossError(
        absl::StrCat("shard ", shard.path,
                     " is gone since it was indexed: ", std::strerror(errno)));
  }
  if (st.st_size != shard.size || ModificationTimeNs(st) != shard.mtime_ns) {
    return absl::DataLossError(absl::StrCat(
        "shard ", shard.path, " changed since it was indexed (", shard.size,
        " bytes then, ", static_cast<int64_t>(st.st_size),
        " now, or a new modification time): the job's sample order no "
        "longer holds; restart the job to index it again"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
