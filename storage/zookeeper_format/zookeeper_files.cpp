// One file: ZooKeeper's snapshots, logs and epoch files share the jute reader below (offsets in
// every refusal, Adler-32 seals, bounded lengths) and the txn decoding both the log and a
// snapshot's digest check use; split, each part would carry that reader again.
#include "storage/zookeeper_format/zookeeper_files.hpp"

#include <fmt/format.h>
#include <snappy.h>
#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace warden::storage::zookeeper_format {

namespace {
namespace fs = std::filesystem;

// Bounds on what a file may claim, so that a damaged length is refused instead of allocated:
// a znode's data or a txn record is bounded by jute.maxbuffer (1 MB by default; operators raise
// it, seldom past tens of MB), a snappy block by snappy-java's 32 KB default.
constexpr int32_t max_record = 256 << 20;
constexpr uint32_t max_snappy_block = 64u << 20;
constexpr int32_t max_count = 1 << 30;  // sessions, ACL lists, ACLs in one list

// Bytes of a file, decompressed as its name says. read() returns 0 only at the end.
class Source {
 public:
  virtual ~Source() = default;
  virtual size_t read(char* out, size_t n) = 0;
};

class PlainSource final : public Source {
 public:
  explicit PlainSource(const std::string& path) : in_(path, std::ios::binary) {
    if (!in_) throw FormatError(path + ": cannot be read");
  }
  size_t read(char* out, size_t n) override {
    in_.read(out, static_cast<std::streamsize>(n));
    return static_cast<size_t>(in_.gcount());
  }

 private:
  std::ifstream in_;
};

class GzipSource final : public Source {
 public:
  explicit GzipSource(const std::string& path) : file_(path), path_(path) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw FormatError(path + ": zlib cannot start");
  }
  ~GzipSource() override { inflateEnd(&z_); }
  size_t read(char* out, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n && !ended_) {
      if (z_.avail_in == 0) {
        size_t got = file_.read(in_, sizeof in_);
        if (got == 0) throw FormatError(fmt::format("{}: offset {}: the gzip stream is cut short", path_, z_.total_in));
        z_.next_in = reinterpret_cast<Bytef*>(in_);
        z_.avail_in = static_cast<uInt>(got);
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc != Z_OK) {
        throw FormatError(fmt::format("{}: offset {}: not a valid gzip stream ({})", path_, z_.total_in,
                                      z_.msg ? z_.msg : "zlib error"));
      }
    }
    return n - z_.avail_out;
  }

 private:
  PlainSource file_;
  std::string path_;
  z_stream z_{};
  char in_[1 << 16];
  bool ended_ = false;
};

// snappy-java's stream (SnappyOutputStream): an 8-byte magic, two big-endian ints (version,
// oldest compatible version), then blocks of a big-endian length and a raw snappy block.
class SnappySource final : public Source {
 public:
  explicit SnappySource(const std::string& path) : file_(path), path_(path) {
    std::error_code ec;
    size_ = fs::file_size(path, ec);
  }
  size_t read(char* out, size_t n) override {
    while (pos_ == block_.size()) {
      if (!next_block()) return 0;
    }
    size_t k = std::min(n, block_.size() - pos_);
    std::copy_n(block_.data() + pos_, k, out);
    pos_ += k;
    return k;
  }

 private:
  bool exact(char* out, size_t n, bool end_ok) {
    size_t got = 0;
    while (got < n) {
      size_t k = file_.read(out + got, n - got);
      if (k == 0) break;
      got += k;
    }
    offset_ += got;
    if (got == n) return true;
    if (got == 0 && end_ok) return false;
    throw FormatError(fmt::format("{}: offset {}: the snappy stream is cut short", path_, offset_));
  }
  static uint32_t be32(const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return (uint32_t(u[0]) << 24) | (uint32_t(u[1]) << 16) | (uint32_t(u[2]) << 8) | u[3];
  }
  bool next_block() {
    static constexpr char magic[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', '\0'};
    char head[8];
    uint64_t at = offset_;
    if (!exact(head, 4, header_)) return false;
    // The stream's header first; snappy-java also takes one again where streams were joined
    // (a block length never starts as the magic does: it would be past max_snappy_block).
    if (!header_ || std::equal(head, head + 4, magic)) {
      exact(head + 4, 4, false);
      if (!std::equal(head, head + 8, magic))
        throw FormatError(fmt::format("{}: offset {}: not a snappy-java stream (its magic differs)", path_, at));
      char versions[8];
      exact(versions, 8, false);
      header_ = true;
      return true;  // the caller asks again
    }
    uint32_t len = be32(head);
    if (len > max_snappy_block || offset_ + len > size_)
      throw FormatError(fmt::format("{}: offset {}: a snappy block of {} bytes{}", path_, offset_ - 4, len,
                                    len > max_snappy_block ? "" : " runs past the end (cut short?)"));
    compressed_.resize(len);
    exact(compressed_.data(), len, false);
    size_t plain = 0;
    if (!snappy::GetUncompressedLength(compressed_.data(), compressed_.size(), &plain) || plain > max_snappy_block ||
        !snappy::Uncompress(compressed_.data(), compressed_.size(), &block_))
      throw FormatError(fmt::format("{}: offset {}: a snappy block does not decompress", path_, offset_ - len));
    pos_ = 0;
    return true;
  }

  PlainSource file_;
  std::string path_;
  bool header_ = false;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;  // the file's: no block is read (or allocated) past it
  std::string compressed_, block_;
  size_t pos_ = 0;
};

// A jute vector<ACL>, from either reader below (a file streamed, or one record's bytes).
template <class In>
wire::AclList read_acl_list(In& in) {
  wire::AclList acl;
  int32_t n = in.get_count("an ACL list's count", 12);
  for (int32_t i = 0; i < n; ++i) {
    wire::Acl a;
    a.perms = in.get_int("an ACL's permissions");
    a.id.scheme = in.get_string("an ACL's scheme");
    a.id.id = in.get_string("an ACL's id");
    acl.push_back(std::move(a));
  }
  return acl;
}

// Jute over a Source: buffered, with the offset of the next byte and the Adler-32 of every byte
// taken so far (ZooKeeper's snapshot checksum). Every shortfall throws, naming what was read.
class JuteIn {
 public:
  JuteIn(std::unique_ptr<Source> src, std::string path, bool compressed)
      : src_(std::move(src)), path_(std::move(path)), compressed_(compressed) {}

  [[noreturn]] void fail(uint64_t at, const std::string& why) const {
    throw FormatError(fmt::format("{}: offset {}{}: {}", path_, at, compressed_ ? " of its uncompressed content" : "",
                                  why));
  }
  uint64_t offset() const { return offset_; }
  uint32_t checksum() const { return static_cast<uint32_t>(adler_); }
  bool at_end() { return !fill(1); }

  int32_t get_int(const char* what) {
    need(4, what);
    auto v = static_cast<int32_t>(be(4));
    return v;
  }
  int64_t get_long(const char* what) {
    need(8, what);
    return static_cast<int64_t>(be(8));
  }
  bool get_bool(const char* what) {
    need(1, what);
    return take(1)[0] != 0;
  }
  wire::Bytes get_buffer(const char* what) {
    uint64_t at = offset_;
    int32_t n = get_int(what);
    if (n == -1) return std::nullopt;
    if (n < -1 || n > max_record) fail(at, fmt::format("{} claims {} bytes", what, n));
    need(static_cast<size_t>(n), what);
    return std::string(take(static_cast<size_t>(n)));
  }
  std::string get_string(const char* what) {
    auto b = get_buffer(what);
    return b ? std::move(*b) : std::string();
  }
  int32_t get_count(const char* what, size_t /*min_entry_bytes*/ = 0) {
    uint64_t at = offset_;
    int32_t n = get_int(what);
    if (n < -1 || n > max_count) fail(at, fmt::format("{} claims {} entries", what, n));
    return n < 0 ? 0 : n;
  }

 private:
  // Makes `n` bytes available; false when the source ends first.
  bool fill(size_t n) {
    if (buf_.size() - pos_ >= n) return true;
    buf_.erase(0, pos_);
    pos_ = 0;
    char chunk[1 << 16];
    while (buf_.size() < n) {
      size_t got = src_->read(chunk, sizeof chunk);
      if (got == 0) return false;
      buf_.append(chunk, got);
    }
    return true;
  }
  void need(size_t n, const char* what) {
    if (!fill(n)) fail(offset_, fmt::format("the file ends inside {} (cut short?)", what));
  }
  std::string_view take(size_t n) {
    std::string_view v(buf_.data() + pos_, n);
    adler_ = adler32(adler_, reinterpret_cast<const Bytef*>(v.data()), static_cast<uInt>(n));
    pos_ += n;
    offset_ += n;
    return v;
  }
  uint64_t be(int bytes) {
    uint64_t v = 0;
    for (char c : take(static_cast<size_t>(bytes))) v = (v << 8) | static_cast<unsigned char>(c);
    return v;
  }

  std::unique_ptr<Source> src_;
  std::string path_;
  bool compressed_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t offset_ = 0;
  uLong adler_ = adler32(0L, Z_NULL, 0);
};

std::unique_ptr<Source> open_source(const SnapshotFile& f) {
  switch (f.compression) {
    case Compression::gzip: return std::make_unique<GzipSource>(f.path);
    case Compression::snappy: return std::make_unique<SnappySource>(f.path);
    case Compression::none: break;
  }
  return std::make_unique<PlainSource>(f.path);
}

// The zxid in a name "PREFIX.<hex>[.SUFFIX]", as ZooKeeper's Util.getZxidFromName reads it.
std::optional<Zxid> zxid_in_name(std::string_view name, std::string_view prefix, std::string_view& rest) {
  if (name.size() <= prefix.size() + 1 || name.substr(0, prefix.size()) != prefix || name[prefix.size()] != '.')
    return std::nullopt;
  std::string_view hex = name.substr(prefix.size() + 1);
  size_t dot = hex.find('.');
  rest = dot == std::string_view::npos ? std::string_view() : hex.substr(dot);
  hex = hex.substr(0, dot);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (ec != std::errc() || p != hex.data() + hex.size() || hex.empty()) return std::nullopt;
  return static_cast<Zxid>(v);
}

void check_header(JuteIn& in, int32_t magic, const char* kind) {
  int32_t m = in.get_int("the file header's magic");
  if (m != magic)
    in.fail(0, fmt::format("not a ZooKeeper {} (magic 0x{:08x}, not 0x{:08x})", kind, static_cast<uint32_t>(m),
                           static_cast<uint32_t>(magic)));
  int32_t v = in.get_int("the file header's version");
  if (v != file_version) in.fail(4, fmt::format("an unknown {} version {} (ZooKeeper writes {})", kind, v, file_version));
  in.get_long("the file header's dbid");
}

// ZooKeeper's seal: the Adler-32 of every byte before it, then the path "/".
void check_seal(JuteIn& in) {
  uint64_t at = in.offset();
  uint32_t computed = in.checksum();
  auto stored = static_cast<uint64_t>(in.get_long("the checksum"));
  std::string slash = in.get_string("the checksum's trailer");
  if (stored != computed)
    in.fail(at, fmt::format("the checksum differs (stored 0x{:x}, computed 0x{:x}): the snapshot is damaged", stored,
                            computed));
  if (slash != "/") in.fail(at + 8, "the checksum is not followed by \"/\"");
}
}  // namespace

std::vector<SnapshotFile> list_snapshots(const std::string& dir) {
  std::vector<SnapshotFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    std::string_view rest;
    auto z = zxid_in_name(name, "snapshot", rest);
    if (!z || !e.is_regular_file(ec)) continue;
    Compression c;
    if (rest.empty())
      c = Compression::none;
    else if (rest == ".gz")
      c = Compression::gzip;
    else if (rest == ".snappy")
      c = Compression::snappy;
    else
      continue;
    out.push_back({e.path().string(), *z, c});
  }
  std::sort(out.begin(), out.end(), [](const SnapshotFile& a, const SnapshotFile& b) {
    return a.zxid != b.zxid ? a.zxid > b.zxid : a.compression < b.compression;
  });
  return out;
}

std::vector<LogFile> list_logs(const std::string& dir) {
  std::vector<LogFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    std::string_view rest;
    auto z = zxid_in_name(name, "log", rest);
    if (z && rest.empty() && e.is_regular_file(ec)) out.push_back({e.path().string(), *z});
  }
  std::sort(out.begin(), out.end(), [](const LogFile& a, const LogFile& b) { return a.first < b.first; });
  return out;
}

std::optional<uint32_t> read_epoch_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw FormatError(path + ": cannot be read");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  uint64_t v = 0;
  auto [p, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || p != text.data() + text.size() || text.empty() || v > UINT32_MAX)
    throw FormatError(fmt::format("{}: offset 0: holds \"{}\", not an epoch (a decimal number)", path,
                                  text.substr(0, 40)));
  return static_cast<uint32_t>(v);
}

SnapshotSummary read_snapshot(const SnapshotFile& file, const SnapshotVisitor& visit) {
  JuteIn in(open_source(file), file.path, file.compression != Compression::none);
  check_header(in, snapshot_magic, "snapshot");
  SnapshotSummary sum;
  int32_t sessions = in.get_count("the session count");
  for (int32_t i = 0; i < sessions; ++i) {
    int64_t id = in.get_long("a session id");
    int32_t timeout = in.get_int("a session timeout");
    if (visit.session) visit.session(id, timeout);
    ++sum.sessions;
  }
  int32_t acls = in.get_count("the ACL map's size");
  for (int32_t i = 0; i < acls; ++i) {
    int64_t key = in.get_long("an ACL map key");
    auto list = read_acl_list(in);
    if (visit.acl) visit.acl(key, std::move(list));
    ++sum.acls;
  }
  for (;;) {
    uint64_t at = in.offset();
    std::string path = in.get_string("a node's path");
    if (path == "/") break;
    if (sum.nodes == 0 ? !path.empty() : (path.empty() || path[0] != '/'))
      in.fail(at, fmt::format("a node path \"{}\" where {} was expected", path.substr(0, 200),
                              sum.nodes == 0 ? "the root (\"\")" : "an absolute path"));
    SnapshotNode n;
    n.path = path.empty() ? "/" : std::move(path);
    n.data = in.get_buffer("a node's data");
    n.acl = in.get_long("a node's ACL key");
    auto& s = n.stat;
    s.czxid = in.get_long("czxid");
    s.mzxid = in.get_long("mzxid");
    s.ctime = in.get_long("ctime");
    s.mtime = in.get_long("mtime");
    s.version = in.get_int("version");
    s.cversion = in.get_int("cversion");
    s.aversion = in.get_int("aversion");
    s.ephemeralOwner = in.get_long("ephemeralOwner");
    s.pzxid = in.get_long("pzxid");
    ++sum.nodes;
    if (visit.node) visit.node(std::move(n));
  }
  check_seal(in);
  if (in.at_end()) return sum;  // before 3.6, or digests off
  ZxidDigest d;
  d.zxid = in.get_long("the digest's zxid");
  d.version = in.get_int("the digest's version");
  if (d.version < 2) {
    std::string hex = in.get_string("the digest");
    uint64_t v = 0;
    std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
    d.digest = static_cast<int64_t>(v);
  } else {
    d.digest = in.get_long("the digest");
  }
  check_seal(in);
  if (!in.at_end()) in.fail(in.offset(), "bytes follow the snapshot's end");
  if (d.zxid > 0) sum.digest = d;
  return sum;
}

SnapshotFileWriter::SnapshotFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), adler_(static_cast<uint32_t>(adler32(0L, Z_NULL, 0))) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw FormatError(fmt::format("{}: cannot be written: {}", tmp_, std::strerror(errno)));
  std::string h;
  wire::Writer w(h);
  w.put_int(snapshot_magic);
  w.put_int(file_version);
  w.put_long(-1);  // the dbid ZooKeeper writes
  put(h);
}

SnapshotFileWriter::~SnapshotFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) ::unlink(tmp_.c_str());
}

void SnapshotFileWriter::put(std::string_view bytes) {
  adler_ = static_cast<uint32_t>(
      adler32(adler_, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  buf_.append(bytes);
  if (buf_.size() >= (1u << 20)) flush();
}

void SnapshotFileWriter::flush() {
  size_t done = 0;
  while (done < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FormatError(fmt::format("{}: cannot be written: {}", tmp_, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  buf_.clear();
}

void SnapshotFileWriter::sessions(const std::vector<std::pair<int64_t, int32_t>>& id_timeout) {
  std::string b;
  wire::Writer w(b);
  w.put_int(static_cast<int32_t>(id_timeout.size()));
  for (const auto& [id, timeout] : id_timeout) {
    w.put_long(id);
    w.put_int(timeout);
  }
  put(b);
}

void SnapshotFileWriter::acls(const std::vector<std::pair<int64_t, wire::AclList>>& map) {
  std::string b;
  wire::Writer w(b);
  w.put_int(static_cast<int32_t>(map.size()));
  for (const auto& [key, list] : map) {
    w.put_long(key);
    w(list);
  }
  put(b);
}

void SnapshotFileWriter::node(const SnapshotNode& n) {
  std::string b;
  wire::Writer w(b);
  w.put_string(n.path == "/" ? std::string_view() : std::string_view(n.path));
  w.put_bytes(n.data);
  w.put_long(n.acl);
  const auto& s = n.stat;
  w(s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion, s.ephemeralOwner, s.pzxid);
  put(b);
}

void SnapshotFileWriter::finish(const std::optional<ZxidDigest>& digest) {
  auto seal = [&] {
    std::string b;
    wire::Writer w(b);
    w.put_long(adler_);
    w.put_string("/");
    put(b);
  };
  std::string end;
  wire::Writer(end).put_string("/");
  put(end);
  seal();
  if (digest) {
    std::string b;
    wire::Writer w(b);
    w(digest->zxid, digest->version, digest->digest);
    put(b);
    seal();
  }
  flush();
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    throw FormatError(fmt::format("{}: cannot be synced: {}", tmp_, std::strerror(errno)));
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw FormatError(fmt::format("{}: cannot be renamed to {}: {}", tmp_, path_, std::strerror(errno)));
  finished_ = true;
}

void write_epoch_file(const std::string& path, uint32_t epoch) {
  std::ofstream out(path, std::ios::trunc);
  out << epoch;
  out.flush();
  if (!out) throw FormatError(path + ": cannot be written");
}

namespace {
// Jute over one record's bytes (wire::Reader), with what was expected named on failure.
struct TxnIn {
  wire::Reader r;
  void check(const char* what) {
    if (!r.ok()) throw FormatError(fmt::format("the txn ends inside {}", what));
  }
  int32_t get_int(const char* what) {
    auto v = r.get_int();
    check(what);
    return v;
  }
  int64_t get_long(const char* what) {
    auto v = r.get_long();
    check(what);
    return v;
  }
  std::string get_string(const char* what) {
    auto v = r.get_string();
    check(what);
    return v;
  }
  wire::Bytes get_buffer(const char* what) {
    auto v = r.get_bytes();
    check(what);
    return v;
  }
  // A count whose entries take at least `min_entry_bytes` each must fit in what is left.
  int32_t get_count(const char* what, size_t min_entry_bytes) {
    int32_t n = get_int(what);
    if (n < -1 || static_cast<size_t>(std::max(n, 0)) > r.remaining() / min_entry_bytes)
      throw FormatError(fmt::format("{} claims {} entries", what, n));
    return std::max(n, 0);
  }
};

// ZooKeeper's opcodes that appear in its logs.
enum Op : int32_t {
  op_create = 1, op_delete = 2, op_set_data = 5, op_set_acl = 7, op_check = 13, op_multi = 14, op_create2 = 15,
  op_reconfig = 16, op_create_container = 19, op_delete_container = 20, op_create_ttl = 21, op_error = -1,
  op_create_session = -10, op_close_session = -11,
};

CreateTxn read_create(TxnIn& in, int32_t type, bool whole_record) {
  CreateTxn c;
  c.path = in.get_string("a create's path");
  c.data = in.get_buffer("a create's data");
  c.acl = read_acl_list(in);
  if (type == op_create_container || type == op_create_ttl) {
    c.container = type == op_create_container;
    c.parentCVersion = in.get_int("a create's parentCVersion");
    if (type == op_create_ttl) c.ttl = in.get_long("a create's TTL");
    return c;
  }
  c.ephemeral = in.r.get_bool();
  in.check("a create's ephemeral flag");
  // A create of ZooKeeper 3.2 ends here; its record then holds nothing more, or only a digest.
  size_t left = in.r.remaining();
  if (!whole_record || (left != 0 && left != 12)) c.parentCVersion = in.get_int("a create's parentCVersion");
  return c;
}

SubTxnBody read_sub(TxnIn& in, int32_t type) {
  switch (type) {
    case op_create:
    case op_create2:
    case op_create_container:
    case op_create_ttl: return read_create(in, type, false);
    case op_delete:
    case op_delete_container: return DeleteTxn{in.get_string("a delete's path")};
    case op_set_data: {
      SetDataTxn s;
      s.path = in.get_string("a setData's path");
      s.data = in.get_buffer("a setData's data");
      s.version = in.get_int("a setData's version");
      return s;
    }
    case op_check: {
      CheckVersionTxn c;
      c.path = in.get_string("a check's path");
      c.version = in.get_int("a check's version");
      return c;
    }
    case op_error: return ErrorTxn{in.get_int("an error txn's code")};
    default: throw FormatError(fmt::format("a multi holds an op of unknown type {}", type));
  }
}
}  // namespace

Txn decode_txn(std::string_view bytes) {
  TxnIn in{wire::Reader(bytes)};
  Txn t;
  t.session = in.get_long("the header's session");
  t.cxid = in.get_int("the header's cxid");
  t.zxid = in.get_long("the header's zxid");
  t.time = in.get_long("the header's time");
  t.type = in.get_int("the header's type");
  switch (t.type) {
    case op_create:
    case op_create2:
    case op_create_container:
    case op_create_ttl: t.body = read_create(in, t.type, true); break;
    case op_delete:
    case op_delete_container: t.body = DeleteTxn{in.get_string("a delete's path")}; break;
    case op_set_data:
    case op_reconfig: t.body = std::get<SetDataTxn>(read_sub(in, op_set_data)); break;
    case op_set_acl: {
      SetAclTxn s;
      s.path = in.get_string("a setACL's path");
      s.acl = read_acl_list(in);
      s.version = in.get_int("a setACL's version");
      t.body = std::move(s);
      break;
    }
    case op_create_session: t.body = CreateSessionTxn{in.get_int("a createSession's timeout")}; break;
    case op_close_session: {
      // Since 3.6 the close lists the ephemerals it deletes; before, the record ends at the
      // header (with a digest, or nothing).
      CloseSessionTxn c;
      size_t left = in.r.remaining();
      if (left != 0 && left != 12) {
        int32_t n = in.get_count("a closeSession's path count", 4);
        std::vector<std::string> paths;
        for (int32_t i = 0; i < n; ++i) paths.push_back(in.get_string("a closeSession's path"));
        c.paths = std::move(paths);
      }
      t.body = std::move(c);
      break;
    }
    case op_error: t.body = ErrorTxn{in.get_int("an error txn's code")}; break;
    case op_multi: {
      MultiTxn m;
      int32_t n = in.get_count("a multi's op count", 8);
      for (int32_t i = 0; i < n; ++i) {
        int32_t type = in.get_int("a multi op's type");
        auto body = in.get_buffer("a multi op's record");
        TxnIn sub{wire::Reader(body ? *body : std::string_view())};
        m.ops.push_back({type, read_sub(sub, type)});
      }
      t.body = std::move(m);
      break;
    }
    default: throw FormatError(fmt::format("a txn of unknown type {}", t.type));
  }
  if (in.r.remaining() == 12) {
    int32_t version = in.get_int("the txn digest's version");
    int64_t digest = in.get_long("the txn digest");
    if (version >= 2) t.digest = digest;
  }
  if (!in.r.at_end()) throw FormatError(fmt::format("{} bytes follow the txn", in.r.remaining()));
  return t;
}

namespace {
// True when every byte of `f` from `from` on is zero (ZooKeeper's preallocated tail).
bool zero_from(const std::string& path, uint64_t from, uint64_t& nonzero_at) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(from));
  static const char zeros[1 << 16] = {};
  char buf[1 << 16];
  uint64_t at = from;
  while (f) {
    f.read(buf, sizeof buf);
    auto got = static_cast<size_t>(f.gcount());
    if (std::memcmp(buf, zeros, got) != 0) {
      for (size_t i = 0; i < got; ++i)
        if (buf[i] != 0) {
          nonzero_at = at + i;
          return false;
        }
    }
    at += got;
  }
  return true;
}
}  // namespace

LogSummary read_log(const LogFile& file, const std::function<void(Txn txn, uint64_t offset)>& fn) {
  std::error_code size_ec;
  if (fs::file_size(file.path, size_ec) < 16 && !size_ec) {
    // ZooKeeper creates a log file when its first txn comes and writes the header with it: a
    // running server's newest log may not have its header yet. Its txns, if any, come after.
    LogSummary empty;
    empty.torn_tail = file.path + ": offset 0: no whole header yet (ZooKeeper was creating it); it holds no txn";
    return empty;
  }
  {
    JuteIn header(std::make_unique<PlainSource>(file.path), file.path, false);
    check_header(header, log_magic, "transaction log");
  }
  auto fail = [&](uint64_t at, const std::string& why) {
    throw FormatError(fmt::format("{}: offset {}: {}", file.path, at, why));
  };
  auto be = [](const char* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
  };
  LogSummary sum;
  std::error_code ec;
  uint64_t size = fs::file_size(file.path, ec);
  std::ifstream f(file.path, std::ios::binary);
  uint64_t at = 16;  // after the file header
  f.seekg(static_cast<std::streamoff>(at));
  std::string bytes;
  Zxid prev = 0;
  // Every record read, in zxid order: a repeated one is checked against its first copy.
  struct Seen {
    Zxid zxid;
    uint64_t checksum;
    int32_t length;
    uint64_t offset;
  };
  std::vector<Seen> read;
  // A running ZooKeeper writes on while this reads: what looks like damage (data after the end
  // or after a bad record) may be a record arriving. When the file changed since it was opened,
  // the record is read again once, a moment later, before it is called damage.
  uint64_t reread = UINT64_MAX;
  auto written = fs::last_write_time(file.path, ec);
  auto read_again = [&](uint64_t from, const std::string& why) {
    auto now = fs::last_write_time(file.path, ec);
    if (reread == from || now == written) fail(from, why);
    reread = from;
    written = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    size = fs::file_size(file.path, ec);
    f.clear();
    f.seekg(static_cast<std::streamoff>(from));
  };
  for (;;) {
    // A record: the Adler-32 of its bytes (a long), the bytes (an int length first), 'B'.
    char head[12];
    f.read(head, 12);
    auto got = static_cast<size_t>(f.gcount());
    if (got == 0) break;  // the file ends without a zero tail: fine
    if (got < 12) {
      if (!std::all_of(head, head + got, [](char c) { return c == 0; }))
        sum.torn_tail = fmt::format("{}: offset {}: the last record is cut short in its header", file.path, at);
      break;
    }
    auto crc = be(head, 8);
    auto len = static_cast<int32_t>(be(head + 8, 4));
    uint64_t nonzero = 0;
    if (len == 0) {
      // ZooKeeper's end of a log: its preallocated zeros. Anything else after it is damage.
      if (!zero_from(file.path, at, nonzero)) {
        read_again(at, fmt::format("the log's end (a zero length) is followed by data at offset {}: the log is "
                                   "damaged",
                                   nonzero));
        continue;
      }
      break;
    }
    if (len < 0 || len > max_record) fail(at + 8, fmt::format("a record of {} bytes", len));
    if (at + 12 + static_cast<uint64_t>(len) + 1 > size) {
      sum.torn_tail = fmt::format("{}: offset {}: the last record is cut short ({} bytes claimed, {} left)", file.path,
                                  at, len + 1, size - at - 12);
      break;
    }
    bytes.resize(static_cast<size_t>(len) + 1);
    f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<size_t>(f.gcount()) < bytes.size()) fail(at, "the file shrank while it was read");
    uint64_t next = at + 12 + bytes.size();
    std::string_view rec(bytes.data(), static_cast<size_t>(len));
    uLong computed = adler32(adler32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(rec.data()),
                             static_cast<uInt>(rec.size()));
    bool end_ok = bytes.back() == 'B';
    if (!end_ok || computed != crc) {
      // A write cut short by a crash leaves zeros after it; damage in the middle does not. A
      // record that never reached the disk whole was never acknowledged: ZooKeeper answers a
      // write after the fsync that would have completed it.
      std::string why = !end_ok ? "a record without its end marker 'B'"
                                : fmt::format("a record whose checksum differs (stored 0x{:x}, computed 0x{:x})", crc,
                                              static_cast<uint64_t>(computed));
      if (!zero_from(file.path, next, nonzero)) {
        read_again(at, why + fmt::format(", and data follows at offset {}: the log is damaged", nonzero));
        continue;
      }
      sum.torn_tail = fmt::format("{}: offset {}: {}, and only zeros follow: a write cut short, left out", file.path,
                                  at, why);
      break;
    }
    Txn t;
    try {
      t = decode_txn(rec);
    } catch (const FormatError& e) {
      fail(at, std::string("a record that does not decode: ") + e.what());
    }
    if (t.zxid <= prev) {
      // A ZooKeeper 3.8 ensemble member's log was seen holding a txn twice (its second record
      // the first again); ZooKeeper's own start applies such a txn again and reads on. A copy (the
      // same zxid, length and checksum) is read once here; any other txn below the last is not.
      auto copy = std::lower_bound(read.begin(), read.end(), Seen{t.zxid, 0, 0, 0},
                                   [](const Seen& a, const Seen& b) { return a.zxid < b.zxid; });
      if (copy == read.end() || copy->zxid != t.zxid)
        fail(at, fmt::format("txn 0x{:x} follows txn 0x{:x}: out of order", static_cast<uint64_t>(t.zxid),
                             static_cast<uint64_t>(prev)));
      if (copy->checksum != crc || copy->length != len)
        fail(at, fmt::format("txn 0x{:x} is logged again with other content than at offset {}",
                             static_cast<uint64_t>(t.zxid), copy->offset));
      if (sum.repeated++ == 0)
        sum.first_repeat = fmt::format("{}: offset {}: txn 0x{:x} again (first at offset {})", file.path, at,
                                       static_cast<uint64_t>(t.zxid), copy->offset);
      at = next;
      continue;
    }
    read.push_back({t.zxid, crc, len, at});
    prev = sum.last = t.zxid;
    ++sum.txns;
    fn(std::move(t), at);
    at = next;
  }
  return sum;
}

std::string session_password(int64_t id) {
  // java.util.Random: a 48-bit linear congruential generator; nextBytes takes each nextInt()'s
  // bytes low first.
  constexpr uint64_t multiplier = 0x5DEECE66DULL, mask = (1ULL << 48) - 1;
  constexpr int64_t secret = 0xB3415C00LL;  // ZooKeeperServer's superSecret
  uint64_t seed = (static_cast<uint64_t>(id ^ secret) ^ multiplier) & mask;
  std::string out(16, '\0');
  for (size_t i = 0; i < out.size();) {
    seed = (seed * multiplier + 0xB) & mask;
    auto rnd = static_cast<uint32_t>(seed >> 16);
    for (int n = 0; n < 4 && i < out.size(); ++n, rnd >>= 8) out[i++] = static_cast<char>(rnd & 0xff);
  }
  return out;
}

}  // namespace warden::storage::zookeeper_format
