#include "foundation/data_index/tar_member.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gradsync {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

// A NUL-terminated (or full-width) field.
std::string Field(absl::string_view block, size_t at, size_t width) {
  absl::string_view f = block.substr(at, width);
  return std::string(f.substr(0, f.find('\0')));
}

// An octal number field (spaces and NULs around it), or -1.
int64_t Octal(absl::string_view block, size_t at, size_t width) {
  absl::string_view f = block.substr(at, width);
  if (!f.empty() && (static_cast<unsigned char>(f[0]) & 0x80) != 0) {
    return -1;  // base-256 (GNU, for sizes past 8 GiB): not taken
  }
  int64_t value = 0;
  bool digits = false;
  for (char c : f) {
    if (c == '\0' || c == ' ') {
      if (digits) break;
      continue;
    }
    if (c < '0' || c > '7') return -1;
    if (value > (int64_t{1} << 55)) return -1;
    value = value * 8 + (c - '0');
    digits = true;
  }
  return digits ? value : -1;
}

uint64_t Checksum(absl::string_view block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < static_cast<size_t>(kTarBlock); ++i) {
    const bool field = i >= 148 && i < 156;  // counted as spaces
    sum += field ? ' ' : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

}  // namespace

bool IsZeroBlock(absl::string_view block) {
  return std::all_of(block.begin(), block.end(),
                     [](char c) { return c == '\0'; });
}

absl::StatusOr<TarHeader> ParseTarHeader(absl::string_view block) {
  if (block.size() != static_cast<size_t>(kTarBlock)) {
    return Bad("a tar header block is cut short");
  }
  const int64_t declared = Octal(block, 148, 8);
  if (declared < 0 || static_cast<uint64_t>(declared) != Checksum(block)) {
    return Bad("not a tar header (its checksum does not match)");
  }
  TarHeader h;
  h.name = Field(block, 0, 100);
  if (block.substr(257, 5) == "ustar") {
    const std::string prefix = Field(block, 345, 155);
    if (!prefix.empty()) h.name = absl::StrCat(prefix, "/", h.name);
  }
  h.size = Octal(block, 124, 12);
  if (h.size < 0) {
    return Bad(
        absl::StrCat("member ", h.name, ": its size is not an octal number"));
  }
  switch (block[156]) {
    case '0':
    case '\0':
    case '7':  // contiguous file
      h.type = TarHeader::Type::kFile;
      break;
    case '5':
      h.type = TarHeader::Type::kDirectory;
      break;
    case '1':
    case '2':
      return Bad(absl::StrCat(
          "member ", h.name, " is a ", block[156] == '1' ? "hard" : "symbolic",
          " link to ", Field(block, 157, 100), "; a shard holds files only"));
    case 'L':
      h.type = TarHeader::Type::kLongName;
      break;
    case 'x':
      h.type = TarHeader::Type::kPax;
      break;
    case 'g':
      h.type = TarHeader::Type::kGlobalPax;
      break;
    default:
      h.type = TarHeader::Type::kOther;
  }
  return h;
}

absl::StatusOr<PaxOverrides> ParsePaxRecords(absl::string_view data) {
  PaxOverrides out;
  while (!data.empty()) {
    const size_t space = data.find(' ');
    int64_t length = 0;
    if (space == absl::string_view::npos ||
        !absl::SimpleAtoi(data.substr(0, space), &length) ||
        length <= static_cast<int64_t>(space) + 1 ||
        length > static_cast<int64_t>(data.size()) ||
        data[length - 1] != '\n') {
      return Bad("a pax header record does not parse");
    }
    const absl::string_view record = data.substr(space + 1, length - space - 2);
    data.remove_prefix(length);
    const size_t eq = record.find('=');
    if (eq == absl::string_view::npos) {
      return Bad("a pax header record has no '='");
    }
    const absl::string_view key = record.substr(0, eq);
    const absl::string_view value = record.substr(eq + 1);
    if (key == "path") out.path = std::string(value);
    if (key == "size" &&
        (!absl::SimpleAtoi(value, &out.size) || out.size < 0)) {
      return Bad("a pax size record is not a size");
    }
  }
  return out;
}

absl::Status CheckMemberName(absl::string_view name) {
  if (name.empty()) return Bad("a member has no name");
  if (name[0] == '/') {
    return Bad(absl::StrCat("member ", name, " has an absolute name"));
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part == "..") {
      return Bad(absl::StrCat("member ", name,
                              " climbs out of the archive with '..'"));
    }
  }
  return absl::OkStatus();
}

std::string TarFileMember(absl::string_view name, absl::string_view data) {
  std::string block(kTarBlock, '\0');
  std::memcpy(&block[0], name.data(), std::min<size_t>(name.size(), 99));
  std::memcpy(&block[100], "0000644", 7);
  std::memcpy(&block[108], "0000000", 7);
  std::memcpy(&block[116], "0000000", 7);
  const std::string size = absl::StrFormat("%011o", data.size());
  std::memcpy(&block[124], size.data(), 11);
  std::memcpy(&block[136], "00000000000", 11);
  block[156] = '0';
  std::memcpy(&block[257],
              "ustar\0"
              "00",
              8);
  const std::string sum = absl::StrFormat("%06o", Checksum(block));
  std::memcpy(&block[148], sum.data(), 6);
  block[154] = '\0';
  block[155] = ' ';
  std::string out = block;
  out.append(data.data(), data.size());
  out.append((kTarBlock - data.size() % kTarBlock) % kTarBlock, '\0');
  return out;
}

std::string TarEnd() { return std::string(2 * kTarBlock, '\0'); }

}  // namespace gradsync
