// StepProfiler: LibTorch's profiler (the recorder behind torch.profiler)
// over a window of training steps, as `--profile-steps A:B` asks for.
// Records the operators run on the training thread and its autograd
// threads, and, where LibTorch has Kineto and the rank computes on a GPU,
// every kernel and copy the GPU ran. At the end of the window it waits for
// the device and writes:
//   <prefix>.ops.tsv     one row per (device, name): calls and total
//                        microseconds, longest first (what key_averages()
//                        tables in PyTorch), after "# ..." lines naming the
//                        steps and the trace (or why there is none);
//   <prefix>.trace.json  the Chrome trace, where LibTorch has Kineto
//                        (Debian's does not; the table is written anyway).
// bench/train_vs_ddp.py --device cuda --profile writes the same table for
// PyTorch DDP and compares the two.
//
// Thread safety: one instance per training thread; call from that thread.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

struct ProfileWindow {
  int64_t first_step = 0;  // 1-based step numbers, as the step log counts
  int64_t last_step = 0;   // inclusive; 0: no profiling
  std::string out_prefix;  // where the files go (see above)
  bool enabled() const { return last_step > 0; }
};

// "A:B" (1 <= A <= B) or "A" (one step), with no out_prefix yet.
// INVALID_ARGUMENT naming the text otherwise.
absl::StatusOr<ProfileWindow> ParseProfileSteps(absl::string_view text);

class StepProfiler {
 public:
  StepProfiler(ProfileWindow window, torch::Device device);
  // Stops and writes what it has if the run ended inside the window (what
  // the device had not finished is missing then).
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Before step `step` runs: starts recording at the window's first step.
  void BeforeStep(int64_t step);
  // Whether step `step` ends the window. The caller must then settle, with
  // a deadline, whatever the device's queue waits on (collectives in
  // flight) before AfterStep, which waits for the device without one.
  bool EndsAt(int64_t step) const;
  // After step `step`: at the window's last step, waits for the device,
  // stops and writes the files. The file's error, if one cannot be written.
  absl::Status AfterStep(int64_t step);

 private:
  // Stops and writes; waits for the device first when asked (the
  // destructor does not: a failed run may have left a collective hung).
  absl::Status Stop(bool wait_for_device);

  const ProfileWindow window_;
  const torch::Device device_;
  int64_t started_at_ = 0;  // the step recording began before; 0: idle
  int64_t last_seen_ = 0;   // the last step that ended while recording
};

}  // namespace gradsync
