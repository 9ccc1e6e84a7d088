// How gradsync's long-running programs (coordinator, worker) take signals:
// SIGPIPE is ignored (a peer that went away must be an error on its socket,
// not a silent death: gloo writes without MSG_NOSIGNAL), and SIGINT and
// SIGTERM are blocked in every thread (threads started later inherit the
// mask) so that one thread takes them synchronously with WaitForStopSignal.
// Call BlockStopSignals from main before starting any thread.
#pragma once

namespace gradsync {

void BlockStopSignals();
// Waits for SIGINT or SIGTERM (after BlockStopSignals); returns its number.
int WaitForStopSignal();

}  // namespace gradsync
