// nholo/host/run/interrupt.cpp — the interrupt flag and its signal handler.
#include "host/run/interrupt.hpp"

#include <csignal>
#include <initializer_list>

namespace nholo {

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
std::atomic<int> g_interrupt_signal{0};
// The first signal asks for a clean stop (the flag); a second one, while
// the first is being honoured, ends the process at once by the signal's
// default action, as a kill would: for a phase that does not look at the
// flag (a read that the HDF5 library never returns from on some damaged
// files). What a run has written stays resumable, as after a crash
// (docs/usage.md, "Interruptions").
extern "C" void on_interrupt(int sig) {
  if (interrupt_flag().load()) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_interrupt_signal.store(sig);
  interrupt_flag().store(true);
}
}  // namespace

int interrupt_signal() {
  return g_interrupt_signal.load();
}

void install_interrupt_handler() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, on_interrupt);
}

}  // namespace nholo
