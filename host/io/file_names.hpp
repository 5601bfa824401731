// nholo/host/io/file_names.hpp — the names of the files and folders a run, a
// shard and `nholo merge` write next to their output PATH, spelled once:
//
//   PATH.partial              the master of a run still going (or stopped)
//   PATH.partial.tmp          the master being (re)written, then renamed
//   PATH.partial.assembling   PATH being assembled from the pieces, then renamed
//   PATH.partial.d/           the pieces (host/io/pieces.hpp), each NAME.tmp
//                             while it is written, and result.h5 (+ .undo),
//                             the result file growing in place
//                             (host/io/in_place_file.hpp, which names them)
//   PATH.merging              `nholo merge`'s output being written, then renamed
//   PATH.lock                 the lock of the run (or merge) writing PATH
//   DIR/STEM.shard-B-E.EXT    the shard of trajectories [B, E) of DIR/STEM.EXT
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace nholo {

// A file being written under a temporary name (renamed when complete).
inline std::string temporary_path(const std::string& path) {
  return path + ".tmp";
}
// The extension of temporary_path (".tmp").
inline const char* temporary_extension() {
  return ".tmp";
}

// The master of a run that is not complete: PATH.partial
inline std::string partial_path(const std::string& path) {
  return path + ".partial";
}
// The suffix partial_path adds (".partial").
inline const char* partial_suffix() {
  return ".partial";
}

// PATH while it is assembled from the pieces: PATH.partial.assembling
inline std::string assembling_path(const std::string& path) {
  return partial_path(path) + ".assembling";
}

// The folder of a run's pieces: PATH.partial.d
inline std::string pieces_dir_path(const std::string& path) {
  return partial_path(path) + ".d";
}

// `nholo merge`'s output while it is written: PATH.merging
inline std::string merging_path(const std::string& path) {
  return path + ".merging";
}

// The lock file of the run writing PATH: PATH.lock
inline std::string lock_path(const std::string& path) {
  return path + ".lock";
}

// The infix of a shard's file name before its range: ".shard-"
inline const char* shard_infix() {
  return ".shard-";
}

// "out.h5" -> "out.shard-1024-2048.h5" (in the folder of path)
inline std::string shard_file_path(const std::string& path, int64_t begin, int64_t end) {
  const std::filesystem::path p(path);
  const std::string tag = shard_infix() + std::to_string(begin) + "-" + std::to_string(end);
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

}  // namespace nholo
