#include "host/config/sampling.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nholo {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// uniform in (0, 1) from (seed, i, d, k)
double hashed_uniform(uint64_t seed, int64_t i, int d, int k) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<uint64_t>(i));
  h = splitmix64(h ^ (static_cast<uint64_t>(d) << 8 | static_cast<uint64_t>(k)));
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

// Sobol direction numbers: primitive polynomial degree s, coefficients a and
// initial m_k (Joe & Kuo's construction), dimensions 2..16 (dimension 1 is
// the van der Corput sequence).
struct SobolInit {
  int s, a;
  int m[6];
};
const SobolInit kSobol[kSobolMaxDims - 1] = {
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
};

constexpr int kBits = 52;

const std::vector<std::vector<uint64_t>>& directions() {
  static const std::vector<std::vector<uint64_t>> v = [] {
    std::vector<std::vector<uint64_t>> dirs(kSobolMaxDims, std::vector<uint64_t>(kBits));
    for (int k = 0; k < kBits; ++k) dirs[0][k] = uint64_t(1) << (kBits - 1 - k);
    for (int d = 1; d < kSobolMaxDims; ++d) {
      const SobolInit& in = kSobol[d - 1];
      std::vector<uint64_t> m(kBits);
      for (int k = 0; k < in.s; ++k) m[k] = static_cast<uint64_t>(in.m[k]);
      // m_k = 2 a_1 m_{k-1} ^ 4 a_2 m_{k-2} ^ ... ^ 2^s m_{k-s} ^ m_{k-s}
      for (int k = in.s; k < kBits; ++k) {
        uint64_t mk = m[k - in.s] ^ (m[k - in.s] << in.s);
        for (int j = 1; j < in.s; ++j)
          if ((in.a >> (in.s - 1 - j)) & 1) mk ^= m[k - j] << j;
        m[k] = mk;
      }
      for (int k = 0; k < kBits; ++k) dirs[d][k] = m[k] << (kBits - 1 - k);
    }
    return dirs;
  }();
  return v;
}

}  // namespace

double sobol(uint64_t i, int d) {
  const auto& v = directions()[d];
  uint64_t x = 0;
  for (int k = 0; k < kBits && i; ++k, i >>= 1)
    if (i & 1) x ^= v[k];
  return static_cast<double>(x) * 0x1.0p-52;
}

// Acklam's rational approximation refined by one Halley step on erfc.
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

namespace {
// A state file's line without its comment: '#' to the line's end (a whole
// line, or after the values).
std::string without_comment(const std::string& line) {
  return line.substr(0, line.find('#'));
}

// A state file's line that carries data (not blank, not only a comment).
bool is_data_line(const std::string& line) {
  return without_comment(line).find_first_not_of(" \t,\r") != std::string::npos;
}

// The state file opened for reading; when it cannot be, the error names its
// full path and the system's reason.
std::ifstream open_state_file(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  const std::string shown = ec ? path : abs.string();
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("ensemble.file", "cannot read '" + shown + "': a folder, not a file");
  errno = 0;
  std::ifstream f(path);
  if (!f) {
    const int err = errno;
    throw ConfigError("ensemble.file", "cannot read '" + shown + "': " +
                                           (err ? std::strerror(err) : "cannot open the file"));
  }
  return f;
}
}  // namespace

int64_t state_file_rows(const std::string& path) {
  std::ifstream f = open_state_file(path);
  int64_t lines = 0;
  for (std::string line; std::getline(f, line);) lines += is_data_line(line);
  if (lines < 2)
    throw ConfigError("ensemble.file", path + ": expected a header line (q0.<name>, qd0.<name>, "
                                       "lambda0.<name>, params.<name>) and at least one row");
  return lines - 1;
}

namespace {
// The words of a state file's line before its comment (commas and tabs
// separate like blanks).
std::vector<std::string> words(const std::string& text) {
  std::string line = without_comment(text);
  for (char& ch : line)
    if (ch == ',' || ch == '\t') ch = ' ';
  std::istringstream ls(line);
  std::vector<std::string> w;
  for (std::string x; ls >> x;) w.push_back(x);
  return w;
}
}  // namespace

std::vector<std::string> state_file_header(const std::string& path) {
  std::ifstream f = open_state_file(path);
  for (std::string line; std::getline(f, line);) {
    if (!is_data_line(line)) continue;
    std::vector<std::string> header = words(line);
    // each column once: a repeated name would be read from one of its columns only
    for (size_t a = 0; a < header.size(); ++a)
      for (size_t b = a + 1; b < header.size(); ++b)
        if (header[a] == header[b])
          throw ConfigError("ensemble.file",
                            path + ": column '" + header[a] +
                                "' appears twice in the header (columns " + std::to_string(a + 1) +
                                " and " + std::to_string(b + 1) + "); each column may appear once");
    return header;
  }
  return {};
}

std::vector<std::string> for_each_state_row(
    const std::string& path,
    const std::function<bool(int64_t row, const std::vector<double>& values, int64_t line,
                             std::streamoff offset)>& row,
    int64_t first, std::streamoff from, int64_t first_line) {
  std::ifstream f = open_state_file(path);
  std::vector<std::string> header = state_file_header(path);
  if (header.empty())
    throw ConfigError("ensemble.file", path + ": expected a header line (q0.<name>, qd0.<name>, "
                                       "lambda0.<name>, params.<name>) and at least one row");
  bool in_header = from == 0;
  if (from > 0) f.seekg(from);
  std::string line;
  int64_t lineno = from > 0 ? first_line - 1 : 0, r = first;
  std::vector<double> values;
  for (std::streamoff at = f.tellg(); std::getline(f, line); at = f.tellg()) {
    ++lineno;
    if (!is_data_line(line)) continue;
    if (in_header) {  // the header line (read above)
      in_header = false;
      continue;
    }
    values.clear();
    for (const std::string& x : words(line)) {
      char* endp = nullptr;
      const double v = std::strtod(x.c_str(), &endp);
      if (*endp || !std::isfinite(v))
        throw ConfigError("ensemble.file", path + " line " + std::to_string(lineno) + ": '" + x +
                                               "' is not a finite number");
      values.push_back(v);
    }
    if (values.size() != header.size())
      throw ConfigError("ensemble.file", path + " line " + std::to_string(lineno) + ": " +
                                             std::to_string(values.size()) + " values, header has " +
                                             std::to_string(header.size()));
    if (!row(r++, values, lineno, at)) break;
  }
  if (r == 0)
    throw ConfigError("ensemble.file", path + ": expected a header line (q0.<name>, qd0.<name>, "
                                       "lambda0.<name>, params.<name>) and at least one row");
  return header;
}

StateFile read_state_file(const std::string& path) {
  StateFile sf;
  sf.header = for_each_state_row(path, [&](int64_t, const std::vector<double>& v, int64_t line,
                                           std::streamoff) {
    sf.rows.push_back(v);
    sf.lines.push_back(line);
    return true;
  });
  return sf;
}

double grid_value(const Distribution& d, int64_t k) {
  if (d.kind == Distribution::Kind::values) return d.values[k];
  if (d.kind != Distribution::Kind::linspace) return d.a;
  return d.count == 1 ? d.a : d.a + (d.b - d.a) * static_cast<double>(k) / (d.count - 1);
}

std::pair<double, double> distribution_bounds(const Distribution& d) {
  switch (d.kind) {
    case Distribution::Kind::constant: return {d.a, d.a};
    case Distribution::Kind::uniform: {
      // a + (b - a) u with 0 < u < 1: between a and a + (b - a) * 1
      const double hi = d.a + (d.b - d.a) * 1.0;
      return {d.a, std::max(d.b, hi)};
    }
    case Distribution::Kind::normal:
      if (d.b == 0) return {d.a, d.a};
      return {-INFINITY, INFINITY};
    case Distribution::Kind::linspace: {
      const double x0 = grid_value(d, 0), x1 = grid_value(d, d.count - 1);
      return {std::min(x0, x1), std::max(x0, x1)};
    }
    case Distribution::Kind::values: {
      const auto [lo, hi] = std::minmax_element(d.values.begin(), d.values.end());
      return {*lo, *hi};
    }
  }
  return {d.a, d.a};
}

Sampler::Sampler(const RunConfig& cfg, const ModelInfo& mi)
    : sampler_(cfg.sampler), seed_(cfg.seed), size_(cfg.size), n_(mi.n), m_(mi.m) {
  q_given.assign(n_, false);
  qd_given.assign(n_, false);
  // file columns
  std::vector<std::string> header;
  if (sampler_ == SamplerKind::file) {
    // one pass: every row checked, every kFileStride-th row's place kept
    file_ = cfg.file;
    int64_t rows = 0;
    header = for_each_state_row(file_, [&](int64_t r, const std::vector<double>&, int64_t line,
                                           std::streamoff at) {
      if (r % kFileStride == 0) {
        file_offset_.push_back(at);
        file_line_.push_back(line);
      }
      rows = r + 1;
      return true;
    });
    size_ = rows;
  }
  int dim = 0;
  int64_t stride = 1;
  auto add = [&](int group, const std::vector<std::string>& names,
                 const std::map<std::string, Distribution>& given) {
    const std::string prefix = group == 0   ? "q0."
                               : group == 1 ? "qd0."
                               : group == 2 ? "lambda0."
                                            : "params.";
    for (int c = 0; c < static_cast<int>(names.size()); ++c) {
      int column = -1;
      for (size_t h = 0; h < header.size(); ++h)
        if (header[h] == prefix + names[c]) column = static_cast<int>(h);
      auto it = given.find(names[c]);
      if (it == given.end() && column < 0) continue;
      if (it != given.end() && column >= 0)
        throw ConfigError("ensemble." + prefix + names[c], "given both in the config and in the file");
      Spec s{group, c, it != given.end() ? it->second : Distribution(), -1, 1, 1, column};
      if (group == 3) {
        s.index = static_cast<int>(varied_.size());
        varied_.push_back(c);
      }
      if (column < 0 && s.dist.kind != Distribution::Kind::constant) {
        if (sampler_ == SamplerKind::grid) {
          s.length = s.dist.kind == Distribution::Kind::linspace ? s.dist.count
                                                                 : static_cast<int64_t>(s.dist.values.size());
        } else {
          s.dim = dim++;
        }
      }
      specs_.push_back(s);
      if (group == 0) q_given[c] = true;
      if (group == 1) qd_given[c] = true;
    }
  };
  for (const auto& p : mi.params) pnames_.push_back(p.name);
  add(0, mi.coordinates, cfg.q0);
  add(1, mi.coordinates, cfg.qd0);
  add(2, mi.constraints, cfg.lambda0);
  add(3, pnames_, cfg.param_dists);
  add_derived_columns(cfg);
  for (const auto& h : header) {
    bool used = false;
    for (const auto& s : specs_) used = used || (s.column >= 0 && header[s.column] == h);
    if (!used)
      throw ConfigError("ensemble.file", "unknown column '" + h + "' (accepted: q0.<coordinate>, "
                                         "qd0.<coordinate>, lambda0.<constraint>, params.<parameter>)");
  }
  if (sampler_ == SamplerKind::sobol && dim > kSobolMaxDims)
    throw ConfigError("ensemble", "sampler 'sobol' supports at most " + std::to_string(kSobolMaxDims) +
                                      " varying entries, got " + std::to_string(dim));
  // grid strides: the last spec varies fastest
  for (auto it = specs_.rbegin(); it != specs_.rend(); ++it) {
    it->stride = stride;
    stride *= it->length;
  }
}

void Sampler::add_derived_columns(const RunConfig& cfg) {
  if (!cfg.derive_params) return;
  const std::vector<int> sampled = varied_;
  for (int j = 0; j < static_cast<int>(pnames_.size()); ++j) {
    const std::string& name = pnames_[static_cast<size_t>(j)];
    const auto named = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    if (named(cfg.derived_params) && named(cfg.varied_params)) varied_.push_back(j);
  }
  if (varied_.size() == sampled.size()) return;
  // the columns in the model's order: the sampled ones move
  std::sort(varied_.begin(), varied_.end());
  const auto column_of = [&](int j) {
    return static_cast<int>(std::find(varied_.begin(), varied_.end(), j) - varied_.begin());
  };
  for (Spec& s : specs_)
    if (s.group == 3) s.index = column_of(sampled[static_cast<size_t>(s.index)]);
  derive_ = cfg.derive_params;
  for (const std::string& name : pnames_) base_params_.push_back(cfg.params.at(name));
  for (size_t c = 0; c < varied_.size(); ++c)
    derived_column_.push_back(std::find(sampled.begin(), sampled.end(), varied_[c]) ==
                              sampled.end());
}

void Sampler::derive_row(double* row, std::vector<double>& values) const {
  values = base_params_;
  for (size_t c = 0; c < varied_.size(); ++c)
    if (!derived_column_[c]) values[static_cast<size_t>(varied_[c])] = row[c];
  derive_(values);
  for (size_t c = 0; c < varied_.size(); ++c)
    if (derived_column_[c]) row[c] = values[static_cast<size_t>(varied_[c])];
}

double Sampler::value(const Spec& s, int64_t i) const {
  const Distribution& d = s.dist;
  if (d.kind == Distribution::Kind::constant) return d.a;
  if (sampler_ == SamplerKind::grid) return grid_value(d, (i / s.stride) % s.length);
  double u;
  if (sampler_ == SamplerKind::sobol) {
    u = sobol(static_cast<uint64_t>(i) + 1, s.dim);
    u = std::min(std::max(u, 0x1.0p-53), 1 - 0x1.0p-53);
  } else {
    u = hashed_uniform(seed_, i, s.dim, 0);
  }
  if (d.kind == Distribution::Kind::uniform) return d.a + (d.b - d.a) * u;
  // normal
  double z;
  if (sampler_ == SamplerKind::sobol) {
    z = normal_quantile(u);
  } else {
    const double u2 = hashed_uniform(seed_, i, s.dim, 1);
    z = std::sqrt(-2.0 * std::log(u)) * std::cos(2 * M_PI * u2);
  }
  return d.a + d.b * z;
}

namespace {

// v = size zeros, written a megabyte at a time with a look at stop between
// (false: stopped, v unfinished). A slice's first arrays are tens of
// megabytes of new pages; under I/O contention each page the kernel hands
// out may wait for the writeback of dirty ones, and the fill took 0.1-0.4 s
// before a signal was seen.
bool zeros_until_stopped(std::vector<double>& v, int64_t size, const std::atomic<bool>* stop) {
  constexpr int64_t kChunk = int64_t(1) << 17;
  v.clear();
  v.reserve(static_cast<size_t>(size));
  for (int64_t done = 0; done < size; done += kChunk) {
    if (stop && stop->load()) return false;
    v.resize(static_cast<size_t>(std::min(size, done + kChunk)), 0.0);
  }
  return true;
}

}  // namespace

void Sampler::fill(int64_t begin, int64_t end, std::vector<double>& q0, std::vector<double>& qd0,
                   std::vector<double>& lambda0, std::vector<double>* params,
                   const std::atomic<bool>* stop, int threads) const {
  const int64_t count = end - begin;
  const int64_t nv = static_cast<int64_t>(varied_.size());
  // (stopped: the caller sees stop and runs nothing of the slice)
  if (!zeros_until_stopped(q0, count * n_, stop) || !zeros_until_stopped(qd0, count * n_, stop) ||
      !zeros_until_stopped(lambda0, count * m_, stop) ||
      (params && !zeros_until_stopped(*params, count * nv, stop)))
    return;
  auto stopped = [&](int64_t i) { return stop && (i - begin) % 4096 == 0 && stop->load(); };
  auto put = [&](const Spec& s, int64_t i, double v) {
    if (s.group == 0) q0[(i - begin) * n_ + s.index] = v;
    if (s.group == 1) qd0[(i - begin) * n_ + s.index] = v;
    if (s.group == 2) lambda0[(i - begin) * m_ + s.index] = v;
    if (s.group == 3) (*params)[(i - begin) * nv + s.index] = v;
  };
  if (sampler_ == SamplerKind::file && begin < end) {
    // the file's columns of rows [begin, end), read from the nearest kept place
    const int64_t k = begin / kFileStride;
    int64_t last = -1;
    for_each_state_row(
        file_,
        [&](int64_t r, const std::vector<double>& row, int64_t, std::streamoff) {
          if (r >= end || stopped(r)) return false;
          if (r >= begin)
            for (const Spec& s : specs_)
              if (s.column >= 0 && (s.group != 3 || params)) put(s, r, row[s.column]);
          last = r;
          return true;
        },
        k * kFileStride, file_offset_[static_cast<size_t>(k)], file_line_[static_cast<size_t>(k)]);
    if (last != end - 1 && !(stop && stop->load()))
      throw ConfigError("ensemble.file", file_ + " changed while the run read it (row " +
                                             std::to_string(last + 1) + " is missing)");
  }
  std::atomic<bool> halted{false};
  threads = static_cast<int>(std::clamp<int64_t>((end - begin) / 4096, 1, std::max(threads, 1)));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = begin; i < end; ++i) {
    if (halted.load(std::memory_order_relaxed)) continue;
    if (stopped(i)) {
      halted.store(true, std::memory_order_relaxed);
      continue;
    }
    for (const Spec& s : specs_) {
      if (s.group == 3 && !params) continue;
      if (s.column >= 0) continue;  // from the file, above
      put(s, i, value(s, i));
    }
    if (params && derive_) {
      thread_local std::vector<double> values;
      derive_row(&(*params)[(i - begin) * nv], values);
    }
  }
}

}  // namespace nholo
