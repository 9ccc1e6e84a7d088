// A model snapshot as a gRPC stream of SnapshotChunk (snapshot.proto), both
// ways: a checkpoint file cut into in-order chunks of at most
// kSnapshotChunkBytes (worker uploads) and a received stream put back
// together with its checks (worker and CLI downloads).
// Thread safety: free functions.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "coordinator/wire/file_chunks.h"
#include "gradsync/v1/snapshot.pb.h"

namespace gradsync {

// Streams the file at `path` as the upload of `worker_id` running job
// attempt `attempt`: `meta` (its size_bytes set from the file, sha256 left
// empty) and the uploader's identity on the first chunk, the bytes in pieces
// of at most kSnapshotChunkBytes read as they go, and their SHA-256 on the
// last chunk; the file is read once and memory stays at one chunk. `write`
// gets each chunk in order until it returns false. NOT_FOUND / DATA_LOSS naming
// the file when it cannot be opened or read to its end, FAILED_PRECONDITION
// when it is not a regular file (the upload must then be
// cancelled); CANCELLED when `write` returned false (the stream's Finish() says
// why); OK when all was written.
absl::Status WriteSnapshotFile(
    const std::string& path, v1::SnapshotMeta meta,
    const std::string& worker_id, int attempt,
    const std::function<bool(const v1::SnapshotChunk&)>& write);

// Reads a whole snapshot stream into *meta and *data: the stream's own
// error (its gRPC code), or DATA_LOSS for a chunk out of order or bytes
// whose size or SHA-256 differ from the meta.
absl::Status ReadSnapshotChunks(
    grpc::ClientContext& context,
    grpc::ClientReaderInterface<v1::SnapshotChunk>& reader,
    v1::SnapshotMeta* meta, std::string* data);

}  // namespace gradsync
