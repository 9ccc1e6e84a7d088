#include "tests/fakes/model_files.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gradsync::testing {

namespace fs = std::filesystem;

const ModelFiles& ModelFiles::Get() {
  static const ModelFiles* files = new ModelFiles();
  return *files;
}

ModelFiles::ModelFiles()
    : dir_(fs::temp_directory_path() /
           ("gradsync_model_files_" + std::to_string(::getpid()))) {
  fs::create_directories(dir_);
  const std::string command = std::string(GRADSYNC_SYSTEM_PYTHON) + " '" +
                              GRADSYNC_MAKE_MODELS + "' '" + dir_.string() +
                              "' 2>'" + (dir_ / "make.log").string() + "'";
  made_ = std::system(command.c_str()) == 0;
  log_ = Read("make.log");
  static const std::string* remove = new std::string(dir_.string());
  std::atexit([] { fs::remove_all(*remove); });
}

std::string ModelFiles::Read(const std::string& name) const {
  std::ifstream in(dir_ / name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gradsync::testing
