// Files built into the program (the dashboard's page, script and style
// sheet from coordinator/http/dashboard/), generated at build time by
// cmake/embed_files.cmake. Immutable; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace gradsync {

struct EmbeddedFile {
  const char* path;  // relative to the folder embedded ("index.html")
  const char* content;
};

const std::vector<EmbeddedFile>& EmbeddedFiles();

}  // namespace gradsync
