#include "coordinator/server/snapshot_rpc.h"

#include <algorithm>

#include "coordinator/server/chunk_stream.h"
#include "coordinator/wire/grpc_status.h"

namespace gradsync {

v1::SnapshotMeta ToMeta(const SnapshotInfo& info) {
  v1::SnapshotMeta meta;
  meta.set_job_id(info.job_id);
  meta.set_step(info.step);
  meta.set_epoch(info.epoch);
  meta.set_epoch_batch(info.epoch_batch);
  meta.set_accuracy(info.accuracy);
  meta.set_size_bytes(info.size);
  meta.set_sha256(info.sha256);
  meta.set_created_unix_ms(info.created_unix_ms);
  return meta;
}

grpc::Status ReceiveSnapshot(
    const v1::SnapshotChunk& first,
    grpc::ServerReaderInterface<v1::SnapshotChunk>* reader,
    SnapshotStore& store, const SnapshotRetention& retention, int64_t max_bytes,
    v1::SnapshotMeta* stored, absl::Status* storage_error) {
  auto failed = [storage_error](const absl::Status& s) {
    if (SnapshotStore::IsStorageError(s)) *storage_error = s;
    return ToGrpcStatus(s);
  };
  const v1::SnapshotMeta& meta = first.meta();
  SnapshotInfo info;
  info.job_id = meta.job_id();
  info.step = meta.step();
  info.epoch = meta.epoch();
  info.epoch_batch = meta.epoch_batch();
  info.accuracy = meta.accuracy();
  info.size = meta.size_bytes();
  absl::StatusOr<std::unique_ptr<SnapshotStore::Upload>> upload =
      store.Begin(info, max_bytes, retention);
  if (!upload.ok()) return failed(upload.status());
  std::string sha256;
  if (grpc::Status s = ReceiveChunks<v1::SnapshotChunk>(
          "snapshot", first, reader, meta.sha256(),
          [&](int64_t offset, absl::string_view data) {
            absl::Status appended = (*upload)->Append(offset, data);
            if (!appended.ok()) failed(appended);  // the upload is discarded
            return appended;
          },
          &sha256);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<SnapshotInfo> done = (*upload)->Commit(sha256);
  if (!done.ok()) return failed(done.status());
  *stored = ToMeta(*done);
  return grpc::Status::OK;
}

grpc::Status SendSnapshot(
    const std::string& job_id, int64_t step, SnapshotStore& store,
    grpc::ServerWriterInterface<v1::SnapshotChunk>* writer) {
  absl::StatusOr<SnapshotInfo> info = store.Find(job_id, step);
  if (!info.ok()) return ToGrpcStatus(info.status());
  return SendChunks<v1::SnapshotChunk>(
      [&](const std::function<bool(int64_t, absl::string_view)>& chunk) {
        return store.ReadChunks(*info, kSnapshotChunkBytes, chunk);
      },
      [&](v1::SnapshotChunk* chunk) { *chunk->mutable_meta() = ToMeta(*info); },
      writer);
}

}  // namespace gradsync
