#include "coordinator/server/model_file_rpc.h"

#include "coordinator/server/chunk_stream.h"
#include "coordinator/wire/grpc_status.h"

namespace gradsync {

v1::ModelFileMeta ToModelFileMeta(const ModelFileInfo& info) {
  v1::ModelFileMeta meta;
  meta.set_sha256(info.sha256);
  meta.set_size_bytes(info.size);
  meta.set_name(info.name);
  meta.set_created_unix_ms(info.created_unix_ms);
  return meta;
}

grpc::Status ReceiveModelFile(
    const v1::ModelFileChunk& first,
    grpc::ServerReaderInterface<v1::ModelFileChunk>* reader,
    ModelFileStore& store, int64_t max_bytes, v1::ModelFileMeta* stored) {
  const v1::ModelFileMeta& meta = first.meta();
  auto upload = store.Begin(meta.name(), meta.size_bytes(), max_bytes);
  if (!upload.ok()) return ToGrpcStatus(upload.status());
  std::string sha256;
  if (grpc::Status s = ReceiveChunks<v1::ModelFileChunk>(
          "model file", first, reader, meta.sha256(),
          [&](int64_t offset, absl::string_view data) {
            return (*upload)->Append(offset, data);
          },
          &sha256);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<ModelFileInfo> done = (*upload)->Commit(sha256);
  if (!done.ok()) return ToGrpcStatus(done.status());
  *stored = ToModelFileMeta(*done);
  return grpc::Status::OK;
}

grpc::Status SendModelFile(
    const std::string& sha256, ModelFileStore& store,
    grpc::ServerWriterInterface<v1::ModelFileChunk>* writer) {
  absl::StatusOr<ModelFileInfo> info = store.Find(sha256);
  if (!info.ok()) return ToGrpcStatus(info.status());
  return SendChunks<v1::ModelFileChunk>(
      [&](const std::function<bool(int64_t, absl::string_view)>& chunk) {
        return store.ReadChunks(*info, kSnapshotChunkBytes, chunk);
      },
      [&](v1::ModelFileChunk* chunk) {
        *chunk->mutable_meta() = ToModelFileMeta(*info);
      },
      writer);
}

}  // namespace gradsync
