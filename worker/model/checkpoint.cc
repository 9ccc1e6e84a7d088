#include "worker/model/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include <filesystem>
#include <mutex>
#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "foundation/files/durable_file.h"
#include "foundation/files/regular_file.h"
#include "worker/model/optimizer_state_key.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;
using c10::IValue;
using c10::impl::GenericDict;

// A tensor as the file holds it: on the CPU, contiguous (a channels-last
// training layout, memory_format.h, is not what a PyTorch model expects).
at::Tensor Saved(const at::Tensor& t) { return t.cpu().contiguous(); }

// torch.save's zip format (torch::pickle_save's), but without the
// TorchScript type tags on dicts and lists (torch.jit._pickle.
// restore_type_tag): Python's torch.load(..., weights_only=True) refuses
// those, and the file must load with it. Untagged, the pickle holds only
// plain containers, numbers, strings and tensors; pickle_load reads it back
// with Any-typed containers.
std::vector<char> PickleWithoutTypeTags(const IValue& value) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* data, size_t size) {
        pickled.insert(pickled.end(), data, data + size);
      },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
      /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
      /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer(
      [&](const void* data, size_t size) {
        const char* bytes = static_cast<const char*>(data);
        archive.insert(archive.end(), bytes, bytes + size);
        return size;
      });
  // torch.save's layout: each storage as data/<i>, then data.pkl (what
  // torch::jit::writeArchiveAndTensors writes; its header, export.h, pulls
  // in ONNX and flatbuffers declarations a PyTorch wheel may not ship).
  const std::vector<at::Tensor>& tensors = pickler.tensorData();
  for (size_t i = 0; i < tensors.size(); ++i) {
    torch::jit::WriteableTensorData storage =
        torch::jit::getWriteableTensorData(tensors[i]);
    writer.writeRecord(absl::StrCat("data/", i), storage.data(),
                       storage.sizeInBytes());
  }
  writer.writeRecord("data.pkl", pickled.data(), pickled.size());
  writer.writeEndOfFile();
  return archive;
}

GenericDict StringKeyed() {
  return GenericDict(c10::StringType::get(), c10::AnyType::get());
}

const std::vector<at::Tensor>& Params(torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).params();
}

// optimizer.state_dict() in PyTorch's layout: per-parameter state keyed by
// the parameter's index, and one parameter group.
IValue OptimizerState(torch::optim::Optimizer& optimizer) {
  GenericDict state(c10::IntType::get(), c10::AnyType::get());
  GenericDict group = StringKeyed();
  const auto& params = Params(optimizer);
  auto* adam = dynamic_cast<torch::optim::Adam*>(&optimizer);
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = optimizer.state().find(OptimizerStateKeyOf(params[i]));
    if (it == optimizer.state().end()) continue;  // no step taken yet
    GenericDict entry = StringKeyed();
    if (adam != nullptr) {
      const auto& s = static_cast<torch::optim::AdamParamState&>(*it->second);
      entry.insert("step", torch::tensor(static_cast<float>(s.step())));
      entry.insert("exp_avg", Saved(s.exp_avg()));
      entry.insert("exp_avg_sq", Saved(s.exp_avg_sq()));
      if (s.max_exp_avg_sq().defined()) {
        entry.insert("max_exp_avg_sq", Saved(s.max_exp_avg_sq()));
      }
    } else {
      const auto& s = static_cast<torch::optim::SGDParamState&>(*it->second);
      entry.insert("momentum_buffer", s.momentum_buffer().defined()
                                          ? IValue(Saved(s.momentum_buffer()))
                                          : IValue());
    }
    state.insert(static_cast<int64_t>(i), entry);
  }
  const auto& options = optimizer.param_groups().at(0).options();
  group.insert("lr", options.get_lr());
  if (adam != nullptr) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(options);
    group.insert("betas", c10::ivalue::Tuple::create(std::get<0>(o.betas()),
                                                     std::get<1>(o.betas())));
    group.insert("eps", o.eps());
    group.insert("weight_decay", o.weight_decay());
    group.insert("amsgrad", o.amsgrad());
  } else {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(options);
    group.insert("momentum", o.momentum());
    group.insert("dampening", o.dampening());
    group.insert("weight_decay", o.weight_decay());
    group.insert("nesterov", o.nesterov());
  }
  // A generic list: an int list would pickle as torch.jit._pickle.
  // build_intlist, which weights_only loading refuses.
  c10::impl::GenericList indices(c10::AnyType::get());
  for (size_t i = 0; i < params.size(); ++i) {
    indices.push_back(static_cast<int64_t>(i));
  }
  group.insert("params", indices);
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  GenericDict out = StringKeyed();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

absl::Status RestoreOptimizer(const GenericDict& saved, const std::string& name,
                              torch::optim::Optimizer& optimizer) {
  const auto& params = Params(optimizer);
  const GenericDict state = saved.at("state").toGenericDict();
  auto* adam = dynamic_cast<torch::optim::Adam*>(&optimizer);
  optimizer.state().clear();
  for (const auto& item : state) {
    const int64_t i = item.key().toInt();
    if (i < 0 || i >= static_cast<int64_t>(params.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": optimizer state for parameter ", i,
                       " but the model has ", params.size()));
    }
    const GenericDict entry = item.value().toGenericDict();
    const OptimizerStateKey key = OptimizerStateKeyOf(params[i]);
    // Saved on the CPU; restored onto the parameter's device.
    auto restore = [&](const char* name) {
      return entry.at(name).toTensor().to(params[i].options(), false, true,
                                          params[i].suggest_memory_format());
    };
    if (adam != nullptr) {
      if (!entry.contains("exp_avg")) {
        return absl::InvalidArgumentError(absl::StrCat(
            name,
            ": optimizer state is not Adam's (no exp_avg); resume with "
            "the optimizer that wrote it"));
      }
      auto s = std::make_unique<torch::optim::AdamParamState>();
      s->step(static_cast<int64_t>(entry.at("step").toTensor().item<double>()));
      s->exp_avg(restore("exp_avg"));
      s->exp_avg_sq(restore("exp_avg_sq"));
      if (entry.contains("max_exp_avg_sq")) {
        s->max_exp_avg_sq(restore("max_exp_avg_sq"));
      }
      optimizer.state()[key] = std::move(s);
    } else {
      if (!entry.contains("momentum_buffer")) {
        return absl::InvalidArgumentError(
            absl::StrCat(name,
                         ": optimizer state is not SGD's (no momentum_buffer); "
                         "resume with the optimizer that wrote it"));
      }
      auto s = std::make_unique<torch::optim::SGDParamState>();
      const IValue buffer = entry.at("momentum_buffer");
      if (buffer.isTensor()) s->momentum_buffer(restore("momentum_buffer"));
      optimizer.state()[key] = std::move(s);
    }
  }
  return absl::OkStatus();
}

absl::Status RestoreModel(const GenericDict& saved, const std::string& name,
                          TrainableModel& model) {
  torch::NoGradGuard no_grad;
  auto load = [&](const std::string& key, at::Tensor& target) -> absl::Status {
    if (!saved.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": no tensor named '", key,
                       "' (a checkpoint of another model?)"));
    }
    const at::Tensor value = saved.at(key).toTensor();
    if (value.sizes() != target.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": '", key, "' has shape [", absl::StrJoin(value.sizes(), ","),
          "], the model's is [", absl::StrJoin(target.sizes(), ","), "]"));
    }
    target.copy_(value);
    return absl::OkStatus();
  };
  for (NamedTensor& item : StateTensors(model)) {
    if (absl::Status s = load(item.name, item.value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The step of a checkpoint file name (-1: not one) and its tag.
int64_t StepOf(const fs::path& file, std::string* tag) {
  static const std::regex pattern("model-(?:(.+)-)?step-([0-9]{1,18})\\.pt");
  std::smatch match;
  const std::string name = file.filename().string();
  if (!std::regex_match(name, match, pattern)) return -1;
  *tag = match[1].str();
  return std::stoll(match[2].str());
}

}  // namespace

absl::StatusOr<std::string> WriteCheckpoint(
    TrainableModel& model, torch::optim::Optimizer& optimizer,
    const TrainPosition& position,
    const std::map<std::string, std::string>& metadata, const std::string& dir,
    const std::string& tag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create checkpoint directory ", dir, ": ", ec.message()));
  }
  c10::Dict<std::string, at::Tensor> weights;
  for (const NamedTensor& item : StateTensors(model)) {
    weights.insert(item.name, Saved(item.value.detach()));
  }
  c10::Dict<std::string, std::string> meta;
  for (const auto& [key, value] : metadata) meta.insert(key, value);
  at::Tensor rng;
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng = generator.get_state();
  }
  GenericDict checkpoint = StringKeyed();
  checkpoint.insert("model", weights);
  checkpoint.insert("optimizer", OptimizerState(optimizer));
  checkpoint.insert("epoch", position.epoch);
  checkpoint.insert("epoch_batch", position.epoch_batch);
  checkpoint.insert("step", position.step);
  checkpoint.insert("world_size", position.world_size);
  checkpoint.insert("batch_size", position.batch_size);
  checkpoint.insert("rng_state", rng);
  checkpoint.insert("metadata", meta);
  if (position.scaler) {
    const ScalerState& sc = *position.scaler;
    GenericDict scaler = StringKeyed();
    scaler.insert("scale", sc.scale);
    scaler.insert("growth_factor", sc.growth_factor);
    scaler.insert("backoff_factor", sc.backoff_factor);
    scaler.insert("growth_interval", sc.growth_interval);
    scaler.insert("_growth_tracker", sc.growth_tracker);
    checkpoint.insert("scaler", scaler);
  }

  const std::vector<char> bytes = PickleWithoutTypeTags(IValue(checkpoint));
  const std::string path =
      absl::StrCat(dir, "/", CheckpointFileName(tag, position.step));
  if (absl::Status s = ReplaceFileDurably(
          path, absl::string_view(bytes.data(), bytes.size()), 0644);
      !s.ok()) {
    return s;
  }
  return path;
}

std::string CheckpointFileName(const std::string& tag, int64_t step) {
  return tag.empty() ? absl::StrCat("model-step-", step, ".pt")
                     : absl::StrCat("model-", tag, "-step-", step, ".pt");
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint ", path, " does not exist"));
  }
  fs::path best;
  int64_t best_step = -1;
  std::set<std::string> tags;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    std::string tag;
    const int64_t step = StepOf(entry.path(), &tag);
    if (step < 0) continue;
    tags.insert(tag.empty() ? "(untagged)" : tag);
    if (step > best_step) best_step = step, best = entry.path();
  }
  if (best_step < 0) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint directory ", path,
                     " holds no model-[<job>-]step-<n>.pt file"));
  }
  if (tags.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint directory ", path, " holds checkpoints of several jobs (",
        absl::StrJoin(tags, ", "), "): resume from one file"));
  }
  return best.string();
}

absl::StatusOr<std::vector<char>> ReadFileBytes(const std::string& path,
                                                int64_t max_bytes) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path);
  if (!file.ok()) return file.status();
  if (file->size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, " is ", file->size(), " bytes, more than the ",
                     max_bytes, " a checkpoint may have"));
  }
  std::vector<char> bytes(static_cast<size_t>(file->size()));
  if (absl::Status s = file->ReadAll(bytes.data()); !s.ok()) return s;
  return bytes;
}

absl::StatusOr<TrainPosition> RestoreCheckpoint(
    const std::vector<char>& bytes, const std::string& name,
    TrainableModel& model, torch::optim::Optimizer& optimizer,
    const std::map<std::string, std::string>& must_match) {
  try {
    const IValue loaded = torch::pickle_load(bytes);
    if (!loaded.isGenericDict()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": not a gradsync checkpoint (not a dict)"));
    }
    const GenericDict checkpoint = loaded.toGenericDict();
    for (const char* key : {"model", "optimizer", "epoch", "epoch_batch",
                            "step", "world_size", "batch_size", "rng_state"}) {
      if (!checkpoint.contains(key)) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": not a gradsync checkpoint (no '", key, "' entry)"));
      }
    }
    for (const auto& [key, want] : must_match) {
      std::string have;
      if (checkpoint.contains("metadata")) {
        const GenericDict meta = checkpoint.at("metadata").toGenericDict();
        if (meta.contains(key) && meta.at(key).isString()) {
          have = meta.at(key).toStringRef();
        }
      }
      if (have != want) {
        return absl::FailedPreconditionError(absl::StrCat(
            name, ": its ", key, " is '", have.substr(0, 80),
            "', this job's is '", want, "' (a checkpoint of another model)"));
      }
    }
    if (absl::Status s =
            RestoreModel(checkpoint.at("model").toGenericDict(), name, model);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = RestoreOptimizer(
            checkpoint.at("optimizer").toGenericDict(), name, optimizer);
        !s.ok()) {
      return s;
    }
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(checkpoint.at("rng_state").toTensor());
    }
    TrainPosition position;
    position.epoch = checkpoint.at("epoch").toInt();
    position.epoch_batch = checkpoint.at("epoch_batch").toInt();
    position.step = checkpoint.at("step").toInt();
    position.world_size = checkpoint.at("world_size").toInt();
    position.batch_size = checkpoint.at("batch_size").toInt();
    if (checkpoint.contains("scaler")) {
      const GenericDict scaler = checkpoint.at("scaler").toGenericDict();
      ScalerState sc;
      sc.scale = scaler.at("scale").toDouble();
      sc.growth_factor = scaler.at("growth_factor").toDouble();
      sc.backoff_factor = scaler.at("backoff_factor").toDouble();
      sc.growth_interval = scaler.at("growth_interval").toInt();
      sc.growth_tracker = scaler.at("_growth_tracker").toInt();
      position.scaler = sc;
    }
    return position;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": unreadable checkpoint: ", e.what()));
  }
}

}  // namespace gradsync
