// Standard streams for the processes backends start (spec §6.9 "Loading"; DESIGN "Sandbox
// rules": trusted native backends run in the server's process). Node opens fds 0-2 close-on-exec
// (and a piped stdout non-blocking), so a backend that forks and execs a helper without resetting
// them — Triton's python backend starting its stub — gives it no stdin/stdout/stderr: print() is
// lost and Python's sys.stderr is None. Triton's server leaves 0-2 inheritable; so does Warden,
// for the children of the processes that host native backends, with a fork handler.
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "objects.h"

namespace {

// Runs in the child right after fork(), before the backend's exec: only async-signal-safe calls.
void InheritableStdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    const int fd_flags = fcntl(fd, F_GETFD);
    if (fd_flags < 0) continue;  // closed: nothing to pass on
    const int fl = fcntl(fd, F_GETFL);
    struct stat st;
    if (fl >= 0 && (fl & O_NONBLOCK) != 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
      // A pipe the parent set non-blocking (the flag lives on the shared open file description):
      // reopen it through /proc so the child gets a blocking description of the same pipe and a
      // burst of output is not an EAGAIN in the child. dup2 leaves the new fd inheritable.
      char path[] = "/proc/self/fd/0";
      path[sizeof(path) - 2] = char('0' + fd);
      const int fresh = open(path, (fl & O_ACCMODE) | O_CLOEXEC);
      if (fresh >= 0) {
        const bool moved = dup2(fresh, fd) == fd;
        close(fresh);
        if (moved) continue;
      }
    }
    if (fd_flags & FD_CLOEXEC) fcntl(fd, F_SETFD, fd_flags & ~FD_CLOEXEC);
  }
}

}  // namespace

namespace warden {

void InstallStdioForChildren() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &InheritableStdio); });
}

}  // namespace warden
