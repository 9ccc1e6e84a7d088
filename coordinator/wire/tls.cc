#include "coordinator/wire/tls.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(what, ": cannot read ", path));
  }
  std::stringstream contents;
  contents << in.rdbuf();
  if (!absl::StrContains(contents.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path, " is not a PEM file"));
  }
  return contents.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (files.cert_file.empty()) {
    if (!files.key_file.empty() || !files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-key and --tls-client-ca need --tls-cert");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  }
  absl::StatusOr<std::string> cert = ReadPemFile(files.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPemFile(files.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadPemFile(files.client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request =
        GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<ClientTls> LoadClientTls(const std::string& ca_file,
                                        const std::string& cert_file,
                                        const std::string& key_file,
                                        const std::string& server_name) {
  ClientTls tls;
  if (ca_file.empty()) {
    if (!cert_file.empty() || !key_file.empty() || !server_name.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert, --tls-key and --tls-server-name need --tls-ca (the CA "
          "that signed the coordinator's certificate)");
    }
    return tls;
  }
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both --tls-cert and --tls-key");
  }
  absl::StatusOr<std::string> ca = ReadPemFile(ca_file, "--tls-ca");
  if (!ca.ok()) return ca.status();
  tls.root_pem = *ca;
  if (!cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile(cert_file, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile(key_file, "--tls-key");
    if (!key.ok()) return key.status();
    tls.cert_pem = *cert;
    tls.key_pem = *key;
  }
  tls.server_name = server_name;
  return tls;
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const ClientTls& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.root_pem;
  options.pem_private_key = tls.key_pem;
  options.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(options);
}

}  // namespace gradsync
