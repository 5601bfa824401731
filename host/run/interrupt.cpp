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
extern "C" void on_interrupt(int sig) {
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
