#include "core/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace dak {

namespace {

volatile std::sig_atomic_t g_signal = 0;
int g_scopes = 0;  // InterruptScopes alive

void on_interrupt(int sig) {
  if (g_signal != 0) {  // the second one: at once
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
  static const char kLine[] =
      "\ndak: interrupted: stopping after the current step, keeping what was computed (again to quit at once)\n";
  const ssize_t n = ::write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
  (void)n;
}

}  // namespace

InterruptScope::InterruptScope() {
  g_signal = 0;
  ++g_scopes;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes go on; the loop checks the flag between steps
  // An inherited SIG_IGN stays (a shell starts background jobs with SIGINT ignored).
  sigaction(SIGINT, nullptr, &old_int_);
  sigaction(SIGTERM, nullptr, &old_term_);
  if (old_int_.sa_handler != SIG_IGN) sigaction(SIGINT, &sa, nullptr);
  if (old_term_.sa_handler != SIG_IGN) sigaction(SIGTERM, &sa, nullptr);
}

InterruptScope::~InterruptScope() {
  --g_scopes;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool interrupt_requested() { return g_scopes > 0 && g_signal != 0; }

int interrupt_signal() { return int(g_signal); }

const char* interrupt_signal_name() { return g_signal == SIGTERM ? "SIGTERM" : "Ctrl-C"; }

void throw_if_interrupted() {
  if (interrupt_requested()) throw StepInterrupted{};
}

}  // namespace dak
