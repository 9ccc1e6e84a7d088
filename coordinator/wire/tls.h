// TLS for the coordinator's gRPC port: server credentials from certificate
// and key files, optionally verifying client certificates against a CA
// (mutual TLS for workers), and the matching client credentials.
//
// Client certificates are requested and verified when presented but not
// required by the handshake, so users may connect with the server's CA
// alone; Authenticator (coordinator/server/auth.h) can then require a verified
// certificate on worker calls. Files are read once, when credentials are made.
// Thread safety: free functions over immutable values.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

struct ServerTlsFiles {
  std::string cert_file;       // PEM certificate chain; empty = no TLS
  std::string key_file;        // PEM private key of cert_file
  std::string client_ca_file;  // PEM roots for client certificates; empty =
                               // client certificates are not requested
};

// Insecure credentials when cert_file is empty. Errors name the file:
// NOT_FOUND (unreadable), INVALID_ARGUMENT (not PEM, key without
// certificate, client CA without certificate).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// What a client needs to reach a TLS coordinator, already read from files.
struct ClientTls {
  std::string root_pem;     // CA that signed the coordinator's certificate;
                            // empty = plaintext (no TLS)
  std::string cert_pem;     // client certificate (mutual TLS), or empty
  std::string key_pem;      // its private key
  std::string server_name;  // name expected in the server certificate;
                            // empty = the host part of the address
  bool enabled() const { return !root_pem.empty(); }
};

// Reads the files (empty names are skipped). INVALID_ARGUMENT when a client
// certificate comes without its key or TLS options come without a CA.
absl::StatusOr<ClientTls> LoadClientTls(const std::string& ca_file,
                                        const std::string& cert_file,
                                        const std::string& key_file,
                                        const std::string& server_name);

// Insecure credentials when !tls.enabled().
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const ClientTls& tls);

// A PEM file's contents; `what` names the option in messages.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        const std::string& what);

}  // namespace gradsync
