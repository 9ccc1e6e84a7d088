// ShmSegment (see shm_segment.h).
#include "worker/comm/shm/shm_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "foundation/store/rendezvous_keys.h"

namespace gradsync {

// The control block at the start of the segment. Lock-free atomics are
// address-free, so they work between processes mapping the same pages.
struct ShmSegment::Control {
  uint64_t nonce;
  int32_t size;
  // Bumped by a rank that completes a barrier or abandons the group; the
  // futex word sleepers wait on.
  alignas(64) std::atomic<uint32_t> wake;
  std::atomic<int32_t> sleepers;   // ranks in (or about to enter) FUTEX_WAIT
  std::atomic<int32_t> abandoned;  // rank + 1 of the first rank to give up
  struct alignas(64) Arrival {
    std::atomic<int64_t> barrier;  // the last barrier this rank entered
  };
  Arrival arrival[1];  // `size` of them
};

namespace {

static_assert(std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "shared-memory barriers need address-free atomics");

constexpr size_t kPage = 4096;
// A waiting rank spins this long before sleeping. Ranks doing the same work
// arrive within tens of microseconds of each other, and a rank woken from
// the futex arrives late at the next barrier by the wake-up latency (tens
// to hundreds of microseconds on a VM): with a spin shorter than that the
// ranks take turns sleeping at every barrier (1.5 instead of 15 GB/s here
// with 20 us). The spin yields the core every few microseconds, for a rank
// that shares it (7 instead of 1 GB/s with both ranks on one core).
constexpr absl::Duration kSpin = absl::Microseconds(200);
// Sleeps are this long at most, so exited peers are noticed this fast.
constexpr absl::Duration kPoll = absl::Milliseconds(50);

size_t ControlBytes(int size) {
  const size_t bytes = sizeof(ShmSegment::Control) +
                       (size - 1) * sizeof(ShmSegment::Control::Arrival);
  return (bytes + kPage - 1) / kPage * kPage;
}

std::string Errno(const std::string& what) {
  return absl::StrCat(what, ": ", std::strerror(errno));
}

// An open-file-description lock on byte `rank`: held while this rank's
// descriptor is open, whichever thread or process holds it.
bool LockByte(int fd, int rank, short type, int cmd, struct flock* out) {
  struct flock lock = {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = rank;
  lock.l_len = 1;
  const bool ok = fcntl(fd, cmd, &lock) == 0;
  if (out != nullptr) *out = lock;
  return ok;
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout) {
  const struct timespec ts = absl::ToTimespec(timeout);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected,
          &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX,
          nullptr, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ShmSegment::ShmSegment(int rank, int size, int fd, char* base, size_t total,
                       std::string name)
    : rank_(rank),
      size_(size),
      fd_(fd),
      base_(base),
      total_(total),
      name_(std::move(name)),
      control_(reinterpret_cast<Control*>(base)),
      data_(base + ControlBytes(size)),
      data_bytes_(total - ControlBytes(size)) {}

ShmSegment::~ShmSegment() {
  Unlink();
  munmap(base_, total_);
  close(fd_);
}

void ShmSegment::Unlink() {
  if (name_.empty()) return;
  shm_unlink(name_.c_str());
  name_.clear();
}

absl::StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Join(
    const ShmSegmentOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.store == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory: need 0 <= rank < size and a store (rank ",
                     o.rank, ", size ", o.size, ")"));
  }
  const size_t total = ControlBytes(o.size) + o.data_bytes;
  if (o.rank == 0) {
    // Publishes why not, so the other ranks need not wait for a name.
    auto refuse = [&](absl::Status why) -> absl::Status {
      (void)o.store->Set(rendezvous_keys::kShmSegment,
                         absl::StrCat("- ", why.message()));
      return why;
    };
    if (!o.enabled) {
      return refuse(
          absl::FailedPreconditionError("shared memory: disabled on rank 0"));
    }
    std::random_device random;
    const uint64_t id = (uint64_t{random()} << 32) | random();
    const uint64_t nonce = (uint64_t{random()} << 32) | random();
    const std::string name = absl::StrCat("/gradsync-", absl::Hex(id));
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      return refuse(absl::FailedPreconditionError(
          Errno(absl::StrCat("shared memory: cannot create ", name))));
    }
    // From here on the segment is ours to remove on failure.
    auto fail = [&](absl::Status why) -> absl::Status {
      close(fd);
      shm_unlink(name.c_str());
      return refuse(std::move(why));
    };
    if (const int err = posix_fallocate(fd, 0, total); err != 0) {
      errno = err;
      return fail(absl::ResourceExhaustedError(Errno(absl::StrCat(
          "shared memory: cannot reserve ", total, " bytes for ", name))));
    }
    void* base =
        mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      return fail(absl::ResourceExhaustedError(
          Errno(absl::StrCat("shared memory: cannot map ", name))));
    }
    // The pages are zero; construct the atomics in place.
    auto* control = new (base) Control{};
    control->nonce = nonce;
    control->size = o.size;
    for (int r = 1; r < o.size; ++r) {
      new (&control->arrival[r]) Control::Arrival{};
    }
    std::unique_ptr<ShmSegment> segment(
        new ShmSegment(0, o.size, fd, static_cast<char*>(base), total, name));
    if (!LockByte(fd, 0, F_WRLCK, F_OFD_SETLK, nullptr)) {
      return refuse(absl::FailedPreconditionError(Errno(absl::StrCat(
          "shared memory: cannot lock ", name))));  // segment unlinks
    }
    if (absl::Status s =
            o.store->Set(rendezvous_keys::kShmSegment,
                         absl::StrCat(name, " ", absl::Hex(nonce), " ", total));
        !s.ok()) {
      return s;
    }
    return segment;
  }

  absl::StatusOr<std::string> published =
      o.store->Get(rendezvous_keys::kShmSegment, o.timeout);
  if (!published.ok()) return published.status();
  if (absl::StartsWith(*published, "- ")) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank 0 shares no memory: ", published->substr(2)));
  }
  if (!o.enabled) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory: disabled on rank ", o.rank));
  }
  std::vector<std::string> fields = absl::StrSplit(*published, ' ');
  uint64_t nonce = 0, published_total = 0;
  if (fields.size() != 3 || !absl::SimpleHexAtoi(fields[1], &nonce) ||
      !absl::SimpleAtoi(fields[2], &published_total)) {
    return absl::InternalError(absl::StrCat(
        "shared memory: rank 0 published a malformed segment key '", *published,
        "'"));
  }
  const std::string& name = fields[0];
  if (published_total != total) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory: rank 0's segment has ", published_total,
        " bytes, this rank expects ", total, " (different options?)"));
  }
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return absl::NotFoundError(Errno(absl::StrCat(
        "shared memory: rank ", o.rank, " cannot open rank 0's ", name)));
  }
  struct stat st = {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != total) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory: ", name, " is not rank 0's segment (size ",
                     st.st_size, ")"));
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const absl::Status s = absl::ResourceExhaustedError(
        Errno(absl::StrCat("shared memory: cannot map ", name)));
    close(fd);
    return s;
  }
  std::unique_ptr<ShmSegment> segment(new ShmSegment(
      o.rank, o.size, fd, static_cast<char*>(base), total, std::string()));
  if (segment->control_->nonce != nonce || segment->control_->size != o.size) {
    // Another host's (or container's) segment of the same name.
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory: ", name, " here is not rank 0's segment"));
  }
  if (!LockByte(fd, o.rank, F_WRLCK, F_OFD_SETLK, nullptr)) {
    return absl::FailedPreconditionError(
        Errno(absl::StrCat("shared memory: cannot lock ", name)));
  }
  return segment;
}

bool ShmSegment::AllArrived(int64_t b) const {
  for (int r = 0; r < size_; ++r) {
    if (control_->arrival[r].barrier.load() < b) return false;
  }
  return true;
}

std::string ShmSegment::Absent(int64_t b) const {
  std::vector<int> absent;
  for (int r = 0; r < size_; ++r) {
    if (control_->arrival[r].barrier.load() < b) absent.push_back(r);
  }
  return absl::StrJoin(absent, ", ");
}

std::string ShmSegment::Exited(int64_t b) const {
  std::vector<int> exited;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || control_->arrival[r].barrier.load() >= b) continue;
    struct flock probe = {};
    if (LockByte(fd_, r, F_WRLCK, F_OFD_GETLK, &probe) &&
        probe.l_type == F_UNLCK) {
      exited.push_back(r);  // nobody holds rank r's lock any more
    }
  }
  return absl::StrJoin(exited, ", ");
}

absl::Status ShmSegment::Fail(absl::Status s) {
  failed_ = s;
  Abandon();
  return s;
}

absl::Status ShmSegment::Barrier(absl::Time deadline) {
  if (!failed_.ok()) return failed_;
  const int64_t b = ++barrier_;
  control_->arrival[rank_].barrier.store(b);
  auto gave_up = [&]() -> absl::Status {
    const int32_t who = control_->abandoned.load();
    if (who == 0) return absl::OkStatus();
    failed_ = absl::UnavailableError(absl::StrCat(
        "shared memory: rank ", who - 1, " gave up the collective"));
    return failed_;
  };
  if (AllArrived(b)) {
    // Last in: wake whoever went to sleep.
    control_->wake.fetch_add(1);
    if (control_->sleepers.load() > 0) FutexWakeAll(&control_->wake);
    return absl::OkStatus();
  }
  const absl::Time spin_end = absl::Now() + kSpin;
  for (int i = 1;; ++i) {
    if (AllArrived(b)) return absl::OkStatus();
    if (i % 64 == 0) {
      if (absl::Status s = gave_up(); !s.ok()) return s;
      if (absl::Now() >= spin_end) break;
      // Lets a rank that shares this core run (returns at once otherwise).
      sched_yield();
    }
    CpuRelax();
  }
  for (;;) {
    // sleepers before the check: a rank that arrives after the check sees
    // us and wakes the futex (or has bumped `wake` before we sleep on it).
    control_->sleepers.fetch_add(1);
    const uint32_t seen = control_->wake.load();
    const bool done = AllArrived(b);
    const absl::Time now = absl::Now();
    if (!done && control_->abandoned.load() == 0 && now < deadline) {
      FutexWait(&control_->wake, seen, std::min(kPoll, deadline - now));
    }
    control_->sleepers.fetch_sub(1);
    if (done || AllArrived(b)) return absl::OkStatus();
    if (absl::Status s = gave_up(); !s.ok()) return s;
    if (const std::string exited = Exited(b); !exited.empty()) {
      return Fail(absl::UnavailableError(
          absl::StrCat("shared memory: rank(s) ", exited, " exited")));
    }
    if (absl::Now() >= deadline) {
      return Fail(absl::DeadlineExceededError(absl::StrCat(
          "shared memory: timed out waiting for rank(s) ", Absent(b))));
    }
  }
}

void ShmSegment::Abandon() {
  int32_t none = 0;
  control_->abandoned.compare_exchange_strong(none, rank_ + 1);
  control_->wake.fetch_add(1);
  FutexWakeAll(&control_->wake);
}

}  // namespace gradsync
