// KeyOwner over the names the communicators really use
// (foundation/store/rendezvous_keys.h), so that a key added there without
// an owner, or renamed, shows here rather than as a rank that may write
// another rank's address.
#include "coordinator/server/key_owner.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "foundation/store/rendezvous_keys.h"

namespace gradsync {
namespace {

namespace keys = rendezvous_keys;

// As a communicator's keys reach the coordinator: under a job attempt's
// prefix, and the gloo keys under the gloo namespace too.
std::string Job(const std::string& key) { return "job-000001/2/" + key; }
std::string Gloo(const std::string& key) {
  return Job(std::string(keys::kGlooPrefix) + key);
}

TEST(KeyOwnerTest, PerRankKeysBelongToTheirRank) {
  for (int rank : {0, 1, 7, 1023}) {
    EXPECT_EQ(KeyOwner(Gloo(keys::GlooHello(rank))), rank);
    EXPECT_EQ(KeyOwner(Gloo(keys::GlooMesh(rank))), rank);
    EXPECT_EQ(KeyOwner(Gloo(keys::ShmJoined(rank))), rank);
    EXPECT_EQ(KeyOwner(Job(keys::GlooBye(4, rank))), rank);
    EXPECT_EQ(KeyOwner(Job(keys::Arrived(12, rank))), rank);
  }
}

TEST(KeyOwnerTest, RankZeroKeysBelongToRankZero) {
  EXPECT_EQ(KeyOwner(Job(keys::kNcclUniqueId)), 0);
  // The shared-memory segment's name: another rank that wrote it could send
  // its peers' all-reduces into a segment of its choosing.
  EXPECT_EQ(KeyOwner(Gloo(keys::kShmSegment)), 0);
  for (const char* key : keys::kRankZeroKeys) {
    EXPECT_EQ(KeyOwner(Job(key)), 0) << key;
  }
}

TEST(KeyOwnerTest, OtherKeysAreAnyones) {
  EXPECT_EQ(KeyOwner("job-000001/2/barrier/epoch"), std::nullopt);
  EXPECT_EQ(KeyOwner("counter"), std::nullopt);
  EXPECT_EQ(KeyOwner("a/b_"), std::nullopt);
  EXPECT_EQ(KeyOwner("a/1x"), std::nullopt);
  EXPECT_EQ(KeyOwner("a/1234567890"), std::nullopt);  // past any rank
}

}  // namespace
}  // namespace gradsync
