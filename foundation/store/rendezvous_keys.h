// The names of the keys ranks rendezvous through, written down once: the
// communicators write and read them (worker/comm/), and the coordinator's
// key-owner rule (coordinator/server/key_owner.h) decides from the same
// names which rank may write each one. Every key here is relative to the
// store a communicator is given (a job attempt's PrefixStore).
//
// Ownership, which the key-owner rule enforces: a key that ends in a rank
// number ("<...>/3") is that rank's; the keys in kRankZeroKeys are rank
// 0's; any other key is anyone's.
// Thread safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace gradsync::rendezvous_keys {

// ncclUniqueId published by rank 0 (ProcessGroupNCCL's broadcastUniqueNCCLID).
inline constexpr char kNcclUniqueId[] = "nccl/unique_id";
// Rank 0's shared-memory segment name (or why it shares none), under
// kGlooPrefix.
inline constexpr char kShmSegment[] = "shm/segment";
// Keys rank 0 alone writes and the others trust, though no rank number ends
// them.
inline constexpr const char* kRankZeroKeys[] = {kNcclUniqueId, kShmSegment};

// The gloo communicator's namespace; the keys below marked "under
// kGlooPrefix" are relative to it.
inline constexpr char kGlooPrefix[] = "gloo/";
// A rank announces its hostname before the mesh connects (under
// kGlooPrefix).
std::string GlooHello(int rank);
// A rank's listening address and per-peer ports (ConnectGlooMesh, under
// kGlooPrefix).
std::string GlooMesh(int rank);
// A rank has opened rank 0's shared-memory segment ("1") or not ("0"),
// under kGlooPrefix.
std::string ShmJoined(int rank);
// A gloo rank is done with its sockets (a group of `size` ranks); the
// whole key, kGlooPrefix included.
std::string GlooBye(int size, int rank);
// A rank reached collective #`seq` that then failed or timed out; the
// others read these to name the ranks that never arrived.
std::string Arrived(int64_t seq, int rank);

}  // namespace gradsync::rendezvous_keys
