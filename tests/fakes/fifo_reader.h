// ReadWithoutWaiting: calls `read`, which opens the FIFO `fifo` for reading
// (a hostile "file" a loader is handed), on another thread. A reader that
// waits on the FIFO is the hang under test: after 10 s the FIFO is opened
// for writing so the reader wakes and the test can end, and the test fails.
// Header-only; call from the test's thread.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

namespace gradsync {

template <typename F>
auto ReadWithoutWaiting(const std::string& fifo, F read) -> decltype(read()) {
  auto result = std::async(std::launch::async, read);
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (writer >= 0) ::close(writer);
    ADD_FAILURE() << "reading the FIFO " << fifo << " waited for a writer";
  }
  return result.get();
}

}  // namespace gradsync
