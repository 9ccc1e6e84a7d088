// Lists an image-folder data set the way torchvision's ImageFolder does:
// classes are the sorted names of the root's sub-folders; samples are the
// files with an image extension under each class folder (recursively,
// following links), directories in sorted order and files sorted by name
// within a directory. Only lists files; decoding is the loader's job.
//
// Pure functions over the file system; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

struct ImageFolderSample {
  std::string path;
  int label = 0;  // index into ImageFolderIndex::classes
};

struct ImageFolderIndex {
  std::string root;
  std::vector<std::string> classes;
  std::vector<ImageFolderSample> samples;
  // Symbolic links the listing followed (class folders, folders and files
  // below them), for CheckIndexUnderDataRoots.
  std::vector<std::string> links;
};

// True for torchvision's IMG_EXTENSIONS, case-insensitive.
bool HasImageExtension(const std::string& filename);

// How long a scan may go on: it stops with DEADLINE_EXCEEDED at `deadline`
// and with CANCELLED once `cancelled()` says so (both checked every 1,024
// entries), naming the folder. A client that gave up, or a coordinator
// shutting down, ends its scan.
struct ScanBudget {
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;  // null: never
};

// NOT_FOUND when `root` does not exist; INVALID_ARGUMENT when it is not a
// directory, has no class sub-folders, or a class folder holds no image file
// (the message names the empty classes, as torchvision does);
// DEADLINE_EXCEEDED / CANCELLED as `budget` says.
absl::StatusOr<ImageFolderIndex> ScanImageFolder(const std::string& root,
                                                 const ScanBudget& budget = {});

// Joins a data set path and an optional split sub-folder.
std::string SplitPath(const std::string& path, const std::string& split);

}  // namespace gradsync
