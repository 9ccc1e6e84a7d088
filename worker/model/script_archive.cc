#include "worker/model/script_archive.h"

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/versions.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "foundation/torch_file/pickle_tree.h"
#include "foundation/torch_file/stored_zip.h"

namespace gradsync {
namespace {

// Deflate cannot do better than about 1032:1; a claim beyond this is a lie
// about what the entry inflates to.
constexpr uint64_t kMaxDeflateRatio = 1100;
constexpr uint64_t kMaxVersionBytes = 64;

absl::Status Refused(absl::string_view entry, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("model file: ", entry, ": ", why));
}

// The globals (as GLOBAL spells them, "module name") a plain module's
// pickles name, besides the module classes its own code defines.
bool AllowedGlobal(const std::string& global) {
  static const std::set<std::string> kAllowed = {
      "torch._utils _rebuild_tensor_v2",
      "collections OrderedDict",
      "torch.jit._pickle build_intlist",
      "torch.jit._pickle build_doublelist",
      "torch.jit._pickle build_boollist",
      "torch.jit._pickle build_tensorlist",
      "torch.jit._pickle restore_type_tag",
      "torch FloatStorage",
      "torch DoubleStorage",
      "torch HalfStorage",
      "torch BFloat16Storage",
      "torch LongStorage",
      "torch IntStorage",
      "torch ShortStorage",
      "torch CharStorage",
      "torch ByteStorage",
      "torch BoolStorage",
  };
  return kAllowed.count(global) > 0;
}

// Every global a pickle names.
std::set<std::string> GlobalsOf(const PickleValue& root) {
  std::set<std::string> globals;
  (void)VisitPickle(root, [&globals](const PickleValue& v) {
    if (v.kind == PickleValue::Kind::kGlobal) globals.insert(v.text);
    return absl::OkStatus();
  });
  return globals;
}

// The code file that defines a class of module `module` ("__torch__.a.b"
// is code/__torch__/a/b.py), relative to the archive's top folder.
std::string CodeFileOf(const std::string& module) {
  return absl::StrCat("code/", absl::StrReplaceAll(module, {{".", "/"}}),
                      ".py");
}

bool IsPickle(const std::string& relative) {
  return absl::EndsWith(relative, ".pkl") ||
         absl::EndsWith(relative, ".debug_pkl");
}

bool IsCode(const std::string& relative) {
  return absl::StartsWith(relative, "code/") && absl::EndsWith(relative, ".py");
}

// Whether `text` has "def <name>" (any blanks between, "def" a word of
// its own): the TorchScript parser takes hand-written spacing too.
bool DefinesMethod(const std::string& text, const std::string& name) {
  auto word = [](char c) { return absl::ascii_isalnum(c) || c == '_'; };
  for (size_t at = text.find(name); at != std::string::npos;
       at = text.find(name, at + 1)) {
    size_t before = at;
    while (before > 0 && absl::ascii_isspace(text[before - 1])) --before;
    if (before == at || before < 3 || text.compare(before - 3, 3, "def") != 0) {
      continue;
    }
    if (before == 3 || !word(text[before - 4])) return true;
  }
  return false;
}

// What a code file may not say: hooks LibTorch runs while loading, and
// native objects.
absl::Status CheckCode(const std::string& entry, const std::string& text) {
  for (const char* hook : {"__setstate__", "__getstate__"}) {
    if (DefinesMethod(text, hook)) {
      return Refused(entry, absl::StrCat("defines ", hook,
                                         ", which LibTorch runs while loading "
                                         "the file"));
    }
  }
  if (absl::StrContains(text, "torch.classes.")) {
    return Refused(entry,
                   "uses torch.classes objects (native code a model file "
                   "may not bring)");
  }
  return absl::OkStatus();
}

// Sizes, names and the format version, from the directory alone.
absl::Status CheckDirectory(const std::vector<ZipEntry>& entries,
                            const ScriptArchiveLimits& limits,
                            std::string* prefix) {
  if (entries.empty()) return Refused("(archive)", "it has no entries");
  if (entries.size() > limits.max_entries) {
    return Refused("(archive)",
                   absl::StrCat("it has ", entries.size(),
                                " entries, more than ", limits.max_entries));
  }
  const size_t slash = entries[0].name.find('/');
  if (slash == std::string::npos || slash == 0) {
    return Refused(entries[0].name, "not under the archive's top folder");
  }
  *prefix = entries[0].name.substr(0, slash + 1);
  uint64_t total = 0;
  for (const ZipEntry& e : entries) {
    if (!absl::StartsWith(e.name, *prefix) || absl::StrContains(e.name, "..") ||
        absl::StrContains(e.name, "\\")) {
      return Refused(e.name, absl::StrCat("not a name under ", *prefix));
    }
    const std::string relative = e.name.substr(prefix->size());
    if (e.method != 0 && e.method != 8) {
      return Refused(e.name, absl::StrCat("compression method ", e.method,
                                          " (only stored and deflate)"));
    }
    if (e.method == 8 &&
        e.size > kMaxDeflateRatio * std::max<uint64_t>(1, e.data.size())) {
      return Refused(
          e.name,
          absl::StrCat("claims to inflate ", e.data.size(), " bytes to ",
                       e.size, ", more than deflate can (a zip bomb?)"));
    }
    const bool small = IsCode(relative) || IsPickle(relative);
    const uint64_t cap = small ? limits.max_code_bytes : limits.max_entry_bytes;
    if (e.size > cap) {
      return Refused(e.name,
                     absl::StrCat("inflates to ", e.size,
                                  " bytes, more than the limit of ", cap));
    }
    if ((relative == "version" || relative == ".data/version") &&
        e.size > kMaxVersionBytes) {
      return Refused(e.name, "a version record that is not a number");
    }
    total += e.size;
    if (total > limits.max_total_bytes) {
      return Refused("(archive)",
                     absl::StrCat("it inflates to more than ",
                                  limits.max_total_bytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckScriptArchive(absl::string_view archive,
                                const ScriptArchiveLimits& limits) {
  absl::StatusOr<std::vector<ZipEntry>> entries = ListZipEntries(archive);
  if (!entries.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file: not a TorchScript archive (torch.jit.save's zip): ",
        entries.status().message()));
  }
  std::string prefix;
  if (absl::Status s = CheckDirectory(*entries, limits, &prefix); !s.ok()) {
    return s;
  }
  // The format version, before LibTorch's reader (which throws on one it
  // does not know) is given the file.
  for (const ZipEntry& e : *entries) {
    if (e.name != prefix + "version") continue;
    uint64_t version = 0;
    if (e.method != 0 ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(e.data), &version)) {
      return Refused(e.name, "a version record that is not a number");
    }
    if (version < caffe2::serialize::kMinSupportedFileFormatVersion ||
        version > caffe2::serialize::kMaxSupportedFileFormatVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model file: file format version ", version,
          " (written by another PyTorch); this LibTorch reads versions ",
          caffe2::serialize::kMinSupportedFileFormatVersion, " to ",
          caffe2::serialize::kMaxSupportedFileFormatVersion,
          ": script it with a PyTorch that writes one of those"));
    }
  }
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(
        std::make_shared<caffe2::serialize::MemoryReadAdapter>(
            archive.data(), static_cast<off_t>(archive.size())));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return absl::InvalidArgumentError(
        absl::StrCat("model file: LibTorch's reader refuses it: ",
                     what.substr(0, what.find('\n'))));
  }
  // Code files and pickles, inflated (their sizes are bounded above).
  std::map<std::string, std::string> code;
  std::vector<std::pair<std::string, std::string>> pickles;
  for (const ZipEntry& e : *entries) {
    const std::string relative = e.name.substr(prefix.size());
    if (!IsCode(relative) && !IsPickle(relative)) continue;
    std::string text;
    if (e.method == 0) {
      text = std::string(e.data);
    } else {
      try {
        auto [data, size] = reader->getRecord(relative);
        text.assign(static_cast<const char*>(data.get()), size);
      } catch (const std::exception& ex) {
        const std::string what = ex.what();
        return Refused(e.name, absl::StrCat("cannot be read: ",
                                            what.substr(0, what.find('\n'))));
      }
    }
    if (text.size() != e.size) {
      return Refused(e.name, "holds another size than its directory says");
    }
    if (IsCode(relative)) {
      if (absl::Status s = CheckCode(e.name, text); !s.ok()) return s;
      code[relative] = std::move(text);
    } else {
      pickles.emplace_back(e.name, std::move(text));
    }
  }
  for (const auto& [name, bytes] : pickles) {
    absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(bytes);
    if (!tree.ok()) return Refused(name, tree.status().message());
    for (const std::string& global : GlobalsOf((*tree)->root())) {
      if (AllowedGlobal(global)) continue;
      const size_t space = global.find(' ');
      const std::string module = global.substr(0, space);
      const std::string cls =
          space == std::string::npos ? "" : global.substr(space + 1);
      const bool own_class =
          (module == "__torch__" || absl::StartsWith(module, "__torch__.")) &&
          !absl::StartsWith(module, "__torch__.torch.classes") && !cls.empty();
      if (!own_class) {
        return Refused(name, absl::StrCat("names the global '", global,
                                          "', which a model's pickles do "
                                          "not need"));
      }
      auto file = code.find(CodeFileOf(module));
      if (file == code.end() ||
          !absl::StrContains(file->second, absl::StrCat("class ", cls, "("))) {
        return Refused(name, absl::StrCat("names the class '", global,
                                          "', which the file's code does "
                                          "not define"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
