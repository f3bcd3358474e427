// InterruptScope (core/interrupt.h): the first SIGINT / SIGTERM only sets the flag, a second one ends
// the process by that signal, and the handlers in place before the scope come back when it ends.
#include <gtest/gtest.h>

#include <csignal>

#include "core/interrupt.h"

namespace {

TEST(InterruptScope, TheFirstSignalSetsTheFlagAndTheOldActionComesBack) {
  struct sigaction before {}, before_term {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &before), 0);
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &before_term), 0);
  {
    const dak::InterruptScope outer;
    {
      const dak::InterruptScope inner;  // nested: each restores what it found
      EXPECT_FALSE(dak::interrupt_requested());
      std::raise(SIGINT);
      EXPECT_TRUE(dak::interrupt_requested());
      EXPECT_EQ(dak::interrupt_signal(), SIGINT);
    }
    struct sigaction now {};
    ASSERT_EQ(sigaction(SIGINT, nullptr, &now), 0);
    EXPECT_NE(now.sa_handler, before.sa_handler) << "the outer scope's handler is gone";
  }
  EXPECT_FALSE(dak::interrupt_requested()) << "outside a scope no run is stopped";
  EXPECT_EQ(dak::interrupt_signal(), SIGINT) << "the signal outlives the scope, for the exit status";
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGINT, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  struct sigaction term {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &term), 0);
  EXPECT_EQ(term.sa_handler, before_term.sa_handler);
}

TEST(InterruptScope, AnInheritedIgnoreStaysIgnored) {
  // A shell's background job starts with SIGINT ignored: Ctrl-C aimed at the shell's foreground
  // must not stop it.
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ASSERT_EQ(sigaction(SIGINT, &ignore, &before), 0);
  {
    const dak::InterruptScope scope;
    std::raise(SIGINT);
    EXPECT_FALSE(dak::interrupt_requested());
    std::raise(SIGTERM);  // not ignored: caught
    EXPECT_TRUE(dak::interrupt_requested());
    EXPECT_EQ(dak::interrupt_signal(), SIGTERM);
  }
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGINT, &before, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
}

[[noreturn]] void interrupt_twice() {
  const dak::InterruptScope scope;
  std::raise(SIGINT);
  std::raise(SIGINT);  // ends the process
  std::_Exit(0);
}

TEST(InterruptScopeDeathTest, ASecondSignalEndsTheProcessAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(interrupt_twice(), ::testing::KilledBySignal(SIGINT), "dak: interrupted: stopping after the current");
}

}  // namespace
