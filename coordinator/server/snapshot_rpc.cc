#include "coordinator/server/snapshot_rpc.h"

#include <algorithm>

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
  std::string trailer;  // the checksum sent on the last chunk, if any
  v1::SnapshotChunk chunk = first;
  do {
    if (!trailer.empty()) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("snapshot upload: chunk at byte ", chunk.offset(),
                       " after the chunk that carried the checksum (it "
                       "belongs on the last one)"));
    }
    if (static_cast<int64_t>(chunk.data().size()) > kSnapshotChunkBytes) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("snapshot upload: chunk of ", chunk.data().size(),
                       " bytes, more than ", kSnapshotChunkBytes));
    }
    if (absl::Status s = (*upload)->Append(chunk.offset(), chunk.data());
        !s.ok()) {
      return failed(s);  // the upload is discarded
    }
    trailer = chunk.sha256();
  } while (reader->Read(&chunk));
  if (meta.sha256().empty() && trailer.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "snapshot upload: no checksum (neither meta.sha256 "
                        "nor sha256 on the last chunk)");
  }
  if (!meta.sha256().empty() && !trailer.empty() && meta.sha256() != trailer) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("snapshot upload: the meta's checksum ", meta.sha256(),
                     " and the last chunk's ", trailer, " differ"));
  }
  absl::StatusOr<SnapshotInfo> done =
      (*upload)->Commit(trailer.empty() ? meta.sha256() : trailer);
  if (!done.ok()) return failed(done.status());
  *stored = ToMeta(*done);
  return grpc::Status::OK;
}

grpc::Status SendSnapshot(
    const std::string& job_id, int64_t step, SnapshotStore& store,
    grpc::ServerWriterInterface<v1::SnapshotChunk>* writer) {
  absl::StatusOr<SnapshotInfo> info = store.Find(job_id, step);
  if (!info.ok()) return ToGrpcStatus(info.status());
  v1::SnapshotChunk chunk;  // reused: its buffer is allocated once
  absl::Status s = store.ReadChunks(
      *info, kSnapshotChunkBytes, [&](int64_t offset, absl::string_view data) {
        if (offset == 0) {
          *chunk.mutable_meta() = ToMeta(*info);
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
