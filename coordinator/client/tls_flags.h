// A client's TLS options on the command line: --tls-ca, --tls-cert,
// --tls-key and --tls-server-name, also read from GRADSYNC_TLS_CA,
// GRADSYNC_TLS_CLIENT_CERT, GRADSYNC_TLS_CLIENT_KEY and
// GRADSYNC_TLS_SERVER_NAME, loaded with LoadClientTls (coordinator/wire/tls.h)
// after parsing. The CLI and the worker declare them this way. Not copyable or
// movable: the app keeps pointers into it. Thread-compatible.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/wire/tls.h"

namespace gradsync {

class ClientTlsFlags {
 public:
  explicit ClientTlsFlags(CLI::App& app);
  ClientTlsFlags(const ClientTlsFlags&) = delete;
  ClientTlsFlags& operator=(const ClientTlsFlags&) = delete;

  // The files' contents after parsing (TLS off when --tls-ca is not given).
  absl::StatusOr<ClientTls> Load() const;

 private:
  std::string ca_, cert_, key_, server_name_;
};

}  // namespace gradsync
