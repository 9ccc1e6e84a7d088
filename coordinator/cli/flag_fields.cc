#include "coordinator/cli/flag_fields.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace gradsync::cli {

const std::vector<FlagField>& SubmitFlagFields() {
  static const auto* fields = new std::vector<FlagField>{
      {"--name", "name"},
      {"--dataset", "dataset.path"},
      {"--split", "dataset.split"},
      {"--eval-split", "dataset.eval_split"},
      {"--channels", "dataset.channels"},
      {"--model", "model"},
      {"--model-file", "model_file_sha256"},
      {"--loss", "loss"},
      {"--epochs", "epochs"},
      {"--batch-size", "batch_size"},
      {"--optimizer", "optimizer.type"},
      {"--lr", "optimizer.learning_rate"},
      {"--momentum", "optimizer.momentum"},
      {"--weight-decay", "optimizer.weight_decay"},
      {"--seed", "seed"},
      {"--no-shuffle", "shuffle"},
      {"--drop-last", "drop_last"},
      {"--loader-threads", "loader_threads"},
      {"--prefetch", "prefetch_depth"},
      {"--augmentation", "augmentation"},
      {"--workers", "world_size.max_workers"},
      {"--max-workers", "world_size.max_workers"},
      {"--min-workers", "world_size.min_workers"},
      {"--backend", "backend"},
      {"--checkpoint-dir", "checkpoint.directory"},
      {"--checkpoint-interval", "checkpoint.interval_steps"},
      {"--resume-from", "checkpoint.resume_from"},
      {"--resume-snapshot", "checkpoint.resume_snapshot_job"},
      {"--collective-timeout-ms", "collective_timeout_ms"},
      {"--step-timeout-ms", "step_timeout_ms"},
      {"--grad-accumulation", "grad_accumulation_steps"},
      {"--compression", "gradient_compression"},
      {"--precision", "precision"},
      {"--max-restarts", "max_restarts"},
      {"--restart-wait", "restart_wait_ms"},
      {"--bucket-cap-bytes", "bucket_cap_bytes"},
  };
  return *fields;
}

std::string FlagOfError(absl::string_view message) {
  message = absl::StripPrefix(message, "job_spec.");
  std::string flag;
  size_t longest = 0;
  for (const FlagField& f : SubmitFlagFields()) {
    const absl::string_view field = f.field;
    // The field, then a space or the end (world_size.max_workers is not
    // world_size).
    if (absl::StartsWith(message, field) && field.size() > longest &&
        (message.size() == field.size() || message[field.size()] == ' ')) {
      longest = field.size();
      flag = f.flag;
    }
  }
  return flag;
}

}  // namespace gradsync::cli
