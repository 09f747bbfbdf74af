// Capture's log switches (IGNIS_LOGS) and the explain() event sink.
#include "ignis/capture/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ignis::capture {
namespace {

struct ArtifactName {
  const char* name;
  LogArtifact bit;
};
constexpr ArtifactName kArtifacts[] = {
    {"graph_breaks", kLogGraphBreaks}, {"guards", kLogGuards},
    {"recompiles", kLogRecompiles},    {"graph_code", kLogGraphCode},
    {"bytecode", kLogBytecode},        {"output_code", kLogOutputCode},
    {"aot_graphs", kLogAotGraphs},     {"schedule", kLogSchedule},
    {"dynamic", kLogDynamic},          {"cudagraphs", kLogCudagraphs},
};
constexpr unsigned kAllArtifacts = (1u << 10) - 1;

// IGNIS_LOGS="graph_breaks,recompiles" / "+all" / "all"; a leading '+' on a
// name is accepted (torch's "+dynamo" style). Unknown names are ignored.
unsigned parse_env() {
  const char* env = std::getenv("IGNIS_LOGS");
  if (!env) return 0;
  unsigned mask = 0;
  std::string s(env);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    while (!item.empty() && (item.front() == ' ' || item.front() == '+')) item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item == "all") mask |= kAllArtifacts;
    for (const auto& a : kArtifacts)
      if (item == a.name) mask |= a.bit;
    pos = end + 1;
  }
  return mask;
}

bool g_mask_ready = false;
unsigned g_mask = 0;
PyObject* g_event_sink = nullptr;  // borrowed (the Python side keeps it alive)

const char* artifact_name(LogArtifact a) {
  for (const auto& n : kArtifacts)
    if (n.bit == a) return n.name;
  return "capture";
}

}  // namespace

unsigned log_mask() {
  if (!g_mask_ready) {
    g_mask = parse_env();
    g_mask_ready = true;
  }
  return g_mask;
}

void set_log_mask(unsigned mask) {
  g_mask = mask;
  g_mask_ready = true;
}

void log_write(LogArtifact a, const std::string& text) {
  std::string line = "[";
  line += artifact_name(a);
  line += "] ";
  line += text;
  if (line.empty() || line.back() != '\n') line += '\n';
  // Keep an exception in flight (the hook may log while one is set).
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* err = PySys_GetObject("stderr");  // borrowed
  if (err && err != Py_None) {
    if (PyFile_WriteString(line.c_str(), err) < 0) PyErr_Clear();
  } else {
    std::fputs(line.c_str(), stderr);
  }
  PyErr_Restore(type, value, tb);
}

void set_event_sink(PyObject* list) { g_event_sink = list; }
PyObject* event_sink() { return g_event_sink; }

}  // namespace ignis::capture
