// nholo/tests/test_output_sink.cpp — the writer thread (host/io/output_sink.hpp):
// jobs run in posting order on one thread other than the poster's; the
// unthreaded sink runs them at post(); a job's error stops the sink (later
// jobs dropped) and reaches post(), acquire() and drain(); drain_quietly()
// forgets it; the two double-buffer slots block acquire() until released;
// the destructor finishes what was posted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "host/io/output_sink.hpp"

using nholo::OutputSink;

namespace {

TEST(OutputSink, JobsRunInPostingOrderOnTheWriterThread) {
  OutputSink sink;
  std::vector<int> done;  // touched by the writer thread only, until drain()
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 1000; ++i)
    sink.post([&done, &threads, i] {
      done.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  sink.drain();
  ASSERT_EQ(done.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(done[i], i);
  for (const auto& id : threads) {
    EXPECT_EQ(id, threads[0]);  // one writer thread
    EXPECT_NE(id, std::this_thread::get_id());
  }
  EXPECT_FALSE(sink.failed());
  // double buffering as the run does it: each job releases the slot it wrote
  std::vector<int> seen;
  for (int i = 0; i < 100; ++i) {
    sink.acquire(i % 2);
    sink.post([&seen, &sink, i] {
      seen.push_back(i);
      sink.release(i % 2);
    });
  }
  sink.drain();
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);
}

TEST(OutputSink, UnthreadedSinkRunsJobsAtPost) {
  OutputSink sink(false);
  int runs = 0;
  std::thread::id where;
  sink.post([&] {
    ++runs;
    where = std::this_thread::get_id();
  });
  EXPECT_EQ(runs, 1);  // before drain()
  EXPECT_EQ(where, std::this_thread::get_id());
  sink.drain();
  // an error is rethrown by the post() that ran the job, and by the next call
  EXPECT_THROW(sink.post([] { throw std::runtime_error("disk full"); }), std::runtime_error);
  EXPECT_TRUE(sink.failed());
  EXPECT_THROW(sink.post([&] { ++runs; }), std::runtime_error);
  EXPECT_EQ(runs, 1);
}

// A job that throws stops the sink: the jobs after it are dropped, and the
// first error reaches the integrating thread (drain, post, acquire).
TEST(OutputSink, FirstErrorStopsTheSinkAndIsRethrown) {
  OutputSink sink;
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<int> before{0}, after{0};
  sink.post([open, &before] {
    open.wait();  // holds the writer until every job below is queued
    ++before;
  });
  sink.post([] { throw std::runtime_error("first error"); });
  sink.post([] { throw std::runtime_error("second error"); });
  sink.post([&after] { ++after; });
  gate.set_value();
  try {
    sink.drain();
    ADD_FAILURE() << "drain() did not rethrow the job's error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "first error");
  }
  EXPECT_EQ(before.load(), 1);
  EXPECT_EQ(after.load(), 0);
  EXPECT_TRUE(sink.failed());
  EXPECT_THROW(sink.post([&after] { ++after; }), std::runtime_error);
  EXPECT_THROW(sink.acquire(0), std::runtime_error);
  EXPECT_THROW(sink.drain(), std::runtime_error);
  EXPECT_EQ(after.load(), 0);
}

// drain_quietly() waits, forgets the error and frees both slots: the sink
// takes jobs again (finishing a file after a failed run).
TEST(OutputSink, DrainQuietlyForgetsTheError) {
  OutputSink sink;
  sink.acquire(1);
  sink.post([] { throw std::runtime_error("device fault"); });
  sink.drain_quietly();
  EXPECT_FALSE(sink.failed());
  int runs = 0;
  sink.acquire(1);  // released by drain_quietly
  sink.post([&runs, &sink] {
    ++runs;
    sink.release(1);
  });
  sink.drain();
  EXPECT_EQ(runs, 1);
}

// acquire(s) waits while slot s is being written out; the other slot is free.
TEST(OutputSink, AcquireWaitsUntilTheSlotIsReleased) {
  OutputSink sink;
  std::atomic<bool> written{false};
  sink.acquire(0);
  sink.post([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    written = true;
    sink.release(0);
  });
  sink.acquire(1);  // does not wait for slot 0
  EXPECT_FALSE(written.load());
  sink.acquire(0);  // returns once the job released it
  EXPECT_TRUE(written.load());
  sink.release(0);
  sink.release(1);
  sink.drain();
}

TEST(OutputSink, DestructorRunsEveryPostedJob) {
  std::atomic<int> runs{0};
  {
    OutputSink sink;
    for (int i = 0; i < 100; ++i)
      sink.post([&runs] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        ++runs;
      });
  }
  EXPECT_EQ(runs.load(), 100);
}

}  // namespace
