// Files as gRPC streams of chunks, both ways, for any chunk message with
// meta, offset, data and sha256 fields (SnapshotChunk, ModelFileChunk):
//
// WriteFileChunks sends the file at `path` in in-order chunks of at most
// kSnapshotChunkBytes, read as they go (memory stays at one chunk): the
// first chunk gets `first(chunk, size)` (its meta and any identity), later
// ones `later(chunk)` (which clears what only the first carries), the last
// one the bytes' SHA-256. NOT_FOUND / FAILED_PRECONDITION (not a regular
// file) / DATA_LOSS naming the file when it cannot be opened or read to
// its end; CANCELLED when `write` returned
// false (the stream's Finish() says why).
//
// FinishUpload ends a client-streaming upload whose chunks `send` writes
// to `writer` (through WriteFileChunks or a wrapper of it): when `send`
// could not read the file, the call is cancelled (the server keeps nothing
// of it) and that error returned; otherwise (also when a write failed,
// which ends the stream) the call's own status.
//
// ReadChunkStream puts a received stream back together into *meta and
// *data: the stream's own error (its gRPC code), or DATA_LOSS for a chunk
// out of order or bytes whose size or SHA-256 differ from the meta.
// Thread safety: free functions.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/sha256.h"
#include "foundation/files/regular_file.h"

namespace gradsync {

inline constexpr int64_t kSnapshotChunkBytes = 1 << 20;

// The file opened for sending, as RegularFile::Open: NOT_FOUND or
// FAILED_PRECONDITION naming it ("<kind> file <path>"), so a FIFO or a
// directory is refused before any chunk is sent.
absl::StatusOr<RegularFile> OpenForChunks(const std::string& path,
                                          absl::string_view kind);
// Reads `want` bytes at `offset` of `file` into *data (resized); DATA_LOSS
// naming the file, the byte and the file's size otherwise.
absl::Status ReadChunkAt(const RegularFile& file, absl::string_view kind,
                         int64_t offset, size_t want, std::string* data);
// Reserves `size` bytes in *data for a download, backed by huge pages
// where the kernel allows.
void ReserveDownloadBuffer(std::string* data, int64_t size);

template <typename Chunk>
absl::Status WriteFileChunks(
    const std::string& path, absl::string_view kind,
    const std::function<void(Chunk*, int64_t size)>& first,
    const std::function<void(Chunk*)>& later,
    const std::function<bool(const Chunk&)>& write) {
  absl::StatusOr<RegularFile> file = OpenForChunks(path, kind);
  if (!file.ok()) return file.status();
  const int64_t size = file->size();
  Sha256 sha256;
  Chunk chunk;  // reused: its buffer is allocated once
  absl::Status status;
  int64_t offset = 0;
  do {
    if (offset == 0) {
      first(&chunk, size);
    } else {
      later(&chunk);
    }
    chunk.set_offset(offset);
    const size_t want = static_cast<size_t>(
        std::min<int64_t>(kSnapshotChunkBytes, size - offset));
    status = ReadChunkAt(*file, kind, offset, want, chunk.mutable_data());
    if (!status.ok()) break;
    sha256.Update(chunk.data());
    offset += static_cast<int64_t>(want);
    if (offset == size) chunk.set_sha256(sha256.HexDigest());
    if (!write(chunk)) {
      status = absl::CancelledError("the upload stream closed");
      break;
    }
  } while (offset < size);
  return status;
}

template <typename Chunk>
absl::Status FinishUpload(
    grpc::ClientContext& context, grpc::ClientWriterInterface<Chunk>& writer,
    const std::function<
        absl::Status(const std::function<bool(const Chunk&)>& write)>& send) {
  absl::Status sent =
      send([&writer](const Chunk& chunk) { return writer.Write(chunk); });
  if (!sent.ok() && !absl::IsCancelled(sent)) {
    context.TryCancel();
    (void)writer.Finish();
    return sent;
  }
  // A failed write ended the stream; Finish() says why.
  writer.WritesDone();
  return FromGrpcStatus(writer.Finish());
}

template <typename Chunk, typename Meta>
absl::Status ReadChunkStream(absl::string_view kind,
                             grpc::ClientContext& context,
                             grpc::ClientReaderInterface<Chunk>& reader,
                             Meta* meta, std::string* data) {
  data->clear();
  Sha256 sha256;  // as the bytes arrive: no second pass over them
  Chunk chunk;
  while (reader.Read(&chunk)) {
    if (chunk.has_meta()) {
      *meta = chunk.meta();
      ReserveDownloadBuffer(data, meta->size_bytes());
    }
    if (chunk.offset() != static_cast<int64_t>(data->size())) {
      context.TryCancel();
      (void)reader.Finish();
      return absl::DataLossError(
          absl::StrCat(kind, " chunk at byte ", chunk.offset(),
                       ", expected byte ", data->size()));
    }
    sha256.Update(chunk.data());
    data->append(chunk.data());
  }
  if (absl::Status s = FromGrpcStatus(reader.Finish()); !s.ok()) return s;
  if (static_cast<int64_t>(data->size()) != meta->size_bytes() ||
      sha256.HexDigest() != meta->sha256()) {
    return absl::DataLossError(absl::StrCat(
        "the ", kind, " arrived damaged (size or checksum differ)"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
