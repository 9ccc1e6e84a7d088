#include "foundation/data_index/image_folder_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace fs = std::filesystem;

bool HasImageExtension(const std::string& filename) {
  static const char* const kExtensions[] = {".jpg", ".jpeg", ".png",
                                            ".ppm", ".bmp",  ".pgm",
                                            ".tif", ".tiff", ".webp"};
  const std::string lower = absl::AsciiStrToLower(filename);
  for (const char* ext : kExtensions) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

std::string SplitPath(const std::string& path, const std::string& split) {
  if (split.empty()) return path;
  return (fs::path(path) / split).string();
}

namespace {

// How deep and how large a class folder's listing may go: far past any
// real data set, and a bound on what a hostile one costs.
constexpr int kMaxDepth = 64;
constexpr int64_t kMaxEntries = 10'000'000;

// Files of one class folder in os.walk order: directories sorted by path,
// files sorted by name within each directory. Links are followed, but a
// directory reached twice (a link back up: a loop) is refused by name.
absl::StatusOr<std::vector<std::string>> ListClassFiles(
    const fs::path& dir, const ScanBudget& budget,
    std::vector<std::string>* links) {
  std::map<std::string, std::vector<std::string>> by_dir;
  std::error_code ec;
  by_dir[dir.string()];
  std::set<std::pair<dev_t, ino_t>> seen;
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) seen.insert({st.st_dev, st.st_ino});
  int64_t entries = 0;
  auto it = fs::recursive_directory_iterator(
      dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list ", dir.string(), ": ", ec.message()));
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot list ", dir.string(), ": ", ec.message()));
    }
    const fs::directory_entry& entry = *it;
    if (entries % 1024 == 0) {
      if (budget.cancelled && budget.cancelled()) {
        return absl::CancelledError(absl::StrCat(
            "the scan of image folder ", dir.string(),
            " was cancelled (the client gave up or the coordinator is "
            "stopping)"));
      }
      if (absl::Now() >= budget.deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("the scan of image folder ", dir.string(),
                         " ran out of time after ", entries, " entries"));
      }
    }
    if (++entries > kMaxEntries || it.depth() > kMaxDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("image folder ", dir.string(), " holds more than ",
                       kMaxEntries, " entries or nests deeper than ", kMaxDepth,
                       " folders (at ", entry.path().string(), ")"));
    }
    const bool link = entry.is_symlink(ec);
    if (entry.is_directory(ec)) {
      if (link) links->push_back(entry.path().string());
      if (stat(entry.path().c_str(), &st) == 0 &&
          !seen.insert({st.st_dev, st.st_ino}).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "image folder ", dir.string(), ": ", entry.path().string(),
            " leads to a folder already listed (a symbolic link loop)"));
      }
      continue;
    }
    const std::string name = entry.path().filename().string();
    if (!HasImageExtension(name)) continue;
    if (link) links->push_back(entry.path().string());
    by_dir[entry.path().parent_path().string()].push_back(name);
  }
  std::vector<std::string> files;
  for (auto& [parent, names] : by_dir) {
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      files.push_back((fs::path(parent) / name).string());
    }
  }
  return files;
}

}  // namespace

absl::StatusOr<ImageFolderIndex> ScanImageFolder(const std::string& root,
                                                 const ScanBudget& budget) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    return absl::NotFoundError(
        absl::StrCat("image folder ", root, " does not exist"));
  }
  if (!fs::is_directory(root, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("image folder ", root, " is not a directory"));
  }
  ImageFolderIndex index;
  index.root = root;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory(ec)) {
      index.classes.push_back(entry.path().filename().string());
      if (entry.is_symlink(ec)) index.links.push_back(entry.path().string());
    }
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list ", root, ": ", ec.message()));
  }
  if (index.classes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image folder ", root, " has no class sub-folders (expected ", root,
        "/<class>/<image>)"));
  }
  std::sort(index.classes.begin(), index.classes.end());
  std::vector<std::string> empty;
  for (size_t label = 0; label < index.classes.size(); ++label) {
    absl::StatusOr<std::vector<std::string>> files = ListClassFiles(
        fs::path(root) / index.classes[label], budget, &index.links);
    if (!files.ok()) return files.status();
    if (files->empty()) empty.push_back(index.classes[label]);
    for (std::string& path : *files) {
      index.samples.push_back({std::move(path), static_cast<int>(label)});
    }
  }
  if (!empty.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image folder ", root, ": found no valid image file for the classes ",
        absl::StrJoin(empty, ", "),
        " (supported: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp)"));
  }
  return index;
}

}  // namespace gradsync
