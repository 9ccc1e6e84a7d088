// gradsync: the command-line client of the coordinator's JobService, and
// the entry point of the data tools (`gradsync data`, `gradsync loader-bench`).
#include <limits.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/cli/command_line.h"
#include "coordinator/cli/commands.h"

namespace {

// `gradsync data ...` and `gradsync loader-bench ...` run the data tools
// program installed beside this one (they link OpenCV and LibTorch, which
// the control-plane CLI does not need).
int RunDataTool(int argc, char** argv) {
  std::string self(PATH_MAX, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string tool = "gradsync-data";
  if (n > 0) {
    self.resize(n);
    const std::string beside = self.substr(0, self.rfind('/') + 1) + tool;
    if (access(beside.c_str(), X_OK) == 0) tool = beside;
  }
  std::vector<char*> args = {tool.data()};
  // "data fetch ..." -> "fetch ..."; "loader-bench ..." stays.
  for (int i = std::string(argv[1]) == "data" ? 2 : 1; i < argc; ++i) {
    args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::cerr << "gradsync: cannot run " << tool << ": " << std::strerror(errno)
            << "\n";
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "data" ||
                   std::string(argv[1]) == "loader-bench")) {
    return RunDataTool(argc, argv);
  }
  gradsync::cli::CommandLine line;
  if (std::optional<int> exit = line.Parse(argc, argv, std::cout, std::cerr)) {
    return *exit;
  }
  const std::string command = line.command();
  if (command == "completion") {
    std::cout << (line.shell == "zsh" ? line.ZshCompletion()
                                      : line.BashCompletion());
    return 0;
  }
  gradsync::cli::CliOptions options = line.options;
  options.live = isatty(STDOUT_FILENO) != 0 && !options.json;
  if (options.live) {
    // One column short of the width: a full-width line makes some terminals
    // wrap, and a wrapped line would outlive the redraw.
    struct winsize size {};
    options.width =
        ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1
            ? size.ws_col - 1
            : 79;
  }

  absl::StatusOr<std::string> user_token = line.token().Load();
  if (!user_token.ok()) {
    std::cerr << "gradsync: " << user_token.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<gradsync::ClientTls> client_tls = line.tls().Load();
  if (!client_tls.ok()) {
    std::cerr << "gradsync: " << client_tls.status().message() << "\n";
    return 2;
  }
  gradsync::cli::Cli cli(
      gradsync::cli::MakeJobStub(line.coordinator, *user_token, *client_tls),
      options, std::cout, std::cerr);
  const std::string& job = line.job_id;
  if (command == "submit") {
    return cli.Submit(line.job, line.watch_after_submit, line.quiet_submit);
  }
  if (command == "status") return cli.Status(job);
  if (command == "list") return cli.List(line.limit, line.quiet_list);
  if (command == "watch") return cli.Watch(job);
  if (command == "cancel") return cli.Cancel(job, line.reason);
  if (command == "delete") return cli.Delete(job);
  if (command == "workers") return cli.Workers(line.workers_wait);
  if (command == "model list") return cli.ModelList(job);
  if (command == "model files") return cli.ModelFiles();
  if (command == "model files delete") {
    return cli.ModelFileDelete(line.model_file_sha256);
  }
  if (command == "plot") return cli.Plot(job, line.plot_out);
  if (command == "logs") return cli.Logs(job, line.log_rank, line.follow);
  if (command == "model pull" && line.model_format == "torchscript") {
    return cli.ModelPullTorchScript(job, line.model_out);
  }
  if (command == "model pull") {
    return cli.ModelPull(
        job, line.model_step, line.model_step_given, line.model_out,
        line.model_state_dict || line.model_format == "state-dict");
  }
  std::cerr << "gradsync: unknown command '" << command << "'\n";
  return 2;
}
