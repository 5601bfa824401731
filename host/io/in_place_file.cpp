// nholo/host/io/in_place_file.cpp — writing the fields straight into the
// result file, and the undo file of its last step (in_place_file.hpp).
#include "host/io/in_place_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "host/io/fd.hpp"
#include "host/io/file_names.hpp"
#include "host/io/h5.hpp"

namespace fs = std::filesystem;

namespace nholo {

namespace {

constexpr char kUndoMagic[16] = "nholo undo v1\n";

// One block into its chunks (InPlaceFile::write), whose places in the file
// are `places` (Dataset::chunk_places: in the order of the chunk grid).
void write_block(const Fd& fd, const h5::Dataset& d, const std::vector<h5::ChunkPlace>& places,
                 const FieldBlock& b, std::vector<double>& buffer) {
  const std::vector<hsize_t> dims = d.dims(), chunk = d.chunk_dims();
  const size_t rank = dims.size();
  const int64_t nc = rank == 3 ? static_cast<int64_t>(dims[2]) : 1;
  const bool fits = (rank == 2 || rank == 3) && chunk.size() == rank && nc == b.components &&
                    (rank == 2 || chunk[2] == dims[2]) && b.count > 0 && b.saves > 0 &&
                    b.row % static_cast<int64_t>(chunk[0]) == 0 &&
                    b.save % static_cast<int64_t>(chunk[1]) == 0 &&
                    b.saves <= static_cast<int64_t>(chunk[1]) &&
                    b.row + b.count <= static_cast<int64_t>(dims[0]) &&
                    b.save + b.saves <= static_cast<int64_t>(dims[1]);
  if (!fits)
    throw std::runtime_error("a window's block of '" + b.path +
                             "' does not lie on the chunks of the result file");
  const int64_t ct = static_cast<int64_t>(chunk[0]), ck = static_cast<int64_t>(chunk[1]);
  const int64_t row_values = b.saves * nc, chunk_row_values = ck * nc;
  const int64_t grid_saves = (static_cast<int64_t>(dims[1]) + ck - 1) / ck;
  for (int64_t r0 = b.row; r0 < b.row + b.count; r0 += ct) {
    const int64_t rows = std::min(ct, b.row + b.count - r0);
    // the chunk (r0 / ct, b.save / ck[, 0]) of the grid
    const std::size_t g = static_cast<std::size_t>(r0 / ct * grid_saves + b.save / ck);
    if (g >= places.size())
      throw std::logic_error("write_block: the chunk places of '" + b.path +
                             "' are not its grid's");
    const h5::ChunkPlace place = places[g];
    const uint64_t bytes = static_cast<uint64_t>(rows * chunk_row_values) * sizeof(double);
    if (bytes > place.bytes)
      throw std::runtime_error("a chunk of '" + b.path + "' in the result file is smaller (" +
                               std::to_string(place.bytes) + " bytes) than its block");
    const double* src = b.data + (r0 - b.row) * row_values;
    if (row_values == chunk_row_values) {
      fd.pwrite_all(src, bytes, place.address);
      fd.start_writeback(place.address, bytes);
      continue;
    }
    // the last window, shorter than a chunk: rows of ck saves
    buffer.assign(static_cast<size_t>(rows * chunk_row_values), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      std::copy(src + r * row_values, src + (r + 1) * row_values,
                buffer.begin() + r * chunk_row_values);
    fd.pwrite_all(buffer.data(), bytes, place.address);
    fd.start_writeback(place.address, bytes);
  }
}

void put_u64(std::string& s, uint64_t v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

uint64_t bytes_checksum(const void* data, std::size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t a = 0, b = 0;
  for (std::size_t i = 0; i < bytes; i += sizeof(uint64_t)) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, std::min(sizeof w, bytes - i));
    a += w;
    b += a;
  }
  return a ^ (b << 32 | b >> 32);
}

uint64_t block_checksum(const double* data, int64_t values) {
  return bytes_checksum(data, static_cast<std::size_t>(values) * sizeof(double));
}

InPlaceFile::InPlaceFile(const PieceDir& pieces) : path_(pieces.path(name())) {}

bool InPlaceFile::exists() const {
  std::error_code ec;
  return fs::is_regular_file(path_, ec);
}

void InPlaceFile::reserve(const std::string& path) {
  const Fd fd(path, O_WRONLY);
  fd.allocate(fd.size());
}

void InPlaceFile::write(const std::vector<FieldBlock>& blocks) const {
  if (blocks.empty()) return;
  const Fd fd(path_, O_WRONLY);
  std::vector<double> buffer;
  {
    const h5::File f = h5::File::open_ro(path_);
    const h5::Group root = f.root();
    for (const FieldBlock& b : blocks) {
      const h5::Dataset d = root.open_dataset(b.path);
      auto known = places_.find(b.path);  // found once per dataset and run
      if (known == places_.end()) known = places_.emplace(b.path, d.chunk_places()).first;
      write_block(fd, d, known->second, b, buffer);
    }
  }
  fd.sync_data();
}

void InPlaceFile::save_undo(const std::vector<std::string>& datasets) const {
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // [address, address + bytes)
  {
    const h5::File f = h5::File::open_ro(path_);
    const h5::Group root = f.root();
    for (const std::string& p : datasets)
      for (const h5::ChunkPlace& c : root.open_dataset(p).chunk_places())
        taken.emplace_back(c.address, c.address + c.bytes);
  }
  std::sort(taken.begin(), taken.end());
  const Fd fd(path_, O_RDONLY);
  const uint64_t size = fd.size();
  std::string undo(kUndoMagic, sizeof kUndoMagic);
  put_u64(undo, size);
  std::string bytes;
  uint64_t at = 0;
  auto save = [&](uint64_t end) {
    end = std::min(end, size);
    if (end <= at) return;
    put_u64(undo, at);
    put_u64(undo, end - at);
    const size_t old = undo.size();
    undo.resize(old + (end - at));
    fd.pread_all(&undo[old], end - at, at);
  };
  for (const auto& [b, e] : taken) {
    save(b);
    at = std::max(at, e);
  }
  save(size);
  const std::string tmp = temporary_path(undo_path());
  {
    const Fd out(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    out.pwrite_all(undo.data(), undo.size(), 0);
  }
  commit_file(tmp, undo_path());
}

bool InPlaceFile::restore_undo() const {
  std::error_code ec;
  if (!fs::is_regular_file(undo_path(), ec)) return false;
  if (!exists()) {  // renamed to PATH already: nothing to undo
    fs::remove(undo_path(), ec);
    return false;
  }
  const Fd in(undo_path(), O_RDONLY);
  const uint64_t total = in.size();
  auto bad = [&] {
    return std::runtime_error("'" + undo_path() + "' is damaged; the result file '" + path_ +
                              "' cannot be restored: start the run again with --overwrite");
  };
  if (total < sizeof kUndoMagic + 8) throw bad();
  std::string undo(total, '\0');
  in.pread_all(undo.data(), total, 0);
  if (std::memcmp(undo.data(), kUndoMagic, sizeof kUndoMagic) != 0) throw bad();
  size_t at = sizeof kUndoMagic;
  auto get = [&] {
    uint64_t v = 0;
    if (at + sizeof v > undo.size()) throw bad();
    std::memcpy(&v, undo.data() + at, sizeof v);
    at += sizeof v;
    return v;
  };
  const uint64_t size = get();
  const Fd fd(path_, O_WRONLY);
  while (at < undo.size()) {
    const uint64_t off = get(), len = get();
    if (len > undo.size() - at) throw bad();
    fd.pwrite_all(undo.data() + at, len, off);
    at += len;
  }
  fd.truncate(size);
  fd.sync();
  fs::remove(undo_path(), ec);
  return true;
}

// ---- RowWriter

struct RowWriter::Open {
  explicit Open(const std::string& path) : fd(path, O_WRONLY), file(h5::File::open_ro(path)) {}
  Fd fd;
  h5::File file;
  // consecutive chunks gathered for one pwrite: their bytes, from `at`
  std::vector<unsigned char> staged;
  uint64_t at = 0;

  void flush() {
    if (staged.empty()) return;
    fd.pwrite_all(staged.data(), staged.size(), at);
    fd.start_writeback(at, staged.size());
    staged.clear();
  }
};

RowWriter::RowWriter(const InPlaceFile& file) : open_(std::make_unique<Open>(file.path())) {}
RowWriter::~RowWriter() = default;

uint64_t RowWriter::write(const std::string& path, int64_t row, int64_t count, const void* data) {
  constexpr std::size_t kStagedBytes = std::size_t(8) << 20;
  const h5::Dataset d = open_->file.root().open_dataset(path);
  const std::vector<hsize_t> dims = d.dims(), chunk = d.chunk_dims();
  bool fits = !dims.empty() && chunk.size() == dims.size() && count > 0 && row >= 0 &&
              row + count <= static_cast<int64_t>(dims[0]);
  uint64_t row_bytes = d.element_bytes();
  for (std::size_t a = 1; fits && a < dims.size(); ++a) {
    fits = chunk[a] == dims[a];
    row_bytes *= dims[a];
  }
  const int64_t ct = fits ? static_cast<int64_t>(chunk[0]) : 1;
  fits = fits && row % ct == 0 && (count % ct == 0 || row + count == static_cast<int64_t>(dims[0]));
  if (!fits)
    throw std::runtime_error("rows [" + std::to_string(row) + ", " + std::to_string(row + count) +
                             ") of '" + path + "' do not lie on the chunks of the result file '" +
                             open_->file.path() + "'");
  const uint64_t raw = static_cast<uint64_t>(ct) * row_bytes;
  const unsigned char* src = static_cast<const unsigned char*>(data);
  std::vector<hsize_t> at(dims.size(), 0);
  for (int64_t r0 = row; r0 < row + count; r0 += ct) {
    const uint64_t bytes = static_cast<uint64_t>(std::min(ct, row + count - r0)) * row_bytes;
    at[0] = static_cast<hsize_t>(r0);
    const h5::ChunkPlace place = d.chunk_place(at);
    if (place.bytes != raw + 4)
      throw std::runtime_error("a chunk of '" + path + "' in the result file '" +
                               open_->file.path() + "' has " + std::to_string(place.bytes) +
                               " bytes, not the " + std::to_string(raw + 4) +
                               " of its values and checksum (a file of another nholo? start "
                               "the run again with --overwrite)");
    auto& staged = open_->staged;
    if (!staged.empty() && place.address != open_->at + staged.size()) open_->flush();
    if (staged.empty()) open_->at = place.address;
    const std::size_t begin = staged.size();
    staged.insert(staged.end(), src, src + bytes);  // a short last chunk: zeros after its rows
    staged.resize(begin + raw, 0);
    const uint32_t sum = h5::fletcher32(staged.data() + begin, raw);
    for (int k = 0; k < 4; ++k) staged.push_back(static_cast<unsigned char>(sum >> (8 * k)));
    src += bytes;
    if (staged.size() >= kStagedBytes) open_->flush();
  }
  open_->flush();
  return bytes_checksum(data, static_cast<std::size_t>(count) * row_bytes);
}

void RowWriter::sync() const {
  open_->fd.sync_data();
}

bool last_step_stopped(const std::string& output_path) {
  std::error_code ec;
  const PieceDir pieces(output_path);
  // (PATH may exist: the result of another configuration that an
  // --overwrite run was to replace with its final rename)
  return !fs::exists(partial_path(output_path), ec) &&
         fs::is_regular_file(pieces.path(InPlaceFile::master_name()), ec);
}

bool recover_last_step(const std::string& output_path) {
  if (!last_step_stopped(output_path)) return false;
  const PieceDir pieces(output_path);
  InPlaceFile(pieces).restore_undo();
  commit_file(pieces.path(InPlaceFile::master_name()), partial_path(output_path));
  fsync_path(pieces.dir(), true);
  return true;
}

}  // namespace nholo
