// nholo/host/run/progress.hpp — progress output: a bar on a terminal (trajectories
// done, trajectories/s, ETA), plain log lines otherwise, nothing when quiet.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace nholo {

// A run's progress as another thread reads it while the run goes on (the
// Python module's progress bar): work units done of total, stored at every
// update whether or not anything is printed.
struct ProgressCounter {
  std::atomic<int64_t> done{0}, total{0};
};

class Progress {
 public:
  // total work units; units_per_trajectory converts the rate to trajectories/s
  Progress(int64_t total, bool quiet, bool tty, double units_per_trajectory = 1.0,
           std::FILE* out = stderr)
      : total_(total), quiet_(quiet), tty_(tty), per_traj_(units_per_trajectory), out_(out),
        start_(clock::now()), last_(start_) {}

  // `done` work units of `total` finished
  void update(int64_t done, const std::string& what) {
    if (counter_) {
      counter_->total.store(total_);
      counter_->done.store(done);
    }
    if (quiet_) return;
    const auto now = clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    const bool final = done >= total_;
    if (!final && since_last < (tty_ ? 0.2 : 10.0)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - start_).count();
    const double frac = total_ > 0 ? static_cast<double>(done) / total_ : 1.0;
    const double rate = el > 0 ? done / el : 0.0;
    const double eta = rate > 0 ? (total_ - done) / rate : 0.0;
    const double traj_rate = rate / per_traj_;
    if (tty_) {
      const int width = 30, fill = static_cast<int>(frac * width);
      std::string bar(fill, '#');
      bar.resize(width, '.');
      std::fprintf(out_, "\r[%s] %5.1f%%  %s  %.3g traj/s  ETA %s   ", bar.c_str(), 100 * frac,
                   what.c_str(), traj_rate, format_seconds(eta).c_str());
      if (final) std::fprintf(out_, "\n");
    } else {
      std::fprintf(out_, "nholo: %5.1f%% %s, %.3g traj/s, elapsed %s, ETA %s\n", 100 * frac,
                   what.c_str(), traj_rate, format_seconds(el).c_str(), format_seconds(eta).c_str());
    }
    std::fflush(out_);
  }
  void message(const std::string& s) {
    if (quiet_) return;
    if (tty_) std::fprintf(out_, "\r%-100s\r", "");
    std::fprintf(out_, "nholo: %s\n", s.c_str());
    std::fflush(out_);
  }
  // Where update() also stores its count (nullptr: nowhere).
  void report_to(ProgressCounter* c) {
    counter_ = c;
    if (c) c->total.store(total_);
  }
  double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

  static std::string format_seconds(double s) {
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
    else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(s / 60) % 60);
    return buf;
  }

 private:
  using clock = std::chrono::steady_clock;
  int64_t total_;
  bool quiet_, tty_;
  double per_traj_;
  std::FILE* out_;
  ProgressCounter* counter_ = nullptr;
  clock::time_point start_, last_;
};

}  // namespace nholo
