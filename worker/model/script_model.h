// ScriptModel: a TorchScript module a user wrote, as a TrainableModel.
//
// LoadScriptModel takes a model file's bytes (torch.jit.save's archive) and
// runs, in order: CheckScriptArchive (script_archive.h) on the bytes,
// torch::jit::load from those same bytes (what was checked is what loads),
// CheckScriptModule (script_module_check.h), and the shape of an optional
// loss method: (self, Tensor output, Tensor target) -> Tensor. No code of
// the module runs before all of them passed. Errors are theirs, naming the
// entry, function or op.
//
// Forward is ScriptForward (script_forward.h: one Tensor in, [N, outputs]
// out, executor optimisation off). Buffers named in the archive's extra
// file kNonPersistentBuffersFile (one name per line; torch.jit.save's
// _extra_files) are marked as not in the state_dict: TorchScript itself
// forgets which buffers were registered with persistent=False. Channels-
// last is not claimed safe (a user's module may flatten with view()): the
// trainer probes it (layout_probe.h).
// Thread safety: none; one per rank.
#pragma once

#include <torch/script.h>

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/model/script_archive.h"
#include "worker/model/trainable_model.h"

namespace gradsync {

inline constexpr char kNonPersistentBuffersFile[] =
    "gradsync_non_persistent_buffers";
// The PyTorch version that scripted the module (torch.__version__), when
// the uploader recorded it: named when this LibTorch cannot load the file.
inline constexpr char kPyTorchVersionFile[] = "gradsync_pytorch_version";

// The largest model file a trainer reads (ScriptArchiveLimits caps what
// its entries inflate to).
inline constexpr int64_t kMaxModelFileBytes = int64_t{4} << 30;

class ScriptModel : public TrainableModel {
 public:
  // `outputs` <= 0: any second output dimension.
  ScriptModel(torch::jit::Module module, int64_t outputs,
              std::set<std::string> non_persistent_buffers);

  absl::StatusOr<torch::Tensor> Forward(const torch::Tensor& batch) override;
  std::vector<NamedTensor> NamedParameters() override;
  std::vector<NamedTensor> NamedBuffers() override;
  void SetTraining(bool on) override;
  void To(const torch::Device& device) override;
  bool ChannelsLastSafe() const override { return false; }
  // A CPU copy of the module (loads on hosts without a GPU), with the
  // non-persistent buffer names kept in the extra file; written beside
  // and renamed into place.
  absl::Status ExportTorchScript(const std::string& path) override;
  bool HasLoss() const override;
  absl::StatusOr<torch::Tensor> Loss(const torch::Tensor& output,
                                     const torch::Tensor& target) override;

  torch::jit::Module& module() { return module_; }

 private:
  torch::jit::Module module_;
  const int64_t outputs_;
  const std::set<std::string> non_persistent_;
  // Whether the module defines loss(): asked every step, fixed once loaded.
  const bool has_loss_;
};

absl::StatusOr<std::unique_ptr<ScriptModel>> LoadScriptModel(
    absl::string_view bytes, int64_t outputs,
    const ScriptArchiveLimits& limits = {});

}  // namespace gradsync
