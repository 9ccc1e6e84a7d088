// The JSON form of the coordinator's messages, as every JSON reader of
// them gets it (the CLI's --json, the monitoring port's /api/): proto3's
// JSON mapping on one line, fields by their proto names, default values
// included. Thread-safe (a pure function).
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace gradsync {

std::string ToJson(const google::protobuf::Message& message);

}  // namespace gradsync
