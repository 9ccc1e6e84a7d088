// Lists an image-folder data set the way torchvision's ImageFolder does:
// classes are the sorted names of the root's sub-folders; samples are the
// files with an image extension under each class folder (recursively,
// following links), directories in sorted order and files sorted by name
// within a directory. Only lists files; decoding is the loader's job.
//
// Pure functions over the file system; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

// NOT_FOUND when `root` does not exist; INVALID_ARGUMENT when it is not a
// directory, has no class sub-folders, or a class folder holds no image file
// (the message names the empty classes, as torchvision does).
absl::StatusOr<ImageFolderIndex> ScanImageFolder(const std::string& root);

// Joins a data set path and an optional split sub-folder.
std::string SplitPath(const std::string& path, const std::string& split);

}  // namespace gradsync
