#include "coordinator/client/channel.h"

#include <grpcpp/support/client_interceptor.h>

#include <utility>
#include <vector>

namespace gradsync {
namespace {

class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;  // owned by the factory, which the channel keeps
};

class BearerInterceptorFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(const std::string& token)
      : header_("Bearer " + token) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeCoordinatorChannel(
    const std::string& address, const std::string& token, const ClientTls& tls,
    int max_receive_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_receive_message_bytes);
  if (tls.enabled() && !tls.server_name.empty()) {
    args.SetSslTargetNameOverride(tls.server_name);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  if (!token.empty()) {
    interceptors.push_back(std::make_unique<BearerInterceptorFactory>(token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, MakeChannelCredentials(tls), args, std::move(interceptors));
}

}  // namespace gradsync
