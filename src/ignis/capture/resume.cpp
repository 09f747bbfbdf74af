// Resume functions and local liveness (resume.h).
//
// Note [Resume code layout]
// A resume code object is `prologue + original co_code`. The body is copied
// as one block, so every relative jump inside it keeps its meaning; only the
// opargs that index localsplus change, because the new parameters
// (___stack{i} and the live locals) must come first in co_varnames. The
// exception table is shifted by the prologue's length and the line table
// gets "no location" entries for the prologue in front of the original ones
// (location entries carry line deltas, and a no-location entry has delta 0,
// so the original entries keep their lines). Opcode numbers, inline cache
// sizes and the local/free/jump opcode sets are read from CPython's `dis`
// and `opcode` modules, so one source serves 3.11 and 3.12.
#include "ignis/capture/resume.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ignis::capture {
namespace {

// An owned reference.
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* o) : p_(o) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }
  PyObject* release() {
    PyObject* r = p_;
    p_ = nullptr;
    return r;
  }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  PyObject* p_ = nullptr;
};

PyObject* as_obj(PyCodeObject* c) { return reinterpret_cast<PyObject*>(c); }

// ---------------------------------------------------------------------------
// Opcode tables

enum OpFlag : uint16_t {
  kIndexesLocals = 1 << 0,  // oparg is a localsplus index (dis.haslocal / dis.hasfree)
  kJumpRel = 1 << 1,
  kJumpAbs = 1 << 2,
  kBackward = 1 << 3,
  kNoFallthrough = 1 << 4,  // unconditional jump, return, raise
  kUse = 1 << 5,            // needs the local bound: LOAD_FAST*, DELETE_FAST, deref of an argument cell
  kDef = 1 << 6,            // STORE_FAST
  kUnknownLocalOp = 1 << 7, // indexes locals in a way we do not know how to renumber
  kFreeOp = 1 << 8,         // dis.hasfree
  kCountOparg = 1 << 9,     // COPY_FREE_VARS: the oparg is a count, not an index
};

struct OpTables {
  uint16_t flags[256] = {};
  uint8_t caches[256] = {};
  std::string names[256];
  int extended_arg = -1, resume = -1, copy_free_vars = -1, load_fast = -1, push_null = -1,
      jump_forward = -1;
};

// Calls f(int) for each int in the list attribute `name` of `mod`.
template <class F>
bool for_each_int(PyObject* mod, const char* name, F f) {
  Ref seq(PyObject_GetAttrString(mod, name));
  if (!seq) return false;
  Ref fast(PySequence_Fast(seq.get(), name));
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast.get(), i));
    if (v == -1 && PyErr_Occurred()) return false;
    f(static_cast<int>(v));
  }
  return true;
}

OpTables* build_op_tables() {
  auto t = std::make_unique<OpTables>();
  Ref dis(PyImport_ImportModule("dis"));
  if (!dis) return nullptr;
  Ref opcode(PyImport_ImportModule("opcode"));
  if (!opcode) return nullptr;

  Ref opname(PyObject_GetAttrString(dis.get(), "opname"));
  if (!opname) return nullptr;
  Ref names(PySequence_Fast(opname.get(), "dis.opname"));
  if (!names) return nullptr;
  Py_ssize_t n = std::min<Py_ssize_t>(PySequence_Fast_GET_SIZE(names.get()), 256);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const char* s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(names.get(), i));
    if (!s) return nullptr;
    t->names[i] = s;
  }
  auto find = [&](const char* name) {
    for (int i = 0; i < 256; ++i)
      if (t->names[i] == name) return i;
    return -1;
  };
  t->extended_arg = find("EXTENDED_ARG");
  t->resume = find("RESUME");
  t->copy_free_vars = find("COPY_FREE_VARS");
  t->load_fast = find("LOAD_FAST");
  t->push_null = find("PUSH_NULL");
  t->jump_forward = find("JUMP_FORWARD");
  if (t->extended_arg < 0 || t->resume < 0 || t->copy_free_vars < 0 || t->load_fast < 0 ||
      t->push_null < 0 || t->jump_forward < 0) {
    PyErr_SetString(PyExc_RuntimeError, "resume: this Python's dis module lacks an opcode resume functions need");
    return nullptr;
  }

  // Pseudo-opcodes (>= 256, 3.12's JUMP, STORE_FAST_MAYBE_NULL, ...) never
  // appear in co_code.
  auto mark = [&](uint16_t flag) {
    return [&t, flag](int op) {
      if (op >= 0 && op < 256) t->flags[op] |= flag;
    };
  };
  if (!for_each_int(dis.get(), "haslocal", mark(kIndexesLocals)) ||
      !for_each_int(dis.get(), "hasfree", mark(kIndexesLocals | kFreeOp)) ||
      !for_each_int(dis.get(), "hasjrel", mark(kJumpRel)) ||
      !for_each_int(dis.get(), "hasjabs", mark(kJumpAbs)))
    return nullptr;

  // Inline cache entries: a list indexed by opcode (3.11, 3.12) or a dict
  // keyed by name (3.13).
  Ref cache(PyObject_GetAttrString(opcode.get(), "_inline_cache_entries"));
  if (!cache) return nullptr;
  for (int op = 0; op < 256; ++op) {
    Ref v;
    if (PyDict_Check(cache.get())) {
      if (t->names[op].empty()) continue;
      PyObject* item = PyDict_GetItemString(cache.get(), t->names[op].c_str());  // borrowed
      if (!item) continue;
      v = Ref(Py_NewRef(item));
    } else {
      if (op >= PySequence_Size(cache.get())) break;
      v = Ref(PySequence_GetItem(cache.get(), op));
      if (!v) return nullptr;
    }
    long c = PyLong_AsLong(v.get());
    if (c == -1 && PyErr_Occurred()) return nullptr;
    t->caches[op] = static_cast<uint8_t>(c);
  }

  for (int op = 0; op < 256; ++op) {
    const std::string& name = t->names[op];
    if (name.find("BACKWARD") != std::string::npos) t->flags[op] |= kBackward;
    static const char* const kNoFall[] = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                                          "JUMP_ABSOLUTE", "RETURN_VALUE", "RETURN_CONST",
                                          "RAISE_VARARGS", "RERAISE"};
    for (const char* s : kNoFall)
      if (name == s) t->flags[op] |= kNoFallthrough;
    if (!(t->flags[op] & kIndexesLocals)) continue;
    if (name == "LOAD_FAST" || name == "LOAD_FAST_CHECK" || name == "LOAD_FAST_AND_CLEAR" ||
        name == "DELETE_FAST") {
      // DELETE_FAST raises when the local is unbound, so it needs the value.
      t->flags[op] |= kUse;
    } else if (name == "STORE_FAST") {
      t->flags[op] |= kDef;
    } else if (name == "COPY_FREE_VARS") {
      t->flags[op] |= kCountOparg;
    } else if (name == "MAKE_CELL" || name == "LOAD_CLOSURE" || name == "LOAD_DEREF" ||
               name == "STORE_DEREF" || name == "DELETE_DEREF" || name == "LOAD_CLASSDEREF" ||
               name == "LOAD_FROM_DICT_OR_DEREF") {
      // Cell and free slots; a deref of an argument's cell counts as a use
      // of that argument (see analyze()).
    } else if (name.empty() || name[0] == '<') {
      // An unused opcode number listed in hasfree (3.12's old LOAD_CLASSDEREF slot).
    } else {
      t->flags[op] |= kUnknownLocalOp;
    }
  }
  return t.release();
}

const OpTables* op_tables() {
  static OpTables* tables = nullptr;  // built once, kept for the process's lifetime
  if (!tables) tables = build_op_tables();
  return tables;
}

// ---------------------------------------------------------------------------
// Decoding

struct Instr {
  int start;    // byte offset of the first EXTENDED_ARG prefix, or of the opcode
  int offset;   // byte offset of the opcode
  int op;
  int arg;      // full oparg, prefixes included
  int nprefix;  // EXTENDED_ARG prefixes
  int next;     // byte offset after the inline caches
};

struct ExcEntry {
  int start, end, target;  // code units; end exclusive
  int depth_lasti;
};

bool read_varint(const uint8_t* p, size_t n, size_t* i, int* out) {
  if (*i >= n) return false;
  uint8_t b = p[(*i)++];
  int v = b & 63;
  while (b & 64) {
    if (*i >= n) return false;
    b = p[(*i)++];
    v = (v << 6) | (b & 63);
  }
  *out = v;
  return true;
}

// 6-bit groups, most significant first, 0x40 on all groups but the last;
// `mark` (0x80) flags the first byte of an entry.
void write_varint(std::string* s, int v, uint8_t mark) {
  int shift = 0;
  while (shift < 30 && (v >> (shift + 6)) != 0) shift += 6;
  for (; shift > 0; shift -= 6) {
    s->push_back(static_cast<char>(mark | 64 | ((v >> shift) & 63)));
    mark = 0;
  }
  s->push_back(static_cast<char>(mark | (v & 63)));
}

bool parse_exception_table(const std::string& table, std::vector<ExcEntry>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(table.data());
  size_t n = table.size(), i = 0;
  while (i < n) {
    int start, len, target, dl;
    if (!read_varint(p, n, &i, &start) || !read_varint(p, n, &i, &len) ||
        !read_varint(p, n, &i, &target) || !read_varint(p, n, &i, &dl))
      return false;
    out->push_back({start, start + len, target, dl});
  }
  return true;
}

std::string encode_exception_table(const std::vector<ExcEntry>& entries, int shift_units) {
  std::string s;
  for (const ExcEntry& e : entries) {
    write_varint(&s, e.start + shift_units, 0x80);
    write_varint(&s, e.end - e.start, 0);
    write_varint(&s, e.target + shift_units, 0);
    write_varint(&s, e.depth_lasti, 0);
  }
  return s;
}

bool bytes_attr(PyObject* o, const char* name, std::string* out) {
  Ref b(PyObject_GetAttrString(o, name));
  if (!b) return false;
  char* data;
  Py_ssize_t n;
  if (PyBytes_AsStringAndSize(b.get(), &data, &n) < 0) return false;
  out->assign(data, static_cast<size_t>(n));
  return true;
}

// What resume.cpp knows about one original code object: its decoded
// instructions, exception table and the live-in set of every instruction.
struct CodeInfo {
  std::string co_code;  // deoptimized bytes (code.co_code)
  std::string exception_table;
  std::vector<Instr> instrs;
  std::vector<ExcEntry> exc;
  std::unordered_map<int, int> index_of;  // instruction start offset -> index
  int nlocals = 0;                        // co_nlocals (len(co_varnames))
  int nfree = 0;
  int ncells = 0;
  int first_resume = -1;                  // byte offset of the first RESUME
  std::string unsupported;                // why renumbering is impossible, or empty
  int words = 0;                          // 64-bit words per live set
  std::vector<uint64_t> live_in;          // instrs.size() * words
};

int jump_target(const OpTables& t, const Instr& in) {
  uint16_t f = t.flags[in.op];
  if (f & kJumpAbs) return in.arg * 2;
  return (f & kBackward) ? in.next - 2 * in.arg : in.next + 2 * in.arg;
}

// The handler an exception at byte offset `off` goes to, or -1.
int handler_for(const std::vector<ExcEntry>& exc, int off) {
  int unit = off / 2;
  for (const ExcEntry& e : exc)
    if (e.start <= unit && unit < e.end) return e.target * 2;
  return -1;
}

void analyze(const OpTables& t, CodeInfo& ci) {
  size_t n = ci.instrs.size();
  int W = ci.words;
  std::vector<int> fall(n, -1), jump(n, -1), handler(n, -1);
  auto index_at = [&](int off) {
    auto it = ci.index_of.find(off);
    return it == ci.index_of.end() ? -1 : it->second;
  };
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = ci.instrs[i];
    uint16_t f = t.flags[in.op];
    if (!(f & kNoFallthrough) && i + 1 < n) fall[i] = static_cast<int>(i + 1);
    // 3.12's exhausted FOR_ITER skips the END_FOR at its target; both touch
    // only the value stack, so the target serves as the successor for locals.
    if (f & (kJumpRel | kJumpAbs)) jump[i] = index_at(jump_target(t, in));
    int h = handler_for(ci.exc, in.offset);
    if (h >= 0) handler[i] = index_at(h);
  }
  ci.live_in.assign(n * W, 0);
  std::vector<uint64_t> cur(W);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = n; k-- > 0;) {
      const Instr& in = ci.instrs[k];
      uint16_t f = t.flags[in.op];
      std::fill(cur.begin(), cur.end(), 0);
      for (int s : {fall[k], jump[k]})
        if (s >= 0)
          for (int w = 0; w < W; ++w) cur[w] |= ci.live_in[s * W + w];
      bool local = in.arg < ci.nlocals;
      if ((f & kDef) && local) cur[in.arg / 64] &= ~(uint64_t{1} << (in.arg % 64));
      // A deref of an argument's cell reads the argument (3.11 keeps such
      // arguments in their varnames slot); count it as a use.
      if (((f & kUse) || (f & kFreeOp)) && local && !(f & kCountOparg))
        cur[in.arg / 64] |= uint64_t{1} << (in.arg % 64);
      // The handler may run before this instruction's store takes effect,
      // so what it reads is live here whatever this instruction writes.
      if (handler[k] >= 0)
        for (int w = 0; w < W; ++w) cur[w] |= ci.live_in[handler[k] * W + w];
      uint64_t* dst = &ci.live_in[k * W];
      if (!std::equal(cur.begin(), cur.end(), dst)) {
        std::copy(cur.begin(), cur.end(), dst);
        changed = true;
      }
    }
  }
}

Py_ssize_t tuple_size_attr(PyObject* o, const char* name) {
  Ref v(PyObject_GetAttrString(o, name));
  if (!v) return -1;
  return PyTuple_Check(v.get()) ? PyTuple_GET_SIZE(v.get()) : PySequence_Size(v.get());
}

std::unique_ptr<CodeInfo> build_code_info(PyCodeObject* code) {
  const OpTables* t = op_tables();
  if (!t) return nullptr;
  auto ci = std::make_unique<CodeInfo>();
  PyObject* c = as_obj(code);
  if (!bytes_attr(c, "co_code", &ci->co_code) ||
      !bytes_attr(c, "co_exceptiontable", &ci->exception_table))
    return nullptr;
  Py_ssize_t nlocals = tuple_size_attr(c, "co_varnames");
  Py_ssize_t nfree = tuple_size_attr(c, "co_freevars");
  Py_ssize_t ncells = tuple_size_attr(c, "co_cellvars");
  if (nlocals < 0 || nfree < 0 || ncells < 0) return nullptr;
  ci->nlocals = static_cast<int>(nlocals);
  ci->nfree = static_cast<int>(nfree);
  ci->ncells = static_cast<int>(ncells);
  ci->words = std::max(1, (ci->nlocals + 63) / 64);
  if (!parse_exception_table(ci->exception_table, &ci->exc)) {
    PyErr_SetString(PyExc_ValueError, "resume: malformed co_exceptiontable");
    return nullptr;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(ci->co_code.data());
  int n = static_cast<int>(ci->co_code.size());
  for (int i = 0; i + 1 < n;) {
    int start = i, arg = 0, nprefix = 0, op = p[i];
    while (op == t->extended_arg && i + 3 < n) {
      arg = (arg | p[i + 1]) << 8;
      ++nprefix;
      i += 2;
      op = p[i];
    }
    arg |= p[i + 1];
    int next = i + 2 + 2 * t->caches[op];
    ci->index_of[start] = static_cast<int>(ci->instrs.size());
    ci->instrs.push_back({start, i, op, arg, nprefix, next});
    if (op == t->resume && ci->first_resume < 0) ci->first_resume = start;
    if ((t->flags[op] & kUnknownLocalOp) && ci->unsupported.empty())
      ci->unsupported = "opcode " + t->names[op] + " indexes locals in a way resume functions do not renumber";
    i = next;
  }
  analyze(*t, *ci);
  return ci;
}

// Per-code analysis cache. Each key's code object is kept alive by a strong
// reference so the pointer cannot be reused by another code object.
std::unordered_map<PyCodeObject*, std::unique_ptr<CodeInfo>>& info_cache() {
  static auto* m = new std::unordered_map<PyCodeObject*, std::unique_ptr<CodeInfo>>();
  return *m;
}

// Borrowed; nullptr with a Python error set.
const CodeInfo* code_info(PyCodeObject* code) {
  auto& m = info_cache();
  auto it = m.find(code);
  if (it != m.end()) return it->second.get();
  std::unique_ptr<CodeInfo> ci = build_code_info(code);
  if (!ci) return nullptr;
  // Building runs Python (dis); another caller may have built it meanwhile.
  auto [pos, inserted] = m.emplace(code, std::move(ci));
  if (inserted) Py_INCREF(code);
  return pos->second.get();
}

struct ResumeKey {
  PyCodeObject* code;
  int offset;
  std::vector<bool> stack_null;
  std::vector<int> live_locals;
  bool operator<(const ResumeKey& o) const {
    return std::tie(code, offset, stack_null, live_locals) <
           std::tie(o.code, o.offset, o.stack_null, o.live_locals);
  }
};

// Values are strong references to resume code objects; each key holds a
// strong reference to its original code.
std::map<ResumeKey, PyObject*>& resume_cache() {
  static auto* m = new std::map<ResumeKey, PyObject*>();
  return *m;
}

// Appends `op arg` (with EXTENDED_ARG prefixes as needed) and its zeroed
// inline caches.
void emit(const OpTables& t, std::string* out, int op, int arg) {
  int nprefix = 0;
  while (nprefix < 3 && (arg >> (8 * (nprefix + 1))) != 0) ++nprefix;
  for (int k = nprefix; k > 0; --k) {
    out->push_back(static_cast<char>(t.extended_arg));
    out->push_back(static_cast<char>((arg >> (8 * k)) & 0xff));
  }
  out->push_back(static_cast<char>(op));
  out->push_back(static_cast<char>(arg & 0xff));
  out->append(2 * t.caches[op], '\0');
}

int instruction_at(const CodeInfo& ci, int offset) {
  auto it = ci.index_of.find(offset);
  return it == ci.index_of.end() ? -1 : it->second;
}

bool fits(int value, int nprefix) {
  return nprefix >= 3 || value < (1 << (8 * (nprefix + 1)));
}

PyObject* build_resume_code(const ResumeSpec& spec, const CodeInfo& ci, const OpTables& t) {
  PyObject* code = as_obj(spec.code);
  Ref varnames(PyObject_GetAttrString(code, "co_varnames"));
  Ref freevars(PyObject_GetAttrString(code, "co_freevars"));
  Ref qualname(PyObject_GetAttrString(code, "co_qualname"));
  if (!varnames || !freevars || !qualname) return nullptr;

  // Parameters: the non-NULL stack slots, then the live locals.
  int nslots = static_cast<int>(spec.stack_null.size());
  std::vector<std::string> taken;
  for (PyObject* tup : {varnames.get(), freevars.get()})
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); ++i) {
      const char* s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(tup, i));
      if (!s) return nullptr;
      taken.emplace_back(s);
    }
  std::vector<int> stack_param(nslots, -1);  // slot -> new local index
  int nstack = 0;
  Ref names(PyList_New(0));
  if (!names) return nullptr;
  for (int i = 0; i < nslots; ++i) {
    if (spec.stack_null[i]) continue;
    // A resume function of a resume function has (dead) ___stack locals of
    // its own; the new parameters take distinct names.
    std::string name = "___stack" + std::to_string(i);
    while (std::find(taken.begin(), taken.end(), name) != taken.end()) name += "_";
    taken.push_back(name);
    Ref s(PyUnicode_FromString(name.c_str()));
    if (!s || PyList_Append(names.get(), s.get()) < 0) return nullptr;
    stack_param[i] = nstack++;
  }
  std::vector<int> new_index(ci.nlocals + ci.nfree, -1);
  int next = nstack;
  for (int v : spec.live_locals) new_index[v] = next++;
  for (int v = 0; v < ci.nlocals; ++v)
    if (new_index[v] < 0) new_index[v] = next++;
  for (int j = 0; j < ci.nfree; ++j) new_index[ci.nlocals + j] = nstack + ci.nlocals + j;
  // new_index maps the locals onto nstack .. nstack + nlocals - 1.
  std::vector<int> order(ci.nlocals);
  for (int v = 0; v < ci.nlocals; ++v) order[new_index[v] - nstack] = v;
  for (int v : order)
    if (PyList_Append(names.get(), PyTuple_GET_ITEM(varnames.get(), v)) < 0) return nullptr;
  Ref new_varnames(PyList_AsTuple(names.get()));
  if (!new_varnames) return nullptr;

  // Prologue (Note [Resume code layout]).
  std::string bytecode;
  if (ci.nfree > 0) emit(t, &bytecode, t.copy_free_vars, ci.nfree);
  emit(t, &bytecode, t.resume, 0);
  for (int i = 0; i < nslots; ++i) {
    if (spec.stack_null[i])
      emit(t, &bytecode, t.push_null, 0);
    else
      emit(t, &bytecode, t.load_fast, stack_param[i]);
  }
  // The body follows the jump directly, so the jump skips exactly
  // target_offset bytes of it.
  emit(t, &bytecode, t.jump_forward, spec.target_offset / 2);
  int prologue = static_cast<int>(bytecode.size());

  // Body with renumbered localsplus opargs.
  std::string body = ci.co_code;
  for (const Instr& in : ci.instrs) {
    uint16_t f = t.flags[in.op];
    if (!(f & kIndexesLocals) || (f & kCountOparg)) continue;
    if (in.arg >= static_cast<int>(new_index.size())) {
      PyErr_Format(PyExc_ValueError, "resume: %s at offset %d indexes slot %d beyond the code's locals",
                   t.names[in.op].c_str(), in.offset, in.arg);
      return nullptr;
    }
    int arg = new_index[in.arg];
    if (!fits(arg, in.nprefix)) {
      PyErr_Format(PyExc_ValueError,
                   "resume: renumbered %s at offset %d needs EXTENDED_ARG (slot %d -> %d)",
                   t.names[in.op].c_str(), in.offset, in.arg, arg);
      return nullptr;
    }
    for (int k = 0; k < in.nprefix; ++k)
      body[in.start + 2 * k + 1] = static_cast<char>((arg >> (8 * (in.nprefix - k))) & 0xff);
    body[in.offset + 1] = static_cast<char>(arg & 0xff);
  }
  bytecode += body;

  std::string exc = encode_exception_table(ci.exc, prologue / 2);

  // Line table: "no location" entries (code 15, up to 8 code units each)
  // over the prologue, then the original entries.
  std::string linetable;
  for (int units = prologue / 2; units > 0;) {
    int len = std::min(units, 8);
    linetable.push_back(static_cast<char>(0x80 | (15 << 3) | (len - 1)));
    units -= len;
  }
  std::string orig_lines;
  if (!bytes_attr(code, "co_linetable", &orig_lines)) return nullptr;
  linetable += orig_lines;

  // Named as Dynamo names them, by function and line, so that logs read
  // "ignis_resume_in_forward_at_42"; the offset keeps two resumes on one line apart.
  long target_line = spec.code->co_firstlineno;
  {
    Ref lines(PyObject_CallMethod(reinterpret_cast<PyObject*>(spec.code), "co_lines", nullptr));
    Ref it(lines ? PyObject_GetIter(lines.get()) : nullptr);
    while (it) {
      Ref t(PyIter_Next(it.get()));
      if (!t) break;
      long start = PyLong_AsLong(PyTuple_GET_ITEM(t.get(), 0));
      long end = PyLong_AsLong(PyTuple_GET_ITEM(t.get(), 1));
      PyObject* l = PyTuple_GET_ITEM(t.get(), 2);
      if (start <= spec.target_offset && spec.target_offset < end && l != Py_None) {
        target_line = PyLong_AsLong(l);
        break;
      }
    }
    if (PyErr_Occurred()) PyErr_Clear();
  }
  const char* orig_name = PyUnicode_AsUTF8(spec.code->co_name);
  if (!orig_name) return nullptr;
  std::string name = std::string("ignis_resume_in_") + orig_name + "_at_" +
                     std::to_string(target_line) + "_" + std::to_string(spec.target_offset);
  const char* qn = PyUnicode_AsUTF8(qualname.get());
  if (!qn) return nullptr;
  std::string new_qualname = std::string(qn) + "." + name;
  int nparams = nstack + static_cast<int>(spec.live_locals.size());
  int flags = spec.code->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  int stacksize = std::max(spec.code->co_stacksize, nslots + 2);

  Ref kwargs(PyDict_New());
  if (!kwargs) return nullptr;
  auto set = [&](const char* key, PyObject* value) {
    Ref v(value);
    return v && PyDict_SetItemString(kwargs.get(), key, v.get()) == 0;
  };
  if (!set("co_argcount", PyLong_FromLong(nparams)) || !set("co_posonlyargcount", PyLong_FromLong(0)) ||
      !set("co_kwonlyargcount", PyLong_FromLong(0)) ||
      !set("co_nlocals", PyLong_FromLong(nstack + ci.nlocals)) ||
      !set("co_stacksize", PyLong_FromLong(stacksize)) || !set("co_flags", PyLong_FromLong(flags)) ||
      !set("co_code", PyBytes_FromStringAndSize(bytecode.data(), bytecode.size())) ||
      !set("co_varnames", Py_NewRef(new_varnames.get())) ||
      !set("co_name", PyUnicode_FromString(name.c_str())) ||
      !set("co_qualname", PyUnicode_FromString(new_qualname.c_str())) ||
      !set("co_linetable", PyBytes_FromStringAndSize(linetable.data(), linetable.size())) ||
      !set("co_exceptiontable", PyBytes_FromStringAndSize(exc.data(), exc.size())))
    return nullptr;
  Ref replace(PyObject_GetAttrString(code, "replace"));
  if (!replace) return nullptr;
  Ref noargs(PyTuple_New(0));
  if (!noargs) return nullptr;
  return PyObject_Call(replace.get(), noargs.get(), kwargs.get());
}

}  // namespace

// The handler at byte offset `target` is a with-block's cleanup
// (PUSH_EXC_INFO; WITH_EXCEPT_START), not an except clause.
bool is_with_cleanup(const CodeInfo& ci, const OpTables& t, int target) {
  int idx = instruction_at(ci, target);
  if (idx < 0 || idx + 1 >= static_cast<int>(ci.instrs.size())) return false;
  return t.names[ci.instrs[idx].op] == "PUSH_EXC_INFO" &&
         t.names[ci.instrs[idx + 1].op] == "WITH_EXCEPT_START";
}

bool can_resume_at(PyCodeObject* code, int offset, std::string* why, bool inside_with_ok) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    return no("generator and coroutine frames cannot be resumed");
  if (!(code->co_flags & CO_OPTIMIZED))
    return no("module and class bodies keep their locals in a dict and cannot be resumed");
  const CodeInfo* ci = code_info(code);
  const OpTables* t = op_tables();
  if (!ci || !t) {
    std::string msg = "could not analyze the code";
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (value) {
      Ref s(PyObject_Str(value));
      if (s && PyUnicode_AsUTF8(s.get())) msg += std::string(": ") + PyUnicode_AsUTF8(s.get());
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return no(msg);
  }
  if (ci->ncells > 0)
    return no("the code has cell variables of its own; a resumed frame could not share them with "
              "closures made before the break");
  int idx = instruction_at(*ci, offset);
  if (idx < 0) return no("offset " + std::to_string(offset) + " is not the start of an instruction");
  if (ci->first_resume < 0 || offset < ci->first_resume)
    return no("offset " + std::to_string(offset) + " lies before the code's RESUME");
  const Instr& in = ci->instrs[idx];
  for (const ExcEntry& e : ci->exc) {
    int lo = in.start / 2, hi = in.offset / 2;
    if (e.start <= hi && lo < e.end) {
      if (inside_with_ok && is_with_cleanup(*ci, *t, e.target * 2)) continue;
      return no("offset " + std::to_string(offset) + " is inside a try/with block (exception table " +
                std::to_string(e.start * 2) + " to " + std::to_string(e.end * 2) + " -> " +
                std::to_string(e.target * 2) + ")");
    }
  }
  if (!ci->unsupported.empty()) return no(ci->unsupported);
  // Renumbering puts at most co_stacksize stack parameters in front of the
  // locals; every renumbered oparg must fit the bytes it already has.
  int max_stack = code->co_stacksize;
  for (const Instr& i : ci->instrs) {
    uint16_t f = t->flags[i.op];
    if (!(f & kIndexesLocals) || (f & kCountOparg)) continue;
    int bound = i.arg < ci->nlocals ? max_stack + ci->nlocals - 1 : max_stack + i.arg;
    if (!fits(bound, i.nprefix))
      return no("renumbering locals could need EXTENDED_ARG (" + t->names[i.op] + " at offset " +
                std::to_string(i.offset) + ", " + std::to_string(ci->nlocals) + " locals)");
  }
  return true;
}

PyObject* make_resume_code(const ResumeSpec& spec) {
  if (!spec.code) {
    PyErr_SetString(PyExc_ValueError, "make_resume_code: no code object");
    return nullptr;
  }
  std::string why;
  if (!can_resume_at(spec.code, spec.target_offset, &why, spec.inside_with)) {
    PyErr_Format(PyExc_ValueError, "cannot resume %U at offset %d: %s", spec.code->co_qualname,
                 spec.target_offset, why.c_str());
    return nullptr;
  }
  const CodeInfo* ci = code_info(spec.code);
  const OpTables* t = op_tables();
  if (!ci || !t) return nullptr;
  if (static_cast<int>(spec.stack_null.size()) > spec.code->co_stacksize) {
    PyErr_Format(PyExc_ValueError, "make_resume_code: %zd stack slots exceed the code's co_stacksize %d",
                 spec.stack_null.size(), spec.code->co_stacksize);
    return nullptr;
  }
  std::vector<bool> seen(ci->nlocals, false);
  for (int v : spec.live_locals) {
    if (v < 0 || v >= ci->nlocals || seen[v]) {
      PyErr_Format(PyExc_ValueError, "make_resume_code: live local %d is out of range or repeated", v);
      return nullptr;
    }
    seen[v] = true;
  }
  ResumeKey key{spec.code, spec.target_offset, spec.stack_null, spec.live_locals};
  auto& cache = resume_cache();
  auto it = cache.find(key);
  if (it != cache.end()) return Py_NewRef(it->second);
  PyObject* made = build_resume_code(spec, *ci, *t);
  if (!made) return nullptr;
  auto [pos, inserted] = cache.emplace(std::move(key), made);
  if (!inserted) {  // made meanwhile by another caller: keep the first
    Py_DECREF(made);
    return Py_NewRef(pos->second);
  }
  Py_INCREF(spec.code);
  return Py_NewRef(made);
}

PyObject* make_resume_function(const ResumeSpec& spec, PyObject* globals, PyObject* closure) {
  if (!globals || !PyDict_Check(globals)) {
    PyErr_SetString(PyExc_TypeError, "make_resume_function: globals must be a dict");
    return nullptr;
  }
  if (closure == Py_None) closure = nullptr;
  Ref code(make_resume_code(spec));
  if (!code) return nullptr;
  Py_ssize_t nfree = tuple_size_attr(code.get(), "co_freevars");
  if (nfree < 0) return nullptr;
  Py_ssize_t nclosure = closure ? (PyTuple_Check(closure) ? PyTuple_GET_SIZE(closure) : -1) : 0;
  if (nclosure != nfree) {
    PyErr_Format(PyExc_ValueError, "make_resume_function: the code has %zd free variables but the closure %s",
                 nfree, closure ? "is not a tuple of that size" : "is None");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nclosure; ++i)
    if (!PyCell_Check(PyTuple_GET_ITEM(closure, i))) {
      PyErr_SetString(PyExc_TypeError, "make_resume_function: closure items must be cells");
      return nullptr;
    }
  Ref qualname(PyObject_GetAttrString(code.get(), "co_qualname"));
  if (!qualname) return nullptr;
  Ref fn(PyFunction_NewWithQualName(code.get(), globals, qualname.get()));
  if (!fn) return nullptr;
  if (closure && PyFunction_SetClosure(fn.get(), closure) < 0) return nullptr;
  return fn.release();
}

std::vector<int> live_locals_at(PyCodeObject* code, int offset) {
  std::vector<int> out;
  const CodeInfo* ci = code_info(code);
  if (!ci) {
    // Unanalyzable code (can_resume_at refuses it too): every local may be read.
    PyErr_Clear();
    Ref varnames(PyObject_GetAttrString(as_obj(code), "co_varnames"));
    PyErr_Clear();
    for (Py_ssize_t v = 0; varnames && PyTuple_Check(varnames.get()) && v < PyTuple_GET_SIZE(varnames.get()); ++v)
      out.push_back(static_cast<int>(v));
    return out;
  }
  int idx = instruction_at(*ci, offset);
  if (idx < 0) return out;
  const uint64_t* bits = &ci->live_in[static_cast<size_t>(idx) * ci->words];
  for (int v = 0; v < ci->nlocals; ++v)
    if (bits[v / 64] >> (v % 64) & 1) out.push_back(v);
  return out;
}

void clear_resume_caches() {
  auto& infos = info_cache();
  std::vector<PyCodeObject*> codes;
  for (auto& [code, info] : infos) codes.push_back(code);
  infos.clear();
  auto& resumes = resume_cache();
  std::vector<PyObject*> refs;
  for (auto& [key, made] : resumes) {
    refs.push_back(made);
    refs.push_back(as_obj(key.code));
  }
  resumes.clear();
  // Release only after both maps are consistent: a decref may run arbitrary code.
  for (PyCodeObject* c : codes) Py_DECREF(c);
  for (PyObject* o : refs) Py_DECREF(o);
}

}  // namespace ignis::capture
