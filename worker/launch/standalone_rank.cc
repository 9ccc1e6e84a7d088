#include "worker/launch/standalone_rank.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "foundation/store/file_store.h"
#include "foundation/text/terminal_text.h"
#include "worker/rank/rank_runner.h"

namespace gradsync {
namespace {

std::string StepJson(const StepReport& m) {
  return absl::StrFormat(
      "{\"rank\": %d, \"epoch\": %d, \"step\": %d, \"loss\": %.9g, "
      "\"samples_per_sec\": %.3f, \"data_wait_ms\": %.3f, \"compute_ms\": "
      "%.3f, \"forward_ms\": %.3f, \"backward_ms\": %.3f, "
      "\"optimizer_ms\": %.3f, \"allreduce_ms\": %.3f, "
      "\"allreduce_total_ms\": %.3f, \"step_ms\": %.3f, \"time_unix_ms\": "
      "%d, \"loss_scale\": %g, \"step_skipped\": %s}",
      m.rank, m.epoch, m.step, m.loss, m.samples_per_sec, m.data_wait_ms,
      m.compute_ms, m.forward_ms, m.backward_ms, m.optimizer_ms, m.allreduce_ms,
      m.allreduce_total_ms, m.step_ms, m.time_unix_ms, m.loss_scale,
      m.step_skipped ? "true" : "false");
}

}  // namespace

absl::StatusOr<TrainResult> RunStandaloneRank(const StandaloneRankOptions& o,
                                              std::ostream& log) {
  TrainContext c;
  c.spec = o.spec;
  c.rank = o.rank;
  c.world_size = o.world_size;
  c.cuda_device = o.local_rank;
  if (o.profile.enabled()) {
    std::error_code error;
    std::filesystem::create_directories(o.profile_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot create the profile directory ", o.profile_dir,
                       ": ", error.message()));
    }
    c.profile = o.profile;
    c.profile.out_prefix =
        (std::filesystem::path(o.profile_dir) / absl::StrCat("rank", o.rank))
            .string();
  }
  std::unique_ptr<std::ofstream> metrics;
  if (o.rank == 0 && !o.metrics_out.empty()) {
    metrics = std::make_unique<std::ofstream>(o.metrics_out, std::ios::app);
    if (!*metrics) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write metrics to ", o.metrics_out));
    }
    c.on_step = [&](const StepReport& m) { *metrics << StepJson(m) << "\n"; };
  }
  c.metadata = {{"launcher", "gradsync-launch (standalone)"}};

  RankSetup setup;
  setup.backend = o.backend;
  setup.local_rank = o.local_rank;
  setup.store = std::make_shared<FileStore>(o.store_dir);
  setup.timeout = o.timeout;
  setup.local_sharding = RankSetup::LocalSharding{o.shuffle, o.drop_last};
  setup.log_prefix = absl::StrCat("[rank ", o.rank, "]");
  if (o.rank == 0) {  // rank 0 alone prints, as torchrun scripts do
    setup.log = [&log](const std::string& line) {
      log << OneLine(line) << std::endl;  // file names are not trusted
    };
  }
  setup.log_every = o.log_every;
  std::unique_ptr<Communicator> comm;
  return RunRank(setup, std::move(c), &comm);
}

}  // namespace gradsync
