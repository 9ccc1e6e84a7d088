#include "coordinator/client/tls_flags.h"

namespace gradsync {

ClientTlsFlags::ClientTlsFlags(CLI::App& app) {
  app.add_option("--tls-ca", ca_,
                 "talk TLS: PEM file of the CA that signed the coordinator's "
                 "certificate")
      ->envname("GRADSYNC_TLS_CA");
  app.add_option("--tls-cert", cert_,
                 "client certificate (PEM) for mutual TLS, with --tls-key")
      ->envname("GRADSYNC_TLS_CLIENT_CERT");
  app.add_option("--tls-key", key_, "private key (PEM) of --tls-cert")
      ->envname("GRADSYNC_TLS_CLIENT_KEY");
  app.add_option("--tls-server-name", server_name_,
                 "name in the coordinator's certificate, when it differs "
                 "from the host in --coordinator")
      ->envname("GRADSYNC_TLS_SERVER_NAME");
}

absl::StatusOr<ClientTls> ClientTlsFlags::Load() const {
  return LoadClientTls(ca_, cert_, key_, server_name_);
}

}  // namespace gradsync
