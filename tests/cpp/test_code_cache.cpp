// The runtime's compile-and-cache layer: SHA-256, the code cache on disk
// (hits, verification, rebuilds, concurrency across threads and processes)
// and the graph cache. Every test gets a fresh cache directory; a tiny
// kernel compiles in ~0.1-0.3 s, so the tests compile as few as they can.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/code_cache.h"
#include "ignis/runtime/graph_cache.h"
#include "ignis/runtime/sha256.h"
#include "ignis/runtime/toolchain.h"

extern char** environ;

using namespace ignis;
using namespace ignis::runtime;
namespace fs = std::filesystem;

namespace {

const char* kAddSource = "extern \"C\" int add(int a, int b) { return a + b; }\n";

std::string kernel_returning(int v) {
  return "extern \"C\" int value() { return " + std::to_string(v) + "; }\n";
}

fs::path make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "ignis-test-cache-XXXXXX").string();
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

std::string slurp(const fs::path& p) { return read_file(p).value_or(""); }

void overwrite(const fs::path& p, const std::string& bytes) {
  // In place, like a disk error would (not a rename).
  int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  ::close(fd);
}

// The files of the bucket directory holding `key`, by name.
std::set<std::string> bucket_files(const CodeCache& cache, const std::string& key) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(cache.entry_paths(key).so.parent_path()))
    names.insert(e.path().filename());
  return names;
}

class CodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  CodeCacheConfig config() const {
    CodeCacheConfig c;
    c.dir = dir_;
    return c;
  }
  // A one-entry cache is what a correct concurrent build leaves behind.
  void expect_single_valid_entry(const std::string& key) {
    CodeCache fresh(config());
    EXPECT_EQ(bucket_files(fresh, key),
              (std::set<std::string>{key + ".so", key + ".meta", key + ".cpp"}));
    fresh.build(kAddSource);
    EXPECT_EQ(fresh.stats().compiles, 0u);
    EXPECT_EQ(fresh.stats().disk_hits, 1u);
  }
  fs::path dir_;
};

}  // namespace

// ---- SHA-256 -----------------------------------------------------------------

TEST(Sha256, Fips180Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjk"
                       "lmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 56-byte padding limit and the 64-byte block
  // (expected values from coreutils' sha256sum).
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (auto [n, hex] : cases) EXPECT_EQ(sha256_hex(std::string(n, 'a')), hex) << n;
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += char(i * 7 + 3);
  for (size_t chunk : {1, 3, 63, 64, 65, 200}) {
    Sha256 h;
    for (size_t i = 0; i < data.size(); i += chunk)
      h.update(std::string_view(data).substr(i, chunk));
    EXPECT_EQ(h.hex_digest(), sha256_hex(data)) << chunk;
  }
  // Fields are length-prefixed: moving a byte between two fields changes the hash.
  EXPECT_NE(Sha256().update_field("ab").update_field("c").hex_digest(),
            Sha256().update_field("a").update_field("bc").hex_digest());
}

// ---- toolchain ---------------------------------------------------------------

TEST(CodeCacheToolchain, Detects) {
  const Toolchain& t = default_toolchain();
  ASSERT_FALSE(t.compiler.empty()) << "no C++ compiler on PATH";
  EXPECT_FALSE(t.version.empty());
  EXPECT_FALSE(t.cpu.arch.empty());
  EXPECT_GE(t.cpu.vector_bits, 128);
  if (t.cpu.has("avx512f")) {
    EXPECT_EQ(t.cpu.vector_bits, 512);
  }
  ASSERT_FALSE(t.include_dirs.empty());
  EXPECT_TRUE(fs::exists(fs::path(t.include_dirs[0]) / "ignis/kernels/scalar_ops.h"));
  EXPECT_NE(t.fingerprint().find(t.version), std::string::npos);
}

// ---- the code cache ----------------------------------------------------------

TEST_F(CodeCacheTest, CompilesLoadsAndHitsMemory) {
  CodeCache cache(config());
  LoadedLibrary lib = cache.load_or_compile(kAddSource);
  EXPECT_EQ(lib.function<int(int, int)>("add")(2, 40), 42);
  EXPECT_EQ(cache.stats().compiles, 1u);
  LoadedLibrary again = cache.load_or_compile(kAddSource);
  EXPECT_EQ(again.symbol("add"), lib.symbol("add"));
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  EXPECT_EQ(lib.find_symbol("missing"), nullptr);
  EXPECT_THROW(lib.symbol("missing"), Error);

  // The entry on disk: <dir>/<key[0:2]>/<key>.{so,meta,cpp}, private to the user.
  std::string key = cache.key(kAddSource);
  EXPECT_EQ(lib.path(), cache.entry_paths(key).so.string());
  EXPECT_EQ(slurp(cache.entry_paths(key).source), kAddSource);
  EXPECT_TRUE(is_private_dir(dir_));
}

TEST_F(CodeCacheTest, NewCacheHitsDiskAndLoadsByKey) {
  std::string key;
  {
    CodeCache first(config());
    first.build(kAddSource);  // on disk, not loaded
    key = first.key(kAddSource);
  }
  CodeCache second(config());
  EXPECT_EQ(second.load_or_compile(kAddSource).function<int(int, int)>("add")(1, 2), 3);
  EXPECT_EQ(second.stats().compiles, 0u);
  EXPECT_EQ(second.stats().disk_hits, 1u);

  CodeCache third(config());
  auto lib = third.load_cached(key);
  ASSERT_TRUE(lib.has_value());
  EXPECT_EQ(lib->function<int(int, int)>("add")(5, 6), 11);
  EXPECT_FALSE(third.load_cached(std::string(64, 'a')).has_value());
  EXPECT_FALSE(third.load_cached("../../etc/passwd").has_value());
  EXPECT_EQ(third.stats().compiles, 0u);
}

TEST_F(CodeCacheTest, KeyCoversSourceOptionsToolchainAndHeaders) {
  CodeCache cache(config());
  std::string base = cache.key(kAddSource);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(cache.key(kAddSource), base);
  EXPECT_NE(cache.key(std::string(kAddSource) + " "), base);
  CompileOptions no_omp;
  no_omp.openmp = false;
  EXPECT_NE(cache.key(kAddSource, no_omp), base);
  CompileOptions defines;
  defines.extra_flags = {"-DX=1"};
  EXPECT_NE(cache.key(kAddSource, defines), base);
  CompileOptions labelled;
  labelled.name = "kernel_0";  // a label only
  EXPECT_EQ(cache.key(kAddSource, labelled), base);

  CodeCacheConfig other = config();
  other.toolchain = default_toolchain();
  other.toolchain->flags.push_back("-O1");
  EXPECT_NE(CodeCache(other).key(kAddSource), base);
  other.toolchain = default_toolchain();
  other.toolchain->cpu.features.push_back("imaginary_isa");
  EXPECT_NE(CodeCache(other).key(kAddSource), base);

  // A project header is hashed by content, through nested includes, wherever
  // the include directory is.
  fs::path inc = dir_ / "include";
  fs::create_directories(inc / "sub");
  write_file_atomic(inc / "top.h", "#include \"sub/inner.h\"\n");
  write_file_atomic(inc / "sub" / "inner.h", "#define VALUE 1\n");
  CompileOptions with_inc;
  with_inc.include_dirs = {inc.string()};
  std::string src = "#include \"top.h\"\nextern \"C\" int value() { return VALUE; }\n";
  std::string k1 = cache.key(src, with_inc);
  EXPECT_EQ(cache.key(src, with_inc), k1);
  write_file_atomic(inc / "sub" / "inner.h", "#define VALUE 22\n");
  std::string k2 = cache.key(src, with_inc);
  EXPECT_NE(k2, k1);
  fs::path moved = dir_ / "moved";
  fs::rename(inc, moved);
  with_inc.include_dirs = {moved.string()};
  EXPECT_EQ(cache.key(src, with_inc), k2);
  EXPECT_EQ(cache.load_or_compile(src, with_inc).function<int()>("value")(), 22);
}

TEST_F(CodeCacheTest, BadEntriesAreRebuiltNeverTrusted) {
  std::string key, good_so, good_meta;
  CodeCache::EntryPaths p;
  {
    CodeCache cache(config());
    cache.build(kAddSource);
    key = cache.key(kAddSource);
    p = cache.entry_paths(key);
    good_so = slurp(p.so);
    good_meta = slurp(p.meta);
    ASSERT_GT(good_so.size(), 1000u);
  }
  struct Damage {
    const char* what;
    std::function<void()> apply;
  };
  std::string flipped = good_so;
  flipped[flipped.size() / 2] ^= 0x10;
  const Damage damages[] = {
      {"truncated .so", [&] { overwrite(p.so, good_so.substr(0, good_so.size() / 3)); }},
      {"flipped byte in .so", [&] { overwrite(p.so, flipped); }},
      {"deleted .meta", [&] { fs::remove(p.meta); }},
      {"truncated .meta", [&] { overwrite(p.meta, good_meta.substr(0, good_meta.size() - 8)); }},
  };
  for (const auto& d : damages) {
    d.apply();
    CodeCache cache(config());
    cache.build(kAddSource);
    EXPECT_EQ(cache.stats().compiles, 1u) << d.what;
    EXPECT_EQ(cache.stats().disk_hits, 0u) << d.what;
    EXPECT_EQ(cache.stats().rejected, 1u) << d.what;
    // The compiler gets the same file name and flags each time, so a rebuild
    // is byte-identical (what makes racing writers harmless).
    EXPECT_EQ(slurp(p.so), good_so) << d.what;
    EXPECT_EQ(slurp(p.meta), good_meta) << d.what;
  }
  CodeCache cache(config());
  EXPECT_EQ(cache.load_or_compile(kAddSource).function<int(int, int)>("add")(20, 22), 42);
  EXPECT_EQ(cache.stats().disk_hits, 1u);
}

TEST_F(CodeCacheTest, CompileErrorsThrowWithTheCompilerOutput) {
  CodeCache cache(config());
  CompileOptions options;
  options.name = "broken_kernel";
  const std::string bad = "extern \"C\" int f() { return undeclared_name; }\n";
  try {
    cache.load_or_compile(bad, options);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("broken_kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undeclared_name"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cache.entry_paths(cache.key(bad, options)).source.string()),
              std::string::npos)
        << msg;
  }
  auto p = cache.entry_paths(cache.key(bad, options));
  EXPECT_EQ(slurp(p.source), bad);  // kept for inspection
  EXPECT_FALSE(fs::exists(p.so));
  EXPECT_FALSE(fs::exists(p.meta));
  EXPECT_EQ(bucket_files(cache, cache.key(bad, options)).size(), 1u);  // no temporaries left
}

TEST_F(CodeCacheTest, ThreadsSharingACacheCompileOnce) {
  CodeCache cache(config());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      if (cache.load_or_compile(kAddSource).function<int(int, int)>("add")(1, 1) == 2) ok++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(cache.stats().compiles, 1u);
  expect_single_valid_entry(cache.key(kAddSource));
}

TEST_F(CodeCacheTest, ThreadsWithSeparateCachesRaceSafely) {
  // Separate CodeCache objects share nothing but the directory: they race
  // on the files the way processes do.
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      CodeCache cache(config());
      if (cache.load_or_compile(kAddSource).function<int(int, int)>("add")(2, 2) == 4) ok++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  expect_single_valid_entry(CodeCache(config()).key(kAddSource));
}

// Run by ProcessesCompileConcurrently in child processes; skipped otherwise.
TEST(CodeCacheChild, CompileAdd) {
  const char* dir = std::getenv("IGNIS_TEST_CHILD_CACHE");
  if (!dir) GTEST_SKIP() << "only run as a child of CodeCache.ProcessesCompileConcurrently";
  CodeCacheConfig c;
  c.dir = dir;
  CodeCache cache(c);
  ASSERT_EQ(cache.load_or_compile(kAddSource).function<int(int, int)>("add")(3, 4), 7);
}

TEST_F(CodeCacheTest, ProcessesCompileConcurrently) {
  // The test binary itself, filtered to CodeCacheChild.CompileAdd.
  std::string self = fs::read_symlink("/proc/self/exe");
  std::string filter = "--gtest_filter=CodeCacheChild.CompileAdd";
  std::string env_var = "IGNIS_TEST_CHILD_CACHE=" + dir_.string();
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(env_var.data());
  envp.push_back(nullptr);
  char* argv[] = {self.data(), filter.data(), nullptr};
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    pid_t pid;
    ASSERT_EQ(::posix_spawn(&pid, self.c_str(), &quiet, nullptr, argv, envp.data()), 0);
    children.push_back(pid);
  }
  posix_spawn_file_actions_destroy(&quiet);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  expect_single_valid_entry(CodeCache(config()).key(kAddSource));
}

TEST_F(CodeCacheTest, TemporaryFilesAreNeverTrustedAndOldOnesAreRemoved) {
  CodeCache cache(config());
  std::string key = cache.key(kAddSource);
  auto p = cache.entry_paths(key);
  make_dirs(p.so.parent_path());
  // What a writer killed mid-compile leaves: a partial library and .meta
  // under temporary names, one old and one recent.
  fs::path old_tmp = temp_path_for(p.so), new_tmp = temp_path_for(p.meta);
  write_file_atomic(old_tmp, "\x7f" "ELF partial");
  write_file_atomic(new_tmp, "ignis-code-cache 1\n");
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_EQ(cache.load_or_compile(kAddSource).function<int(int, int)>("add")(1, 2), 3);
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_EQ(cache.stats().rejected, 0u);
  EXPECT_FALSE(fs::exists(old_tmp));  // stale: removed
  EXPECT_TRUE(fs::exists(new_tmp));   // may belong to a live writer: kept, ignored
}

// Note [A precompiled header changes speed, never code]: the first compile
// with a prelude starts the .gch's build and goes on without it; later ones
// read it and produce the same bytes; a damaged .gch costs a recompile, never
// a wrong or failed build.
TEST_F(CodeCacheTest, PrecompiledPreludesChangeSpeedNeverBytes) {
  CompileOptions with;
  with.prelude = "#include <cmath>\n#include <vector>\n";
  auto source = [&](int v) {
    return with.prelude + "extern \"C\" double root() { std::vector<double> a{" +
           std::to_string(v) + "}; return std::sqrt(a[0]); }\n";
  };
  CodeCache cache(config());
  if (!cache.precompiled_headers().enabled()) GTEST_SKIP() << "no PCHs with this compiler";
  EXPECT_EQ(cache.load_or_compile(source(4), with).function<double()>("root")(), 2.0);
  EXPECT_EQ(cache.stats().precompiled, 0u);  // the .gch was still being built
  cache.precompiled_headers().wait_for_builds();
  EXPECT_EQ(cache.precompiled_headers().builds(), 1);
  std::vector<fs::path> gch;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "pch"))
    if (e.path().extension() == ".gch") gch.push_back(e.path());
  ASSERT_EQ(gch.size(), 1u);

  // Read precompiled: the same library, byte for byte, as a plain compile.
  std::string key = cache.key(source(9), with);
  EXPECT_EQ(key, cache.key(source(9)));  // the prelude is not in the key
  EXPECT_EQ(cache.load_or_compile(source(9), with).function<double()>("root")(), 3.0);
  EXPECT_EQ(cache.stats().precompiled, 1u);
  std::string precompiled = slurp(cache.entry_paths(key).so);
  fs::remove(cache.entry_paths(key).meta);
  CodeCache plain(config());
  plain.build(source(9));
  EXPECT_EQ(plain.stats().precompiled, 0u);
  EXPECT_EQ(slurp(plain.entry_paths(key).so), precompiled);

  // A source that does not compile fails the same with or without the .gch
  // (it is compiled again without) and leaves the .gch alone.
  EXPECT_THROW(cache.load_or_compile(with.prelude + "int f() { return undeclared; }\n", with),
               Error);
  EXPECT_EQ(cache.precompiled_headers().discards(), 0);
  EXPECT_TRUE(fs::exists(gch[0]));

  // A torn .gch: GCC refuses it, the compile runs again without it, and the
  // .gch is discarded (the next compile that wants it builds it again).
  std::string whole = slurp(gch[0]);
  overwrite(gch[0], whole.substr(0, whole.size() / 4));
  CodeCache damaged(config());
  EXPECT_EQ(damaged.load_or_compile(source(16), with).function<double()>("root")(), 4.0);
  EXPECT_EQ(damaged.stats().compiles, 2u);
  EXPECT_EQ(damaged.stats().precompiled, 0u);
  EXPECT_EQ(damaged.precompiled_headers().discards(), 1);
  EXPECT_FALSE(fs::exists(gch[0]));
}

TEST_F(CodeCacheTest, CompileManyCompilesMissesInParallel) {
  CodeCache cache(config());
  std::vector<std::string> sources = {kernel_returning(1), kernel_returning(2),
                                      kernel_returning(3), kernel_returning(1)};
  std::vector<CompileProgress> reports;
  auto libs = cache.compile_many(sources, {},
                                 [&](const CompileProgress& p) { reports.push_back(p); });
  ASSERT_EQ(libs.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(libs[i].function<int()>("value")(), int(i) + 1);
  EXPECT_EQ(libs[3].symbol("value"), libs[0].symbol("value"));
  EXPECT_EQ(cache.stats().compiles, 3u);  // the duplicate is compiled once
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().done, 3u);
  EXPECT_EQ(reports.back().total, 3u);
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_GT(reports[i].done, reports[i - 1].done);

  reports.clear();
  auto again = cache.compile_many(sources, {}, [&](const CompileProgress& p) {
    reports.push_back(p);
  });
  EXPECT_EQ(again[2].function<int()>("value")(), 3);
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(cache.stats().compiles, 3u);

  // A failing source fails the batch; the others are still built.
  std::vector<std::string> mixed = {kernel_returning(4), "int broken("};
  EXPECT_THROW(cache.compile_many(mixed), Error);
  EXPECT_TRUE(fs::exists(cache.entry_paths(cache.key(mixed[0])).meta));
}

TEST_F(CodeCacheTest, CompileManyStopsWhenProgressThrows) {
  // An interrupted caller: compiles not yet started are cancelled.
  CodeCacheConfig c = config();
  c.max_parallel = 1;
  CodeCache cache(c);
  std::vector<std::string> sources = {kernel_returning(5), kernel_returning(6),
                                      kernel_returning(7)};
  EXPECT_THROW(cache.compile_many(sources, {},
                                  [](const CompileProgress&) { throw std::runtime_error("stop"); }),
               std::runtime_error);
  EXPECT_LE(cache.stats().compiles, 2u);  // the one reported, and perhaps the next one started
}

TEST_F(CodeCacheTest, UnsafeDirectoryFallsBackToAPrivateOne) {
  fs::path shared = dir_ / "shared";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 0777);
  // The fallback goes under $TMPDIR; keep it inside this test's directory.
  const char* old_tmp = std::getenv("TMPDIR");
  std::string saved = old_tmp ? old_tmp : "";
  ::setenv("TMPDIR", dir_.c_str(), 1);
  CodeCacheConfig c;
  c.dir = shared;
  CodeCache cache(c);
  if (old_tmp) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
  EXPECT_NE(cache.dir(), shared);
  EXPECT_EQ(cache.dir().parent_path(), dir_);
  EXPECT_TRUE(is_private_dir(cache.dir()));

  // A directory the cache creates itself is private.
  fs::path fresh = dir_ / "a" / "b";
  c.dir = fresh;
  EXPECT_EQ(CodeCache(c).dir(), fresh);
  EXPECT_EQ(fs::status(fresh).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(CodeCacheTest, DefaultDirectoryFollowsTheEnvironment) {
  const char* old = std::getenv("IGNIS_CACHE_DIR");
  std::string saved = old ? old : "";
  ::setenv("IGNIS_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_EQ(default_cache_dir(), dir_);
  ::unsetenv("IGNIS_CACHE_DIR");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(default_cache_dir(), fs::path(home) / ".cache" / "ignis");
  }
  if (old) ::setenv("IGNIS_CACHE_DIR", saved.c_str(), 1);
}

// ---- the graph cache ---------------------------------------------------------

TEST_F(CodeCacheTest, GraphCacheStoresVerifiesAndKeysOnTheToolchain) {
  CodeCache code(config());
  GraphCache graphs(code);
  std::string meta("wrapper\0metadata", 16);
  EXPECT_FALSE(graphs.get("g1").has_value());
  graphs.put("g1", {std::string(64, 'c'), meta});
  auto e = GraphCache(CodeCache(config())).get("g1");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code_key, std::string(64, 'c'));
  EXPECT_EQ(e->metadata, meta);
  EXPECT_FALSE(graphs.get("g2").has_value());

  // Another toolchain does not see the entry.
  CodeCacheConfig other = config();
  other.toolchain = default_toolchain();
  other.toolchain->version += " (patched)";
  EXPECT_FALSE(GraphCache(CodeCache(other)).get("g1").has_value());

  // Damaged files are misses; a put replaces them.
  fs::path path = graphs.path_for("g1");
  std::string good = slurp(path);
  std::string flipped = good;
  flipped[good.size() / 2] ^= 1;
  for (const std::string& bad : {good.substr(0, good.size() - 1), flipped, std::string()}) {
    overwrite(path, bad);
    EXPECT_FALSE(graphs.get("g1").has_value());
  }
  graphs.put("g1", {"k2", ""});
  ASSERT_TRUE(graphs.get("g1").has_value());
  EXPECT_EQ(graphs.get("g1")->code_key, "k2");
}
