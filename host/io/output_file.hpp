// nholo/host/io/output_file.hpp — the output of one `nholo run` process (a
// whole ensemble or a shard) from its opening to its end: the result PATH,
// the master PATH.partial and its pieces PATH.partial.d/ (io/pieces.hpp),
// all under PATH's lock (io/output_path.hpp) the whole time.
//
//   OutputFile out(cfg, {resume, overwrite, log});  // locked, leftovers gone, decided
//   if (out.complete()) ...        // --resume found PATH complete: nothing to run
//   out.begin_writing();           // --overwrite: the earlier run's files go
//   ... run_model writes out.path() (resuming out.resuming(), out.slice_size())
//   out.commit();                  // every slice finished: PATH is the result
//   and where the run failed, one of: out.abandon(), out.keep_stopped(what),
//   out.keep_failed(what)
//
// Every removal a run makes of its own files is here, so that what a failed
// run leaves is decided in one place: nothing that could pass for a result,
// or the finished slices for --resume.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "host/config/config.hpp"
#include "host/io/output_path.hpp"
#include "host/io/pieces.hpp"

namespace nholo {

class OutputFile {
 public:
  struct Request {
    bool resume = false;     // continue PATH.partial (run --resume)
    bool overwrite = false;  // replace PATH, PATH.partial (run --overwrite)
    // where a line worth telling goes (without "nholo: "); null: nowhere
    std::function<void(const std::string&)> note;
  };

  // Opens cfg.output_path for a run: its folder checked, its lock taken
  // (ConfigError naming the holder), the temporary files of a run killed
  // outright removed, a run stopped in its last step recovered (its master
  // back), and decided: PATH complete already (only with resume: complete()),
  // PATH.partial to continue (resume: resuming(), slice_size()), or a fresh
  // run (without overwrite neither PATH nor PATH.partial may exist). Refusals
  // throw ConfigError naming the file and the way on.
  OutputFile(const RunConfig& cfg, Request req);

  const std::string& path() const { return path_; }
  const std::string& partial() const { return partial_; }
  bool complete() const { return complete_; }
  bool resuming() const { return resuming_; }
  // The slice size of the run resumed (0: a fresh run plans its own).
  int64_t slice_size() const { return slice_size_; }

  // The run is about to write: with --overwrite (without --resume) the
  // earlier run's master and pieces are removed now, once nothing can stop
  // the run before it starts.
  void begin_writing();

  // Every slice finished and PATH written: the master and the pieces go.
  void commit();

  // The run cannot go on with this configuration: nothing that could pass
  // for a result is left (a resumed run keeps what it found).
  void abandon();

  // The run was stopped by a signal while its output was set up. Returns
  // `what` when nothing is kept (a fresh run that finished no slice leaves
  // nothing), else `what` saying that PATH.partial is kept for --resume.
  std::string keep_stopped(const std::string& what);

  // The run failed (an I/O error, a full disk): the finished slices are kept
  // for --resume; a fresh run that finished none leaves nothing. Returns
  // `what`, followed by where the finished slices are kept.
  std::string keep_failed(const std::string& what);

 private:
  bool resume_finds_complete(const RunConfig& cfg) const;
  int64_t check_resumable(const RunConfig& cfg) const;
  int64_t finished_slices() const;
  // (without_waiting: large pieces removed in the background,
  // PieceDir::remove_all_without_waiting)
  void remove_master_and_pieces(bool without_waiting = false);
  void tell(const std::string& line) const;

  Request req_;
  std::string path_, partial_;
  OutputLock lock_;
  PieceDir pieces_;
  bool complete_ = false, resuming_ = false;
  int64_t slice_size_ = 0;
};

}  // namespace nholo
