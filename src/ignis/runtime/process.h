// Running a child process (the C++ compiler) and collecting what it prints.
//
// posix_spawn, not fork: it is safe from any thread of a multi-threaded
// process (Python's included) and cheap, and several compiles can run at once
// from different threads.
#pragma once

#include <string>
#include <vector>

namespace ignis::runtime {

struct ProcessResult {
  // The exit status, or 128 + the signal number when a signal ended it.
  int exit_code = -1;
  // stdout and stderr, interleaved as the child wrote them.
  std::string output;
};

// Runs argv[0] (looked up on PATH when it has no '/') with the given
// arguments and this process's environment, and waits for it. Throws when
// the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv);

// The argv as a shell would take it (for error messages and logs).
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace ignis::runtime
