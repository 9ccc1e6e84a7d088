// The two loops every chunked transfer of a content-addressed store runs
// (snapshots, model files: snapshot_rpc.h, model_file_rpc.h), over any
// chunk message with offset(), data() and a trailing sha256().
//
// ReceiveChunks appends an upload's chunks, `first` (already read) and the
// rest of `reader`, in order through `append`, and works out the checksum
// to commit: the meta's (`meta_sha256`) or the last chunk's.
// INVALID_ARGUMENT, naming `kind`, for a chunk over kSnapshotChunkBytes, a
// chunk after the one that carried the checksum, no checksum at all, or
// two that differ; `append`'s own error as it is.
//
// SendChunks streams what `read` gives to `writer`, `first_meta` setting
// the first chunk's meta; CANCELLED when the client goes away.
// Thread safety: free functions, on the calling RPC's thread.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/snapshot_stream.h"

namespace gradsync {

template <typename Chunk>
grpc::Status ReceiveChunks(
    absl::string_view kind, const Chunk& first,
    grpc::ServerReaderInterface<Chunk>* reader, const std::string& meta_sha256,
    const std::function<absl::Status(int64_t, absl::string_view)>& append,
    std::string* sha256) {
  auto invalid = [&kind](const std::string& why) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat(kind, " upload: ", why));
  };
  std::string trailer;  // the checksum sent on the last chunk, if any
  Chunk chunk = first;
  do {
    if (!trailer.empty()) {
      return invalid(absl::StrCat("chunk at byte ", chunk.offset(),
                                  " after the chunk that carried the checksum "
                                  "(it belongs on the last one)"));
    }
    if (static_cast<int64_t>(chunk.data().size()) > kSnapshotChunkBytes) {
      return invalid(absl::StrCat("chunk of ", chunk.data().size(),
                                  " bytes, more than ", kSnapshotChunkBytes));
    }
    if (absl::Status s = append(chunk.offset(), chunk.data()); !s.ok()) {
      return ToGrpcStatus(s);
    }
    trailer = chunk.sha256();
  } while (reader->Read(&chunk));
  if (meta_sha256.empty() && trailer.empty()) {
    return invalid(
        "no checksum (neither meta.sha256 nor sha256 on the last chunk)");
  }
  if (!meta_sha256.empty() && !trailer.empty() && meta_sha256 != trailer) {
    return invalid(absl::StrCat("the meta's checksum ", meta_sha256,
                                " and the last chunk's ", trailer, " differ"));
  }
  *sha256 = trailer.empty() ? meta_sha256 : trailer;
  return grpc::Status::OK;
}

template <typename Chunk>
grpc::Status SendChunks(
    const std::function<absl::Status(
        const std::function<bool(int64_t, absl::string_view)>&)>& read,
    const std::function<void(Chunk*)>& first_meta,
    grpc::ServerWriterInterface<Chunk>* writer) {
  Chunk chunk;  // reused: its buffer is allocated once
  absl::Status s = read([&](int64_t offset, absl::string_view data) {
    if (offset == 0) {
      first_meta(&chunk);
    } else {
      chunk.clear_meta();
    }
    chunk.set_offset(offset);
    chunk.mutable_data()->assign(data.data(), data.size());
    return writer->Write(chunk);
  });
  if (absl::IsCancelled(s)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  }
  return ToGrpcStatus(s);
}

}  // namespace gradsync
