// A model snapshot as a gRPC stream of SnapshotChunk (snapshot.proto), both
// ways: cutting bytes into in-order chunks of at most kSnapshotChunkBytes
// (coordinator downloads, worker uploads) and putting a received stream
// back together with its checks (worker and CLI downloads).
// Thread safety: free functions.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "gradsync/v1/snapshot.pb.h"

namespace gradsync {

inline constexpr int64_t kSnapshotChunkBytes = 1 << 20;

// Calls `write` with each chunk of `data` in order (offset and data set,
// `meta` on the first; the callee may add fields) until it returns false.
// True when every chunk was written.
bool WriteSnapshotChunks(absl::string_view data, const v1::SnapshotMeta& meta,
                         const std::function<bool(v1::SnapshotChunk&)>& write);

// Reads a whole snapshot stream into *meta and *data: the stream's own
// error, or DATA_LOSS for a chunk out of order or bytes whose size or
// SHA-256 differ from the meta.
grpc::Status ReadSnapshotChunks(
    grpc::ClientContext& context,
    grpc::ClientReaderInterface<v1::SnapshotChunk>& reader,
    v1::SnapshotMeta* meta, std::string* data);

}  // namespace gradsync
