#include "coordinator/wire/snapshot_stream.h"

namespace gradsync {

absl::Status WriteSnapshotFile(
    const std::string& path, v1::SnapshotMeta meta,
    const std::string& worker_id, int attempt,
    const std::function<bool(const v1::SnapshotChunk&)>& write) {
  meta.clear_sha256();  // sent after the bytes instead
  return WriteFileChunks<v1::SnapshotChunk>(
      path, "snapshot",
      [&](v1::SnapshotChunk* chunk, int64_t size) {
        meta.set_size_bytes(size);
        *chunk->mutable_meta() = meta;
        chunk->set_worker_id(worker_id);
        chunk->set_attempt(attempt);
      },
      [](v1::SnapshotChunk* chunk) {
        // The identity and meta go on the first chunk only.
        chunk->clear_meta();
        chunk->clear_worker_id();
        chunk->clear_attempt();
      },
      write);
}

absl::Status ReadSnapshotChunks(
    grpc::ClientContext& context,
    grpc::ClientReaderInterface<v1::SnapshotChunk>& reader,
    v1::SnapshotMeta* meta, std::string* data) {
  return ReadChunkStream("snapshot", context, reader, meta, data);
}

}  // namespace gradsync
