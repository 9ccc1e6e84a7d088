// The gradsync command line: global flags before or after the subcommand,
// nested subcommands, --help with examples, bad flags, and the bash
// completion script run by a real bash.
#include "coordinator/cli/command_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/control/job_spec.h"

namespace gradsync::cli {
namespace {

struct Parsed {
  std::optional<int> exit;
  std::string out, err;
};

Parsed Parse(CommandLine& line, std::vector<const char*> args) {
  args.insert(args.begin(), "gradsync");
  std::ostringstream out, err;
  Parsed p;
  p.exit = line.Parse(static_cast<int>(args.size()), args.data(), out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(CommandLineTest, GlobalFlagsGoAfterTheSubcommand) {
  CommandLine line;
  Parsed p = Parse(
      line, {"status", "job-1", "--json", "-c", "host:1", "--timeout", "4"});
  ASSERT_FALSE(p.exit.has_value()) << p.err;
  EXPECT_EQ(line.command(), "status");
  EXPECT_EQ(line.job_id, "job-1");
  EXPECT_TRUE(line.options.json);
  EXPECT_EQ(line.coordinator, "host:1");
  EXPECT_EQ(line.options.timeout_s, 4);
}

TEST(CommandLineTest, GlobalFlagsStillGoBeforeIt) {
  CommandLine line;
  Parsed p = Parse(line, {"-c", "host:2", "--json", "list", "--limit", "3"});
  ASSERT_FALSE(p.exit.has_value()) << p.err;
  EXPECT_EQ(line.command(), "list");
  EXPECT_EQ(line.coordinator, "host:2");
  EXPECT_TRUE(line.options.json);
  EXPECT_EQ(line.limit, 3);
}

TEST(CommandLineTest, NestedSubcommandTakesGlobalFlagsToo) {
  CommandLine line;
  Parsed p = Parse(line, {"model", "pull", "job-2", "-o", "m.pt", "--step", "7",
                          "--coordinator", "host:3"});
  ASSERT_FALSE(p.exit.has_value()) << p.err;
  EXPECT_EQ(line.command(), "model pull");
  EXPECT_EQ(line.job_id, "job-2");
  EXPECT_EQ(line.model_out, "m.pt");
  EXPECT_TRUE(line.model_step_given);
  EXPECT_EQ(line.model_step, 7);
  EXPECT_EQ(line.coordinator, "host:3");

  CommandLine latest;
  ASSERT_FALSE(
      Parse(latest, {"model", "pull", "job-2", "-o", "m.pt"}).exit.has_value());
  EXPECT_FALSE(latest.model_step_given);
}

TEST(CommandLineTest, SubmitFlagsAndWatch) {
  CommandLine line;
  Parsed p = Parse(line, {"submit", "--dataset", "/d", "--epochs", "2", "-n",
                          "2", "-w", "--json"});
  ASSERT_FALSE(p.exit.has_value()) << p.err;
  EXPECT_EQ(line.command(), "submit");
  EXPECT_EQ(line.job.dataset, "/d");
  EXPECT_TRUE(line.watch_after_submit);
  EXPECT_TRUE(line.options.json);
}

TEST(CommandLineTest, BadInputIsRefusedNamingIt) {
  CommandLine unknown_flag;
  Parsed p = Parse(unknown_flag, {"status", "job-1", "--jsn"});
  ASSERT_TRUE(p.exit.has_value());
  EXPECT_NE(*p.exit, 0);
  EXPECT_NE(p.err.find("--jsn"), std::string::npos) << p.err;

  CommandLine no_job;
  p = Parse(no_job, {"status"});
  ASSERT_TRUE(p.exit.has_value());
  EXPECT_NE(*p.exit, 0);
  EXPECT_NE(p.err.find("job"), std::string::npos) << p.err;

  CommandLine typo;
  p = Parse(typo, {"lst"});
  ASSERT_TRUE(p.exit.has_value());
  EXPECT_NE(*p.exit, 0);
  EXPECT_NE(p.err.find("unknown command 'lst'"), std::string::npos) << p.err;

  CommandLine fish;
  p = Parse(fish, {"completion", "fish"});
  ASSERT_TRUE(p.exit.has_value());
  EXPECT_NE(*p.exit, 0);
  EXPECT_NE(p.err.find("fish"), std::string::npos) << p.err;
}

TEST(CommandLineTest, HelpShowsExamplesAndEveryCommand) {
  CommandLine line;
  Parsed p = Parse(line, {"--help"});
  ASSERT_TRUE(p.exit.has_value());
  EXPECT_EQ(*p.exit, 0);
  EXPECT_NE(p.out.find("Examples:"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("gradsync status job-000001 --json"), std::string::npos)
      << p.out;
  // The data tools, which gradsync-data runs, are listed too.
  EXPECT_NE(p.out.find("\n  data "), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("\n  loader-bench "), std::string::npos) << p.out;
  // A subcommand's help is its own: not the top level's examples.
  CommandLine model;
  p = Parse(model, {"model", "--help"});
  EXPECT_EQ(p.out.find("gradsync status job-000001 --json"), std::string::npos)
      << p.out;
  CommandLine submit;
  p = Parse(submit, {"submit", "--help"});
  EXPECT_NE(p.out.find("JOB=$(gradsync submit -q"), std::string::npos) << p.out;
}

// submit --help marks what a job needs and shows the defaults the
// coordinator applies (ApplyJobSpecDefaults), not copies of them.
TEST(CommandLineTest, SubmitHelpMarksRequiredFlagsAndShowsTheDefaults) {
  CommandLine line;
  Parsed p = Parse(line, {"submit", "--help"});
  v1::JobSpec d;
  d.mutable_dataset()->set_path("x");
  ApplyJobSpecDefaults(&d);
  for (const std::string& text :
       {std::string("(required)"), std::string("or --max-workers"),
        absl::StrCat("epochs (default ", d.epochs(), ")"),
        absl::StrCat("loader threads (default ", d.loader_threads(), ")"),
        absl::StrCat("(default ", d.max_restarts(), "; 0 = fail at once)"),
        absl::StrCat("deadline of each collective (default ",
                     d.collective_timeout_ms(), ")"),
        std::string("fashion_cnn|lenet|resnet18|mlp (required, unless "
                    "--model-file)"),
        absl::StrCat("(default ", d.loss(), ")")}) {
    EXPECT_NE(p.out.find(text), std::string::npos) << text << "\n" << p.out;
  }
}

// What bash completes after `words` (the last one being typed), with the
// generated script loaded.
std::string Complete(const std::string& script_path, const std::string& words,
                     int cword) {
  const std::string command = absl::StrCat(
      "bash -c 'source ", script_path, "; COMP_WORDS=(", words,
      "); COMP_CWORD=", cword, "; _gradsync; echo \"${COMPREPLY[*]}\"'");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(CommandLineTest, BashCompletesSubcommandsAndTheirFlags) {
  CommandLine line;
  ASSERT_FALSE(Parse(line, {"completion", "bash"}).exit.has_value());
  EXPECT_EQ(line.command(), "completion");
  const std::string path =
      absl::StrCat(testing::TempDir(), "/gradsync_completion_", getpid());
  std::ofstream(path) << line.BashCompletion();
  EXPECT_EQ(Complete(path, "gradsync sta", 1), "status");
  EXPECT_EQ(Complete(path, "gradsync w", 1), "watch workers");
  EXPECT_EQ(Complete(path, "gradsync model p", 2), "pull");
  EXPECT_EQ(Complete(path, "gradsync submit --bat", 2), "--batch-size");
  EXPECT_EQ(Complete(path, "gradsync model pull job-1 --st", 4),
            "--step --state-dict");
  // Global flags after a subcommand, as the parser takes them.
  EXPECT_EQ(Complete(path, "gradsync status job-1 --js", 3), "--json");
  // The values of choice flags.
  EXPECT_EQ(Complete(path, "gradsync submit --model res", 3), "resnet18");
  EXPECT_EQ(Complete(path, "gradsync submit --optimizer s", 3), "sgd");
  EXPECT_EQ(Complete(path, "gradsync d", 1), "delete data");
  std::remove(path.c_str());
}

// Job ids come from the coordinator: the script runs `gradsync list -q`
// (here a stand-in program that prints two ids).
TEST(CommandLineTest, CompletionOffersTheCoordinatorsJobIds) {
  CommandLine line;
  ASSERT_FALSE(Parse(line, {"completion", "bash"}).exit.has_value());
  const std::string dir =
      absl::StrCat(testing::TempDir(), "/gradsync_ids_", getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/completion.bash";
  std::ofstream(path) << line.BashCompletion();
  const std::string fake = dir + "/gradsync";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "[ \"$3 $4\" = \"list -q\" ] && "
                         "printf 'job-000001\\njob-000002\\n'\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  EXPECT_EQ(Complete(path, fake + " watch job-", 2), "job-000001 job-000002");
  EXPECT_EQ(Complete(path, fake + " model pull job-000002", 3), "job-000002");
  // Not for a command without a job, nor for a flag.
  EXPECT_EQ(Complete(path, fake + " workers job-", 2), "");
  EXPECT_EQ(Complete(path, fake + " logs job-1 --ra", 3), "--rank");
  std::filesystem::remove_all(dir);
}

TEST(CommandLineTest, ZshCompletionLoadsTheBashOneThroughBashcompinit) {
  CommandLine line;
  ASSERT_FALSE(Parse(line, {"completion", "zsh"}).exit.has_value());
  const std::string zsh = line.ZshCompletion();
  EXPECT_NE(zsh.find("autoload -U +X bashcompinit && bashcompinit\n"),
            std::string::npos);
  EXPECT_NE(zsh.find("complete -F _gradsync gradsync"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::cli
