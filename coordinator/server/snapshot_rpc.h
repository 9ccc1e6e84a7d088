// The streaming halves of the snapshot RPCs (snapshot.proto), shared by
// JobServiceImpl (users pull) and WorkerServiceImpl (rank 0 uploads,
// workers download): chunked transfer between a gRPC stream and a
// SnapshotStore. Authorization is the caller's business.
// Thread safety: free functions; the store is thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>

#include "coordinator/persist/snapshot_store.h"
#include "coordinator/wire/snapshot_stream.h"
#include "gradsync/v1/snapshot.pb.h"

namespace gradsync {

v1::SnapshotMeta ToMeta(const SnapshotInfo& info);

// Reads an upload whose first chunk, `first`, was already read, into the
// store under `retention`; at most `max_bytes`. The checksum comes in the
// meta or on the last chunk. INVALID_ARGUMENT for bad chunks, sizes or
// checksums (nothing is kept then). When the store could not store it (its
// disk is full: RESOURCE_EXHAUSTED), that error is also in `storage_error`
// (SnapshotStore::IsStorageError); otherwise `storage_error` is left OK.
grpc::Status ReceiveSnapshot(
    const v1::SnapshotChunk& first,
    grpc::ServerReaderInterface<v1::SnapshotChunk>* reader,
    SnapshotStore& store, const SnapshotRetention& retention, int64_t max_bytes,
    v1::SnapshotMeta* stored, absl::Status* storage_error);

// Streams the job's snapshot of `step` (the latest when step < 0):
// NOT_FOUND when there is none, DATA_LOSS when its file is damaged (found
// while sending, before the last chunk: see SnapshotStore::ReadChunks).
grpc::Status SendSnapshot(
    const std::string& job_id, int64_t step, SnapshotStore& store,
    grpc::ServerWriterInterface<v1::SnapshotChunk>* writer);

}  // namespace gradsync
