// Ctrl-C (SIGINT) and SIGTERM during a long run: the first one stops generate() / perplexity() at
// the next step or window and keeps what was computed (the CLI prints it and exits 128 + signal, as
// llama.cpp prints its timings on Ctrl-C); a second one ends the process at once.
#pragma once

#include <signal.h>

namespace dak {

/// While alive, SIGINT and SIGTERM only ask the running loop to stop: the first one sets the flag
/// interrupt_requested() reads and writes one line on stderr; a second one (any of the two) restores
/// the default action and re-raises, ending the process. A signal the process inherited as ignored
/// (a shell's background job) stays ignored. The previous actions come back when the
/// scope ends (each scope keeps its own, so scopes nest); the signal is forgotten when a scope begins
/// and kept after it ends (interrupt_signal(), for the caller's exit status).
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

/// Whether SIGINT / SIGTERM arrived inside the InterruptScope alive now (false outside any: a later
/// run of the same process is not stopped by an old signal).
bool interrupt_requested();

/// The signal that interrupted the current or last InterruptScope (SIGINT or SIGTERM), 0 if none.
int interrupt_signal();

/// How the CLI names interrupt_signal() to the user: "SIGTERM", else "Ctrl-C" (SIGINT).
const char* interrupt_signal_name();

/// Thrown inside a step of the CPU reference engine (between its layers) once an interrupt is
/// requested, so that a step of minutes (a long prefill, a perplexity window) ends within one layer;
/// generate() and perplexity() catch it and end as interrupted, keeping the earlier steps' results.
struct StepInterrupted {};

/// Throws StepInterrupted when interrupt_requested().
void throw_if_interrupted();

}  // namespace dak
