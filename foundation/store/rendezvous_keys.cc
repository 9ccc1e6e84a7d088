#include "foundation/store/rendezvous_keys.h"

#include "absl/strings/str_cat.h"

namespace gradsync::rendezvous_keys {

std::string GlooHello(int rank) { return absl::StrCat("hello/", rank); }
std::string GlooMesh(int rank) { return absl::StrCat("mesh/", rank); }
std::string ShmJoined(int rank) { return absl::StrCat("shm/joined/", rank); }
std::string GlooBye(int size, int rank) {
  return absl::StrCat(kGlooPrefix, "bye/", size, "/", rank);
}
std::string Arrived(int64_t seq, int rank) {
  return absl::StrCat("arrived/", seq, "/", rank);
}

}  // namespace gradsync::rendezvous_keys
