// FileStore: a Store in a directory shared by processes on one host (like
// c10d's and gloo's FileStore): one file per key, written atomically (write
// then rename); Get polls for the file until its deadline; Add holds an
// exclusive lock file. For tests and single-host runs without a coordinator.
// Thread-safe and process-safe.
#pragma once

#include <string>

#include "foundation/store/store.h"

namespace gradsync {

class FileStore : public Store {
 public:
  // Creates `dir` if needed.
  explicit FileStore(std::string dir);
  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  std::string PathOf(const std::string& key) const;
  const std::string dir_;
};

}  // namespace gradsync
