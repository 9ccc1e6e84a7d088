#include "coordinator/cli/job_file.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "coordinator/cli/flag_fields.h"

namespace gradsync::cli {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// "batch-size", "batchSize", "BATCH_SIZE" -> "batch_size".
std::string Normalized(absl::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '-') {
      out.push_back('_');
    } else if (absl::ascii_isupper(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != '_') out.push_back('_');
      out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The field a key spelled as one of `gradsync submit`'s flags sets
// ("checkpoint-dir" -> checkpoint.directory), or "".
std::string FieldOfFlag(const std::string& key) {
  if (key == "workers" || key == "n") {
    return "world_size.max_workers (and world_size.min_workers)";
  }
  for (const FlagField& f : SubmitFlagFields()) {
    if (Normalized(absl::StripPrefix(f.flag, "--")) == key) return f.field;
  }
  return "";
}

// Every field of JobSpec as "parent.child" (one level of nesting is all
// JobSpec has), keyed by the field's own name.
std::multimap<std::string, std::string> FieldsByName() {
  std::multimap<std::string, std::string> out;
  const Descriptor* spec = v1::JobSpec::descriptor();
  for (int i = 0; i < spec->field_count(); ++i) {
    const FieldDescriptor* f = spec->field(i);
    out.emplace(f->name(), f->name());
    if (const Descriptor* m = f->message_type()) {
      for (int j = 0; j < m->field_count(); ++j) {
        out.emplace(m->field(j)->name(),
                    absl::StrCat(f->name(), ".", m->field(j)->name()));
      }
    }
  }
  return out;
}

// Levenshtein distance, for a misspelt key.
size_t Distance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// What an unknown key probably meant, or "".
std::string UnknownKeyHint(absl::string_view key) {
  const std::string k = Normalized(key);
  if (std::string field = FieldOfFlag(k); !field.empty()) return field;
  const std::multimap<std::string, std::string> fields = FieldsByName();
  std::vector<std::string> named;
  for (auto [it, end] = fields.equal_range(k); it != end; ++it) {
    named.push_back(it->second);
  }
  if (!named.empty()) return absl::StrJoin(named, " or ");
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  for (const auto& [name, path] : fields) {
    const size_t d = Distance(k, name);
    if (d < best_distance) {
      best_distance = d;
      best = path;
    }
  }
  return best;
}

// The fields of JobSpec's message-typed field `name`, as an example.
std::string ObjectHint(const std::string& name) {
  const FieldDescriptor* f = v1::JobSpec::descriptor()->FindFieldByName(name);
  if (f == nullptr || f->message_type() == nullptr) return "";
  std::vector<std::string> fields;
  for (int i = 0; i < f->message_type()->field_count(); ++i) {
    fields.push_back(f->message_type()->field(i)->name());
  }
  return absl::StrCat(name, " is an object with the fields ",
                      absl::StrJoin(fields, ", "), ", e.g. \"", name, "\": {\"",
                      fields.front(), "\": ...}");
}

// The parser's message with a hint, when one fits.
std::string Explain(absl::string_view error) {
  error = absl::StripPrefix(error, "INVALID_ARGUMENT:");
  std::string hint;
  if (absl::string_view::size_type at = error.find(": Cannot find field");
      at != absl::string_view::npos) {
    absl::string_view key = error.substr(0, at);
    if (size_t dot = key.rfind('.'); dot != absl::string_view::npos) {
      key.remove_prefix(dot + 1);
    }
    key = absl::StripPrefix(absl::StripSuffix(key, ")"), "(");
    if (std::string meant = UnknownKeyHint(key); !meant.empty()) {
      hint = absl::StrCat("; did you mean ", meant, "?");
    }
  } else if (absl::StartsWith(error, "(") &&
             absl::StrContains(error, "invalid value")) {
    const std::string name(error.substr(1, error.find(')') - 1));
    if (std::string object = ObjectHint(name); !object.empty()) {
      hint = absl::StrCat("; ", object);
    }
  }
  return absl::StrCat(error, hint);
}

}  // namespace

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(const std::string& json) {
  v1::JobSpec spec;
  auto status = google::protobuf::util::JsonStringToMessage(json, &spec);
  if (!status.ok()) {
    return absl::InvalidArgumentError(Explain(std::string(status.message())));
  }
  return spec;
}

absl::StatusOr<v1::JobSpec> ReadJobFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read job file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpecJson(text.str());
  if (!spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job file ", path, " is not a valid JobSpec: ", spec.status().message(),
        " (README, \"Job files\")"));
  }
  return spec;
}

}  // namespace gradsync::cli
