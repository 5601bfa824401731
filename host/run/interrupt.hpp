// nholo/host/run/interrupt.hpp — the interrupt flag of a run: set by the
// handler of SIGINT, SIGTERM and SIGHUP, read by the run pipeline between
// windows (and by the CPU backends between portions of a launch).
#pragma once

#include <atomic>
#include <stdexcept>

namespace nholo {

// Set by the SIGINT handler; the run stops at the next window boundary.
std::atomic<bool>& interrupt_flag();

// Installs the handler of SIGINT, SIGTERM and SIGHUP that sets
// interrupt_flag(): the run stops at the next window boundary. A second
// signal ends the process at once (the signal's default action).
void install_interrupt_handler();
// The signal that interrupted the run (0: none).
int interrupt_signal();

// Thrown where an interrupt stops a command before it has anything to keep
// (a model's plugin compiling, or waiting for another process compiling it):
// the command ends with 128 + signal and has written nothing.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nholo
