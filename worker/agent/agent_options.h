// AgentOptions: how a worker agent (agent.h) and its tasks (task.h) run.
// A plain value; thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "loader/dataset.h"
#include "worker/agent/model_file_cache.h"

namespace gradsync {

struct AgentOptions {
  std::string host = "127.0.0.1";  // address peers and logs use
  std::vector<int> free_ports;     // offered for MASTER_PORT
  // Data sets must lie under these roots (data_roots.h; empty: anywhere);
  // images within these sizes (image_decoder.h).
  DatasetAccess dataset_access;
  // Checkpoint directories and resume_from paths are taken under this
  // directory (relative ones) or must resolve into it (absolute ones);
  // gradsync-worker defaults it to its working directory.
  std::string checkpoint_root = ".";
  // Model files fetched from the coordinator (model_file_cache.h); null:
  // each task fetches into a private scratch directory of its own.
  std::shared_ptr<ModelFileCache> model_files;
  int log_every = 50;  // steps between progress log lines
  // When set, each task appends its trained batches' sample indices to
  // <dir>/<job>-a<attempt>-r<rank>.trace (see TrainContext::sample_trace).
  std::string sample_trace_dir;
  // When set, rewritten after every answered heartbeat with
  // "<unix ms> <worker id> <state>" (health_file.h).
  std::string health_file;
  // Rank 0 streams each checkpoint to the coordinator (a model snapshot)
  // before reporting it committed; restarts then fetch it from there.
  bool upload_snapshots = true;
  // A worker that lives for one job (gradsync-worker --job, --exit-after-job;
  // for Slurm tasks and Kubernetes pods): with job_id it runs only that
  // job's attempts, with exit_after_job alone only the first job it is
  // assigned; Agent::Run returns once that job has ended, or when no task
  // was assigned within idle_timeout.
  std::string job_id;
  bool exit_after_job = false;
  absl::Duration idle_timeout = absl::Minutes(10);
};

}  // namespace gradsync
