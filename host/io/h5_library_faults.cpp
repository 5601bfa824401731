#include "host/io/h5_library_faults.hpp"

#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define NHOLO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NHOLO_ASAN 1
#endif
#endif

namespace nholo::h5 {
namespace {

// What a handler or the watchdog may read without taking a lock: fixed
// buffers, each written before the flag that publishes it.
constexpr std::size_t kPathBytes = 1024;
char g_file_read[kPathBytes];     // the last file opened for reading
char g_watched_file[kPathBytes];  // the watched call's file
char g_temporary[kPathBytes];     // removed before exit 2
std::atomic<const char*> g_watched_what{nullptr};
std::atomic<std::int64_t> g_watched_since_ms{0};  // 0: no watched call
// install_library_fault_handlers was called (a library user's process, the
// Python module's, is not nholo's to end)
std::atomic<bool> g_armed{false};

void copy_text(char* to, const std::string& from) {
  const std::size_t n = std::min(from.size(), kPathBytes - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// async-signal-safe output
void say(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The end of a command the library failed: the message, the temporary
// removed, exit 2 (no destructor or atexit handler runs: the library's
// state cannot be trusted).
[[noreturn]] void end_command(const char* what_happened) {
  const char* file =
      g_watched_since_ms.load() != 0 && g_watched_file[0] ? g_watched_file : g_file_read;
  say("nholo: error: ");
  say(what_happened);
  say(" while reading '");
  say(file[0] ? file : "(no file open)");
  say("': its metadata is damaged in a way the HDF5 library (1.10) does not detect; the file "
      "cannot be read (docs/usage.md, \"Memory of each command\")\n");
  if (g_temporary[0]) ::unlink(g_temporary);
  ::_exit(2);
}

// ---- crashes: is the innermost frame outside the C library libhdf5's?

struct TextRange {
  std::uintptr_t begin = 0, end = 0;
};
constexpr int kRanges = 8;
TextRange g_hdf5[kRanges], g_libc[kRanges];

bool in(const TextRange* ranges, std::uintptr_t a) {
  for (int i = 0; i < kRanges; ++i)
    if (a >= ranges[i].begin && a < ranges[i].end) return true;
  return false;
}

[[maybe_unused]] int find_text_ranges(dl_phdr_info* info, std::size_t, void*) {
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  TextRange* into = std::strstr(name, "libhdf5")   ? g_hdf5
                    : std::strstr(name, "libc.so") ? g_libc
                                                   : nullptr;
  if (!into) return 0;
  int k = 0;
  while (k < kRanges && into[k].end != 0) ++k;
  for (int i = 0; i < info->dlpi_phnum && k < kRanges; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || !(p.p_flags & PF_X)) continue;
    into[k].begin = info->dlpi_addr + p.p_vaddr;
    into[k].end = into[k].begin + p.p_memsz;
    ++k;
  }
  return 0;
}

// The frames of the interrupted code follow the handler's own and the
// kernel's return trampoline (the first frame in the C library); the C
// library's abort path, copies and frees are skipped.
bool crashed_in_hdf5() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  bool interrupted = false;
  for (int i = 0; i < n; ++i) {
    const auto a = reinterpret_cast<std::uintptr_t>(frames[i]);
    if (!interrupted) {
      interrupted = in(g_libc, a);
      continue;
    }
    if (in(g_libc, a)) continue;
    return in(g_hdf5, a);
  }
  return false;
}

[[maybe_unused]] void on_crash(int sig) {  // (unused under AddressSanitizer)
  if (crashed_in_hdf5())
    end_command(sig == SIGSEGV  ? "the HDF5 library crashed (SIGSEGV)"
                : sig == SIGBUS ? "the HDF5 library crashed (SIGBUS)"
                                : "the HDF5 library aborted (SIGABRT)");
  // not the library's: the signal's default action (a core dump), at once
  // for SIGSEGV and SIGBUS (the instruction runs again), by abort()'s second
  // raise for SIGABRT
  ::signal(sig, SIG_DFL);
  if (sig == SIGABRT) ::raise(sig);
}

// ---- hangs: a watchdog thread, started with the first watched call

void watchdog() {
  const auto limit_ms = static_cast<std::int64_t>(library_hang_seconds() * 1000.0);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(250, limit_ms)));
    const std::int64_t since = g_watched_since_ms.load();
    if (since != 0 && now_ms() - since > limit_ms) {
      const char* what = g_watched_what.load();
      char text[256];  // (a thread, not a signal handler: snprintf is fine)
      std::snprintf(text, sizeof text,
                    "the HDF5 library hung (%s: one call, not returned after %g s, "
                    "NHOLO_HDF5_HANG_SECONDS)",
                    what ? what : "?", library_hang_seconds());
      end_command(text);
    }
  }
}

void start_watchdog() {
  static std::once_flag once;
  std::call_once(once, [] { std::thread(watchdog).detach(); });
}

void begin_watch(const char* what) {
  g_watched_what.store(what);
  g_watched_since_ms.store(now_ms());
  start_watchdog();
}

}  // namespace

void install_library_fault_handlers() {
  g_armed.store(true);
#ifndef NHOLO_ASAN
  static std::once_flag once;
  std::call_once(once, [] {
    dl_iterate_phdr(find_text_ranges, nullptr);
    void* warm[1];
    backtrace(warm, 1);  // loads the unwinder now, not in a handler
    struct sigaction sa {};
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    // reset on entry: a fault in the handler itself takes the default action;
    // no deferral: the SIGABRT raised again below is delivered at once
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) sigaction(sig, &sa, nullptr);
  });
#endif
}

double library_hang_seconds() {
  static const double seconds = [] {
    const char* v = std::getenv("NHOLO_HDF5_HANG_SECONDS");
    const double s = v ? std::atof(v) : 0.0;
    return s > 0 ? s : 60.0;
  }();
  return seconds;
}

WatchedCall::WatchedCall(const char* what, hid_t obj) {
  if (!g_armed.load() || g_watched_since_ms.load() != 0) return;
  char name[kPathBytes];
  const ssize_t n = H5Fget_name(obj, name, sizeof name);
  copy_text(g_watched_file, n > 0 ? std::string(name) : std::string());
  outer_ = true;
  begin_watch(what);
}

WatchedCall::WatchedCall(const char* what, const std::string& path) {
  if (!g_armed.load() || g_watched_since_ms.load() != 0) return;
  copy_text(g_watched_file, path);
  outer_ = true;
  begin_watch(what);
}

WatchedCall::~WatchedCall() {
  if (outer_) g_watched_since_ms.store(0);
}

void note_file_read(const std::string& path) {
  copy_text(g_file_read, path);
}

void remove_on_library_fault(const std::string& path) {
  copy_text(g_temporary, path);
}

}  // namespace nholo::h5
