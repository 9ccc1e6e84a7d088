// Which kind of data set one split of a job's data set path is: a
// synthetic preset ("synthetic:<preset>"), a tensor file
// (<path>/<split>.pt, foundation/torch_file/tensor_file.h), WebDataset
// shards (<path>/<split>/*.tar, shard_index.h) or an image folder
// (<path>/<split>/<class>/<file>). The coordinator and the workers
// decide alike, so both count and load the same thing.
// Thread safety: pure functions (KindOfSplit looks at the file system).
#pragma once

#include <string>

namespace gradsync {

enum class SplitKind { kSynthetic, kTensorFile, kShards, kImageFolder };

// "<path>/<split>.pt"; `path` itself when `split` is empty.
std::string TensorFilePath(const std::string& path, const std::string& split);

// kSynthetic for a synthetic path; kTensorFile when TensorFilePath exists
// and is not a directory (a file, or a link to one); kShards when
// SplitPath(path, split) holds a *.tar entry; kImageFolder otherwise (whose
// listing reports what is missing).
SplitKind KindOfSplit(const std::string& path, const std::string& split);

}  // namespace gradsync
