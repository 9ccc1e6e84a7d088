// TLS over a real server, with certificates this test makes with openssl: a
// CA, server certificates, a worker client certificate and one from a
// rogue CA. Plaintext and wrongly-trusting clients cannot talk to a TLS
// coordinator; with --require-worker-cert workers need a verified client
// certificate while users do not; bad files are named.
#include "coordinator/wire/tls.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "coordinator/client/channel.h"
#include "coordinator/server/server.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

// tests/tools/make_test_certs.sh: ca, server (localhost, 127.0.0.1), named
// (coordinator.test only), worker (client), rogue-ca and rogue (client).
void MakeCertificates(const std::string& dir) {
  const std::string command =
      std::string("sh '") + GRADSYNC_TEST_CERTS_SCRIPT + "' '" + dir + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << "openssl failed in " << dir;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(UniqueTempDir("tls"));
    MakeCertificates(*dir_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string File(const std::string& name) {
    return *dir_ + "/" + name;
  }

  // A TLS server with `cert`; client certificates verified against the test
  // CA when `mutual`, and required for workers when `worker_cert`.
  void Start(const std::string& cert, bool mutual, bool worker_cert) {
    ServerOptions o;
    o.address = "127.0.0.1:0";
    o.tls.cert_file = File(cert + ".pem");
    o.tls.key_file = File(cert + ".key");
    if (mutual) o.tls.client_ca_file = File("ca.pem");
    o.auth.worker_cert = worker_cert;
    auto server = CoordinatorServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  // TLS trusting `ca` (empty: plaintext), presenting `client` if set.
  ClientTls Client(const std::string& ca, const std::string& client = "",
                   const std::string& server_name = "") {
    absl::StatusOr<ClientTls> tls =
        LoadClientTls(ca.empty() ? "" : File(ca + ".pem"),
                      client.empty() ? "" : File(client + ".pem"),
                      client.empty() ? "" : File(client + ".key"), server_name);
    EXPECT_TRUE(tls.ok()) << tls.status();
    return tls.ok() ? *tls : ClientTls();
  }

  grpc::Status ListJobs(const ClientTls& tls) {
    auto stub =
        v1::JobService::NewStub(MakeCoordinatorChannel(address_, "", tls));
    v1::ListJobsResponse response;
    return stub->ListJobs(Ctx(5).get(), v1::ListJobsRequest(), &response);
  }

  grpc::Status Register(const ClientTls& tls) {
    auto stub =
        v1::WorkerService::NewStub(MakeCoordinatorChannel(address_, "", tls));
    v1::RegisterWorkerRequest request;
    request.set_host("host-a");
    v1::RegisterWorkerResponse response;
    return stub->RegisterWorker(Ctx(5).get(), request, &response);
  }

  static std::string* dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
};

std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, OnlyClientsTrustingTheCaTalkToATlsCoordinator) {
  Start("server", /*mutual=*/false, /*worker_cert=*/false);
  grpc::Status s = ListJobs(Client("ca"));
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ListJobs(Client("")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ListJobs(Client("rogue-ca")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, ServerNameOverrideMatchesTheCertificate) {
  // named.pem is only valid for coordinator.test, not for 127.0.0.1.
  Start("named", false, false);
  EXPECT_EQ(ListJobs(Client("ca")).error_code(), grpc::StatusCode::UNAVAILABLE);
  grpc::Status s = ListJobs(Client("ca", "", "coordinator.test"));
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(TlsTest, WorkersNeedAVerifiedClientCertificateUsersDoNot) {
  Start("server", /*mutual=*/true, /*worker_cert=*/true);
  grpc::Status s = ListJobs(Client("ca"));
  EXPECT_TRUE(s.ok()) << "users need no certificate: " << s.error_message();

  s = Register(Client("ca"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("missing client certificate"),
            std::string::npos)
      << s.error_message();

  s = Register(Client("ca", "worker"));
  EXPECT_TRUE(s.ok()) << s.error_message();

  // A certificate from another CA fails the handshake.
  EXPECT_EQ(Register(Client("ca", "rogue")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, BadTlsFilesAreNamed) {
  ServerTlsFiles files;
  files.cert_file = File("missing.pem");
  files.key_file = File("server.key");
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds =
      MakeServerCredentials(files);
  EXPECT_EQ(creds.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(creds.status().message().find("missing.pem"), std::string::npos);

  files.cert_file = File("server.ext");  // exists, not PEM
  creds = MakeServerCredentials(files);
  EXPECT_EQ(creds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(creds.status().message().find("not a PEM file"), std::string::npos);

  files = ServerTlsFiles();
  files.key_file = File("server.key");
  EXPECT_EQ(MakeServerCredentials(files).status().code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(
      LoadClientTls(File("ca.pem"), File("worker.pem"), "", "").status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadClientTls("", File("worker.pem"), File("worker.key"), "")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.auth.worker_cert = true;  // without a client CA
  auto server = CoordinatorServer::Start(o);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::testing
