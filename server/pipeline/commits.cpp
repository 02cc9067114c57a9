// A commit applied to the tree (and the replies and events it makes), replay from the log, the
// configuration node, and what is in flight when leadership ends.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

void RequestPipeline::write_config_node() {
  if (opts_.config_node.empty()) return;
  // A newer configuration from a reconfig (in a snapshot, or replayed from the log) stays.
  const Node* now = tree_.find(reconfig::config_node);
  if (now && now->mzxid > opts_.config_version) return;
  tree_.set_config_node(opts_.config_node, opts_.config_version, clock_());
}

void RequestPipeline::on_commit(Zxid zxid, std::string_view payload) {
  int64_t started = clock_();
  ++(leads() ? metrics_.leader_commits : metrics_.learner_commits);
  ++metrics_.commits_applied;
  auto txn = decode_txn(payload);
  if (!txn) {
    // Only our own encoder writes payloads: a failure here is a bug, never input.
    spdlog::critical("committed txn 0x{:x} does not decode; stopping", zxid);
    std::abort();
  }
  // The txn's time is the leader's clock when prep made it: across hosts, clocks may disagree
  // (as ZooKeeper notes of the same metric), and a negative latency is not counted.
  if (started >= txn->time) metrics_.propagation_latency.add(started - txn->time);
  std::vector<WatchTrigger> triggers;
  ApplyResult r = apply(*txn, zxid, triggers);
  metrics_.commit_process_time.add(std::max<int64_t>(0, clock_() - started));
  if (r.err == Err::ok) count_writes(*txn);
  // ZooKeeper's digest log: the tree's digest at every 128th zxid, the last 1024 (hash).
  if (zxid % digest_log_interval == 0 && opts_.digest_enabled) {
    digest_log_.emplace_back(zxid, tree_.zk_digest());
    if (digest_log_.size() > digest_log_limit) digest_log_.pop_front();
  }
  for (const auto& t : triggers) {
    auto fired = watches_.trigger(t, [&](const std::vector<ConnId>& conns) { send_events(t, conns); });
    metrics_.add_fired(static_cast<int32_t>(t.type), fired.data);
    metrics_.add_fired(static_cast<int32_t>(t.type), fired.child);
  }

  // Commits come in zxid order. A proposal of ours below this zxid was lost (the history of a
  // new leader does not hold it): its client sees a lost connection, since it never applied.
  while (!pending_.empty() && pending_.front().zxid != 0 && pending_.front().zxid < zxid) lose(pending_.front());
  bool ours = !pending_.empty() && matches(pending_.front(), *txn, zxid);
  if (!ours) {
    // A txn this server did not prepare (a follower applies the leader's): it answers nobody
    // here, but a closed session's connection still closes.
    reply_write(Pending{Kind::request}, *txn, r, zxid);
    metrics_.write_final_time.add(std::max<int64_t>(0, clock_() - started));
    return;
  }
  Pending p = pending_.front();
  pending_.pop_front();
  retire_staged(p.prep_mark);
  if (p.kind == Kind::request && p.conn == 0 && !p.forwarded) ++metrics_.stale_replies;  // its client left
  if (p.kind == Kind::request && !p.barrier)
    metrics_.write_commit_wait.add(std::max<int64_t>(0, started - p.proposed_ms));
  if (p.barrier) {
    if (Conn* c = p.conn ? conn(p.conn) : nullptr) c->barrier_passed = true;
  } else {
    reply_write(p, *txn, r, zxid);
  }
  metrics_.write_final_time.add(std::max<int64_t>(0, clock_() - started));
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) --c->in_flight;
  release_reads(p);
  if (p.conn) drain(p.conn);
}

void RequestPipeline::count_writes(const Txn& txn) {
  // What ZooKeeper's DataTree counts per namespace: a create's and a setData's data, a delete
  // (a closed session's ephemerals too), each op of a multi that applied.
  auto one = [this](const auto& body) {
    using T = std::decay_t<decltype(body)>;
    if constexpr (std::is_same_v<T, CreateTxn> || std::is_same_v<T, SetDataTxn>)
      metrics_.add_write(body.path, body.data ? static_cast<int64_t>(body.data->size()) : 0);
    else if constexpr (std::is_same_v<T, DeleteTxn>)
      metrics_.add_write(body.path, 0);
  };
  if (const auto* m = std::get_if<MultiTxn>(&txn.body)) {
    for (const auto& op : m->ops) std::visit(one, op.body);
  } else if (const auto* cs = std::get_if<CloseSessionTxn>(&txn.body)) {
    for (const auto& path : cs->ephemerals) metrics_.add_write(path, 0);
  } else {
    std::visit(one, txn.body);
  }
}

void RequestPipeline::retire_staged(std::optional<uint64_t> mark) {
  size_t before = prep_.overlay_size();
  if (mark)
    prep_.retire(*mark);
  else
    prep_.retire_all();
  metrics_.outstanding_changes_removed += static_cast<int64_t>(before - std::min(before, prep_.overlay_size()));
}

void RequestPipeline::config_applied() {
  const Node* n = tree_.find(reconfig::config_node);
  if (on_config_ && n && n->mzxid > opts_.config_version) on_config_(n->data(), n->mzxid);
}

ApplyResult RequestPipeline::apply(const Txn& txn, Zxid zxid, std::vector<WatchTrigger>& triggers) {
  ApplyResult r = tree_.apply(txn, zxid, triggers);
  if (txn.type == static_cast<int32_t>(OpCode::reconfig) && r.err == Err::ok) config_applied();
  if (auto* cs = std::get_if<CreateSessionTxn>(&txn.body)) {
    sessions_.add(txn.session, cs->timeout, cs->passwd, session_time(clock_()));
    sessions_.saw_id(txn.session);  // whoever made it, this server never hands that id out again
  } else if (std::holds_alternative<CloseSessionTxn>(txn.body)) {
    sessions_.remove(txn.session);
  }
  return r;
}

void RequestPipeline::replay(Zxid zxid, std::string_view payload) {
  auto txn = decode_txn(payload);
  if (!txn) throw std::runtime_error(fmt::format("log record 0x{:x} does not hold a txn", zxid));
  replay(zxid, *txn);
}

void RequestPipeline::replay(Zxid zxid, const Txn& txn) {
  std::vector<WatchTrigger> ignored;
  apply(txn, zxid, ignored);
}

void RequestPipeline::abort_in_flight(Err err) {
  std::deque<Pending> aborted;
  aborted.swap(pending_);
  retire_staged();
  sessions_.reopen_closing(session_time(clock_()));
  Zxid last = tree_.last_applied();
  std::vector<ConnId> touched;
  for (const auto& p : aborted) {
    Conn* c = p.conn ? conn(p.conn) : nullptr;
    if (!c) {
      release_reads(p);
      continue;  // internal txns are tried again by later ticks
    }
    --c->in_flight;
    touched.push_back(p.conn);
    if (p.kind == Kind::connect) {
      close_conn(p.conn);  // its session could not be created
    } else {
      send_reply(p.conn, p.xid, last, err);
    }
    release_reads(p);  // after the reply: the reads that came after it follow it
  }
  for (ConnId id : touched) drain(id);
}

}  // namespace warden::server
