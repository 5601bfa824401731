// nholo/host/io/output_sink.hpp — the writer thread: every HDF5 call of a run
// after the file's layout is created happens here, in the order it was
// posted, while the integrating thread goes on with the next window.
//
//   OutputSink sink(threaded);
//   sink.post([..] { dataset.write_block(...); });   // runs in order, later
//   sink.acquire(slot); ... sink.post(job releasing slot)  // double buffering
//   sink.drain();                                    // all done; rethrows the
//                                                    // first error of a job
// The HDF5 library (Debian's build) is not thread-safe: one thread owns it,
// so no lock is taken around its calls. A job that throws (a full disk, a
// device fault seen while waiting for a copy) stops the sink: later jobs are
// dropped, and the error reaches the integrating thread at its next post(),
// acquire() or drain(). With threaded = false, jobs run at post() (the
// output-off baseline of the benchmarks and a debugging aid).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace nholo {

class OutputSink {
 public:
  explicit OutputSink(bool threaded = true) : threaded_(threaded) {
    if (threaded_) worker_ = std::thread([this] { loop(); });
  }
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;
  ~OutputSink() {
    if (threaded_) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      worker_.join();
    }
  }

  // Runs job after every job posted before it.
  void post(std::function<void()> job) {
    if (!threaded_) {
      rethrow();
      run(job);
      rethrow();
      return;
    }
    std::unique_lock<std::mutex> lk(mu_);
    if (error_) std::rethrow_exception(error_);
    jobs_.push_back(std::move(job));
    cv_.notify_all();
  }

  // Waits until double-buffer slot s (0 or 1) is no longer being written out.
  void acquire(int s) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return !busy_[s] || error_ != nullptr; });
    if (error_) std::rethrow_exception(error_);
    busy_[s] = true;
  }
  // Called by the job that has written slot s.
  void release(int s) {
    std::lock_guard<std::mutex> lk(mu_);
    busy_[s] = false;
    cv_.notify_all();
  }

  // Waits for every posted job; rethrows the first error.
  void drain() {
    if (threaded_) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return (jobs_.empty() && !running_) || error_ != nullptr; });
    }
    rethrow();
  }
  // Waits for every posted job and forgets an error (after a failed run, to
  // finish the file with what did get written).
  void drain_quietly() {
    if (threaded_) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return (jobs_.empty() && !running_) || error_ != nullptr; });
      jobs_.clear();
    }
    std::lock_guard<std::mutex> lk(mu_);
    error_ = nullptr;
    busy_[0] = busy_[1] = false;
  }
  bool failed() {
    std::lock_guard<std::mutex> lk(mu_);
    return error_ != nullptr;
  }

 private:
  void rethrow() {
    std::lock_guard<std::mutex> lk(mu_);
    if (error_) std::rethrow_exception(error_);
  }
  void run(const std::function<void()>& job) {
    try {
      job();
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
      cv_.notify_all();
    }
  }
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ and nothing left
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      const bool skip = error_ != nullptr;
      running_ = true;
      lk.unlock();
      if (!skip) run(job);
      lk.lock();
      running_ = false;
      cv_.notify_all();
    }
  }

  bool threaded_;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false, stop_ = false;
  bool busy_[2] = {false, false};
  std::exception_ptr error_;
};

}  // namespace nholo
