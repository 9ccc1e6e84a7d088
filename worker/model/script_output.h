// What a model file's code prints (TorchScript's print, warnings.warn)
// goes to gradsync's log, escaped, never raw to the terminal: a model is
// code from a user, and its strings may hold escapes that retitle or clear
// an operator's terminal, or newlines that forge log lines.
//
// RouteModelOutput installs LibTorch's print handler and c10's warning
// handler so that every printed text and warning reaches `sink` as one
// line made safe by OneLine (foundation/text/terminal_text.h), prefixed
// "model: " or "model warning: ". With no sink, lines go to stderr as the
// worker's log lines ("gradsync-worker: model: ..."). Process-wide; call it
// before running a module (later calls replace the sink). Not thread-safe
// with itself; the handlers it installs are.
#pragma once

#include <functional>
#include <string>

namespace gradsync {

void RouteModelOutput(std::function<void(const std::string& line)> sink = {});

}  // namespace gradsync
