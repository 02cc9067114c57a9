#include "consensus/host_loop.hpp"

#include <algorithm>
#include <stdexcept>

namespace warden::consensus {

namespace {
// A part of a Ready this host cannot carry out: refused, as dropping it would lose what it says.
template <class Step>
const Step& step(const Step& s, const char* part) {
  if (!s) throw std::logic_error(std::string("this replicator cannot carry out a Ready's ") + part);
  return s;
}
}  // namespace

bool carry_out(Ready& r, const HostSteps& h) {
  bool work = !r.empty();
  if (!r.notes.empty()) step(h.notes, "notes")(r.notes);
  if (r.epochs) step(h.save_epochs, "epochs")();
  if (r.synced) step(h.synced, "synced mark")(*r.synced);
  if (r.config) step(h.config, "configuration")(*r.config);
  if (r.pending) step(h.pending, "pending configuration")(*r.pending);
  if (r.reset) step(h.reset, "reset")();
  if (r.truncate_after) step(h.truncate, "truncation")(*r.truncate_after);
  if (r.snapshot) step(h.snapshot, "snapshot")(r.snapshot->first, r.snapshot_streamed);
  for (auto& e : r.append) step(h.append, "entries")(std::move(e));
  for (auto& [to, m] : r.messages) step(h.send, "messages")(to, m);
  h.apply(r.committed);
  if (r.leader_digest) step(h.leader_digest, "leader digest")(r.leader_digest->first, r.leader_digest->second);
  if (h.after_commits && h.after_commits()) work = true;
  if (r.role_changed && h.role_changed) h.role_changed();
  if (r.ensemble_version && h.ensemble_version) h.ensemble_version(*r.ensemble_version);
  for (auto& [from, payload] : r.requests) step(h.request, "forwarded requests")(from, std::move(payload));
  return work;
}

void apply_committed(const storage::LogStore& store, const std::deque<storage::LogEntry>& tail, Zxid& applied,
                     Zxid committed, const std::function<void(const storage::LogEntry&)>& apply) {
  if (committed <= applied) return;
  Zxid store_upto = tail.empty() ? committed : std::min(committed, tail.front().zxid - 1);
  if (store_upto > applied)
    store.for_each_in(applied, store_upto, SIZE_MAX, [&](const storage::LogEntry& e) {
      applied = e.zxid;
      apply(e);
    });
  for (const auto& e : tail) {
    if (e.zxid > committed) break;
    if (e.zxid <= applied) continue;
    applied = e.zxid;
    apply(e);
  }
}

}  // namespace warden::consensus
