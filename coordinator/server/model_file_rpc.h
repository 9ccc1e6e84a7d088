// The streaming halves of the model file RPCs (model_file.proto), shared by
// JobServiceImpl (users upload and pull) and WorkerServiceImpl (workers
// download): chunked transfer between a gRPC stream and a ModelFileStore.
// Authorization is the caller's business.
// Thread safety: free functions; the store is thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <string>

#include "coordinator/persist/model_file_store.h"
#include "gradsync/v1/model_file.pb.h"

namespace gradsync {

v1::ModelFileMeta ToModelFileMeta(const ModelFileInfo& info);

// Reads an upload whose first chunk, `first`, was already read, into the
// store; at most `max_bytes`. INVALID_ARGUMENT for bad chunks, sizes or
// checksums (nothing is kept then); RESOURCE_EXHAUSTED when the store's
// disk is full.
grpc::Status ReceiveModelFile(
    const v1::ModelFileChunk& first,
    grpc::ServerReaderInterface<v1::ModelFileChunk>* reader,
    ModelFileStore& store, int64_t max_bytes, v1::ModelFileMeta* stored);

// Streams the model file `sha256`: INVALID_ARGUMENT / NOT_FOUND as
// ModelFileStore::Find, DATA_LOSS when its file is damaged.
grpc::Status SendModelFile(
    const std::string& sha256, ModelFileStore& store,
    grpc::ServerWriterInterface<v1::ModelFileChunk>* writer);

}  // namespace gradsync
