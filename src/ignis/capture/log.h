// Capture's logs (IGNIS_LOGS): artifacts switched on by name, written to
// sys.stderr as "[artifact] message" so pytest's capsys and the user's
// redirections see them.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

namespace ignis::capture {

enum LogArtifact : unsigned {
  kLogGraphBreaks = 1u << 0,  // graph_breaks
  kLogGuards = 1u << 1,       // guards
  kLogRecompiles = 1u << 2,   // recompiles
  kLogGraphCode = 1u << 3,    // graph_code
  kLogBytecode = 1u << 4,     // bytecode
  kLogOutputCode = 1u << 5,   // output_code: the compiler's loop IR and C++
  kLogAotGraphs = 1u << 6,    // aot_graphs: AOT's joint, forward and backward graphs
  kLogSchedule = 1u << 7,     // schedule: the compiler's fusion decisions
  kLogDynamic = 1u << 8,      // dynamic: symbols, shape guards, specializations
  kLogCudagraphs = 1u << 9,   // cudagraphs: reduce-overhead's recordings and fallbacks
};

unsigned log_mask();
void set_log_mask(unsigned mask);
inline bool log_on(LogArtifact a) { return (log_mask() & a) != 0; }
// Writes "[name] text\n" to sys.stderr (needs the GIL). Multi-line text is
// written as is after the prefix.
void log_write(LogArtifact a, const std::string& text);

// Event sink for ignis.compiler.explain: while a list is installed, the
// tracer appends one tuple per event:
//   ("graph", graph_module, compile_id)
//   ("break", reason, filename, lineno, compile_id)
//   ("guards", [guard lines], compile_id)
// Borrowed list; nullptr when none.
void set_event_sink(PyObject* list);
PyObject* event_sink();

}  // namespace ignis::capture
