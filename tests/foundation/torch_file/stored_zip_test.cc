// Stored zip archives: what WriteStoredZip writes reads back record for
// record, data aligned as torch.save aligns it; damaged or foreign archives
// are refused with the problem named, never read out of bounds.
#include "foundation/torch_file/stored_zip.h"

#include <gtest/gtest.h>

#include <string>

namespace gradsync {
namespace {

std::string Archive() {
  absl::StatusOr<std::string> zip =
      WriteStoredZip({{"archive/data.pkl", "pickle bytes"},
                      {"archive/data/0", ""},
                      {"archive/version", "3\n"}});
  EXPECT_TRUE(zip.ok()) << zip.status();
  return zip.value_or("");
}

TEST(StoredZipTest, RoundTripsRecordsInOrderWithAlignedData) {
  const std::string zip = Archive();
  absl::StatusOr<std::vector<ZipRecord>> records = ReadStoredZip(zip);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].name, "archive/data.pkl");
  EXPECT_EQ((*records)[0].data, "pickle bytes");
  EXPECT_EQ((*records)[1].data, "");
  EXPECT_EQ((*records)[2].name, "archive/version");
  EXPECT_EQ((*records)[2].data, "3\n");
  for (const ZipRecord& r : *records) {
    EXPECT_EQ((r.data.data() - zip.data()) % 64, 0) << r.name;
  }
}

TEST(StoredZipTest, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(StoredZipTest, ADamagedRecordIsNamed) {
  std::string zip = Archive();
  zip[zip.find("pickle bytes")] = 'P';
  absl::StatusOr<std::vector<ZipRecord>> records = ReadStoredZip(zip);
  ASSERT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(records.status().message().find("archive/data.pkl: CRC-32"),
            std::string::npos)
      << records.status();
}

TEST(StoredZipTest, CompressedRecordsAreRefusedByName) {
  std::string zip = Archive();
  // The central directory's compression method of the first entry.
  const size_t central = zip.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(central, std::string::npos);
  zip[central + 10] = 8;  // deflate
  absl::StatusOr<std::vector<ZipRecord>> records = ReadStoredZip(zip);
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("archive/data.pkl is compressed"),
            std::string::npos)
      << records.status();
}

// ListZipEntries describes compressed entries without inflating them, so a
// caller can bound what they declare first (a model file's checks).
TEST(StoredZipTest, ListingDescribesCompressedEntriesWithoutInflating) {
  std::string zip = Archive();
  const size_t central = zip.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(central, std::string::npos);
  zip[central + 10] = 8;     // deflate
  zip[central + 24] = 0x00;  // declared size: 0x7f000000
  zip[central + 25] = 0x00;
  zip[central + 26] = 0x00;
  zip[central + 27] = 0x7f;
  absl::StatusOr<std::vector<ZipEntry>> entries = ListZipEntries(zip);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_FALSE(entries->empty());
  EXPECT_EQ((*entries)[0].name, "archive/data.pkl");
  EXPECT_EQ((*entries)[0].method, 8u);
  EXPECT_EQ((*entries)[0].size, 0x7f000000u);
  EXPECT_EQ((*entries)[0].data, "pickle bytes");
  for (size_t cut = 0; cut < zip.size(); cut += 7) {
    EXPECT_FALSE(ListZipEntries(absl::string_view(zip).substr(0, cut)).ok())
        << cut;
  }
}

TEST(StoredZipTest, EveryTruncationIsRefusedWithoutReadingPastTheEnd) {
  const std::string zip = Archive();
  for (size_t n = 0; n < zip.size(); ++n) {
    absl::StatusOr<std::vector<ZipRecord>> records =
        ReadStoredZip(absl::string_view(zip).substr(0, n));
    EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument) << n;
  }
}

TEST(StoredZipTest, OffsetsPointingOutsideTheArchiveAreRefused) {
  std::string zip = Archive();
  const size_t central = zip.find(std::string("PK\x01\x02", 4));
  for (int i = 0; i < 4; ++i) zip[central + 42 + i] = '\xf0';  // local offset
  EXPECT_EQ(ReadStoredZip(zip).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ReadStoredZip("not a zip at all, just some text").ok());
}

TEST(StoredZipTest, EmptyNamesAreRefusedOnWrite) {
  EXPECT_EQ(WriteStoredZip({{"", "x"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
