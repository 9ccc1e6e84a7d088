// Job files: README's example parses as printed (extracted from README.md);
// keys spelled as flags or misspelt, and objects given as strings, are
// refused with the field that was meant.
#include "coordinator/cli/job_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gradsync::cli {
namespace {

// The ```json block after README's job-file marker.
std::string ReadmeJobFile() {
  std::ifstream in(README_PATH);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t marker = readme.find("<!-- job-file: tested by");
  if (marker == std::string::npos) return "";
  const size_t start = readme.find("```json\n", marker);
  if (start == std::string::npos) return "";
  const size_t body = start + 8;
  return readme.substr(body, readme.find("```", body) - body);
}

TEST(JobFileTest, ReadmesExampleIsAJobSpec) {
  const std::string json = ReadmeJobFile();
  ASSERT_FALSE(json.empty()) << "no job-file example in " << README_PATH;
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpecJson(json);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model(), "fashion_cnn");
  EXPECT_EQ(spec->batch_size(), 100);
  EXPECT_EQ(spec->dataset().eval_split(), "test");
  EXPECT_EQ(spec->optimizer().type(), v1::OPTIMIZER_TYPE_SGD);
  EXPECT_EQ(spec->world_size().max_workers(), 2);
  EXPECT_EQ(spec->checkpoint().interval_steps(), 200);
}

void ExpectHint(const std::string& json, const std::string& hint) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpecJson(json);
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << json;
  EXPECT_NE(spec.status().message().find(hint), std::string::npos)
      << spec.status().message();
}

TEST(JobFileTest, KeysSpelledAsFlagsNameTheirField) {
  ExpectHint(R"({"workers": 2})",
             "workers: Cannot find field.; did you mean "
             "world_size.max_workers (and world_size.min_workers)?");
  ExpectHint(R"({"lr": 0.1})", "did you mean optimizer.learning_rate?");
  ExpectHint(R"({"checkpoint-dir": "c"})",
             "did you mean checkpoint.directory?");
  ExpectHint(R"({"eval_split": "test"})", "did you mean dataset.eval_split?");
  ExpectHint(R"({"maxWorkers": 2})", "did you mean world_size.max_workers?");
  ExpectHint(R"({"batch_sise": 8})", "did you mean batch_size?");
}

TEST(JobFileTest, AnObjectGivenAsAStringListsItsFields) {
  ExpectHint(R"({"dataset": "data/x"})",
             "dataset is an object with the fields path, split, eval_split, "
             "channels");
  ExpectHint(R"({"optimizer": "sgd"})",
             "optimizer is an object with the fields type, learning_rate");
}

TEST(JobFileTest, AFileThatIsNotThereOrNotJsonIsNamed) {
  EXPECT_NE(ReadJobFile("/nonexistent/job.json")
                .status()
                .message()
                .find("cannot read job file /nonexistent/job.json"),
            std::string::npos);
  EXPECT_EQ(ParseJobSpecJson("{not json").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::cli
