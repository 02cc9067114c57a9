// How far a store's log was durable, kept outside the log (issue 46, point 1): a small file of
// its own in the store's directory, `durable-end`, holding the last zxid the log had synced.
//
// A crash can tear only what the log had not synced yet, and nothing synced was acknowledged.
// A damaged or truncated write-ahead log can lose synced batches at its tail too, and those look
// the same to RocksDB: a tail that ends early. The file tells them apart. It is written after
// each synced append (no sync of its own: a write the power cut loses leaves an older, lower
// end, which is still true) and synced before the log is cut back on purpose, so it never says
// more than the log held durably; a log that opens shorter than it lost synced, acknowledged
// txns, and is damage, not a crash.
//
// It also keeps the second copy of the member's epochs (accepted, current; the first is the
// replica state in the log's database), written and synced whenever they change: a disk that
// loses one synced write (RocksDB's last, at its write-ahead log's tail, which reads as a torn
// tail) would otherwise roll a member's current epoch back, and a member that forgot the epoch
// it synchronised with can vote for a leader whose history that epoch superseded (the
// simulator's lost writes: warden-sim --disk-faults, its plant one-epoch-copy). The store reads
// the higher of the two copies; epochs only grow.
//
// The file is 32 bytes: 8 of magic, the zxid (8, big-endian), the accepted and current epochs
// (4 each), a CRC-32 of those 24 (4), 4 zero. Files of the first builds that kept it are 24
// bytes (magic WDEND001, the zxid, the CRC of those 16, 4 zero) and hold no epochs. A file that
// is missing (a store of an earlier build, or a new one), short, or fails its check (the fault
// hit it and not the log) says nothing: the open goes on as before.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "storage/log_store.hpp"

namespace warden::storage {

class DurableEnd {
 public:
  static constexpr const char* file_name = "durable-end";
  static constexpr size_t record_bytes = 32;
  struct Epochs {
    uint32_t accepted = 0;
    uint32_t current = 0;
    bool operator==(const Epochs&) const = default;
  };
  struct Record {
    Zxid zxid = 0;
    std::optional<Epochs> epochs;  // none in a file of the first format
  };

  // Opens (creating) the file in the existing directory `dir` and reads what it holds; a file
  // that says nothing is logged as such. Throws StorageError when it cannot be opened.
  explicit DurableEnd(const std::string& dir);
  ~DurableEnd();
  DurableEnd(const DurableEnd&) = delete;
  DurableEnd& operator=(const DurableEnd&) = delete;

  // What the file held when opened: none when it says nothing.
  std::optional<Zxid> recorded() const { return recorded_; }
  std::optional<Epochs> recorded_epochs() const { return recorded_epochs_; }
  // The epochs' copy: written and synced when they differ from what the file holds. Throws
  // StorageError when that fails (the server stops, as for the replica state's own write).
  // The store calls it with the epochs it opened with too, so that advance() carries them.
  void keep_epochs(Epochs e);
  // The log has synced up to `z`: written if higher than the file holds, not synced. A failed
  // write is logged and leaves what was there (lower, or unreadable: both say no more than true).
  void advance(Zxid z);
  // The log is about to be cut back to `z`: written and synced first when the file holds more.
  // Throws StorageError when that fails (the cut must not go ahead: the file would say more
  // than the log holds).
  void lower_to(Zxid z);
  // What the file in `dir` holds, read without opening it for writing (the tools, beside a running
  // server): none when it is missing or says nothing.
  static std::optional<Zxid> read(const std::string& dir);
  // Removes the file from `dir` (synced), for an operator who accepted a cut log: what follows
  // is written afresh.
  static void forget(const std::string& dir);

  // The record for `z` (and `e`), and what a record holds (none when short or failing its
  // check); decode() reads both formats.
  static std::string encode(Zxid z, Epochs e);
  static std::string encode(Zxid z) { return encode(z, Epochs{0, 0}); }
  static std::optional<Record> decode_record(const std::string& bytes);
  static std::optional<Zxid> decode(const std::string& bytes);

 private:
  std::string path_;
  int fd_ = -1;
  std::optional<Zxid> recorded_;
  std::optional<Epochs> recorded_epochs_;
  std::mutex mutex_;  // advance on the group committer's thread, lower_to on the server's
  Zxid written_ = 0;  // what the file holds now (0: nothing)
  Epochs written_epochs_;
  bool warned_ = false;
  bool write(Zxid z, Epochs e);
};

}  // namespace warden::storage
