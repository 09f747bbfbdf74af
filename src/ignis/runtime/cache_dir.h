// The on-disk cache directory and the file operations its entries are
// written and read with.
//
// Note [Cache files are published by rename]
// Every cache file is written under a temporary name in its final directory
// ("<name>.tmp-<pid>-<n>-<random>") and then renamed onto its final name.
// rename() within one directory is atomic: a reader sees either the old file
// or the complete new one, never a partial write, and a file that another
// process has mapped (a loaded kernel) keeps its old contents. A process
// killed mid-write leaves only a temporary file, which no reader ever opens;
// writers delete temporaries older than an hour in the directory they write
// to. Nothing is fsync'ed: a file torn by a power cut is caught by the
// entry's hash check and rebuilt, which is cheaper than syncing every write.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ignis::runtime {

// $IGNIS_CACHE_DIR when set, else $HOME/.cache/ignis.
std::filesystem::path default_cache_dir();

// Creates `dir` (and missing parents) with mode 0700 and checks that it is a
// directory owned by this user that no one else can write. When it is not,
// prints a warning and returns a private directory instead:
// ${TMPDIR:-/tmp}/ignis-<uid> if that passes the same check, else a fresh
// mkdtemp directory. Throws only when no usable directory can be made.
std::filesystem::path open_private_dir(const std::filesystem::path& dir);

// True when `dir` is a directory owned by this user with no group or other
// write permission (what open_private_dir requires).
bool is_private_dir(const std::filesystem::path& dir);

// mkdir -p with mode 0700 for every directory it creates.
void make_dirs(const std::filesystem::path& dir);

// A temporary name next to `final_path`, unique across processes and threads.
std::filesystem::path temp_path_for(const std::filesystem::path& final_path);

// True for names made by temp_path_for().
bool is_temp_name(std::string_view filename);

// Writes `bytes` to a temporary file and renames it onto `path` (see the Note).
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Deletes temporary files in `dir` (not below it) last modified more than
// `age` ago. Errors are ignored: another process may be deleting them too.
void remove_stale_temps(const std::filesystem::path& dir,
                        std::chrono::seconds age = std::chrono::hours(1));

}  // namespace ignis::runtime
