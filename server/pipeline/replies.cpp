// Frames to clients: replies, watch events (one frame to many), and the statistics of each.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

void RequestPipeline::send_frame(Conn& c, std::string frame, bool event) {
  count_sent(c, frame.size(), event);
  c.link->send(std::move(frame));
}

void RequestPipeline::count_sent(Conn& c, size_t frame_bytes, bool event) {
  ++c.stats.sent;
  ++packets_sent_;
  (event ? metrics_.watch_bytes : metrics_.response_bytes) += static_cast<int64_t>(frame_bytes);
  counters_.client_response.add(static_cast<int64_t>(frame_bytes) - 4);  // one frame, length first
}

void RequestPipeline::send_events(const WatchTrigger& t, const std::vector<ConnId>& conns) {
  // One frame for all the trigger's watchers.
  const wire::WatcherEvent e{static_cast<int32_t>(t.type), static_cast<int32_t>(wire::KeeperState::syncConnected),
                            t.path};
  std::string frame = frame_of(wire::ReplyHeader{wire::xid::notification, -1, 0}, &e);
  // Only to connections that may read the node (ZooKeeper's fix for CVE-2024-23944, in Debian's
  // 3.8 and upstream 3.8.4+); the watch is spent either way. A node anyone may read needs no
  // check per connection: no id takes a permission away.
  const bool everyone = !t.acl || allows_(*t.acl, wire::perms::read, AuthIds{});
  fan_links_.clear();
  for (ConnId id : conns) {
    Conn* c = conn(id);
    if (!c || (!everyone && !allows_(*t.acl, wire::perms::read, c->auth))) continue;
    count_sent(*c, frame.size(), true);
    fan_links_.push_back(c->link);
  }
  if (fan_out_ && fan_links_.size() > 1) {
    fan_out_->send_to_all(fan_links_, frame);
  } else if (!fan_links_.empty()) {
    for (size_t k = 0; k + 1 < fan_links_.size(); ++k) fan_links_[k]->send(frame);
    fan_links_.back()->send(std::move(frame));
  }
}

void RequestPipeline::note_reply(Conn& c, OpCode op, int32_t xid, Zxid zxid, int64_t started, int64_t now) {
  if (now < 0) now = clock_();
  int64_t latency = std::max<int64_t>(0, now - started);
  c.stats.last_op = op_name(op);
  c.stats.last_cxid = xid;
  c.stats.last_zxid = zxid;
  c.stats.last_response_ms = now;
  c.stats.last_latency = latency;
  c.stats.latency.add(latency);
  latency_.add(latency);
  if (wire::is_write(op))
    metrics_.update_latency.add(latency);
  else if (op != OpCode::ping)
    metrics_.read_latency.add(latency);
}

void RequestPipeline::send_reply(ConnId id, int32_t xid, Zxid zxid, Err err) {
  Conn* c = conn(id);
  if (!c) return;
  send_frame(*c, frame_of<wire::ErrorResponse>(wire::ReplyHeader{xid, zxid, static_cast<int32_t>(err)}, nullptr),
             xid == wire::xid::notification);
}

void RequestPipeline::reply_write(const Pending& p, const Txn& txn, const ApplyResult& r, Zxid zxid) {
  if (std::holds_alternative<CloseSessionTxn>(txn.body)) {
    if (p.kind == Kind::internal) spdlog::info("session 0x{:x} expired", txn.session);
    if (p.conn) send_reply(p.conn, p.xid, zxid, Err::ok);
    if (auto o = owner_.find(txn.session); o != owner_.end()) {
      close_conn(o->second);
      owner_.erase(o);
    }
    return;
  }
  if (txn.type == reattach_txn_type) {
    // The session moved to the member that asked: any other connection of it here closes
    // (its client has gone elsewhere), and the one that asked is answered.
    if (auto o = owner_.find(txn.session); o != owner_.end() && o->second != p.conn) {
      close_conn(o->second);
      owner_.erase(o);
    }
    Conn* c = p.conn ? conn(p.conn) : nullptr;
    if (!c) return;
    Session* s = sessions_.find(txn.session);
    if (r.err != Err::ok || !s) {
      spdlog::info("session 0x{:x} ({}) is expired (the leader says so)", txn.session, who(*c));
      send_connect_response(*c, 0, 0, std::string(16, '\0'));
      close_conn(p.conn);
      return;
    }
    attach(p.conn, *c, txn.session);
    send_connect_response(*c, c->negotiated_timeout, txn.session, s->passwd);
    return;
  }
  if (p.kind == Kind::internal || p.conn == 0) return;
  Conn* c = conn(p.conn);
  if (!c) return;
  if (p.kind == Kind::request) note_reply(*c, static_cast<OpCode>(txn.type), p.xid, zxid, p.started_ms);
  if (p.kind == Kind::connect) {
    const auto& cs = std::get<CreateSessionTxn>(txn.body);
    attach(p.conn, *c, txn.session);
    send_connect_response(*c, cs.timeout, txn.session, cs.passwd);
    return;
  }
  if (r.err != Err::ok) return send_reply(p.conn, p.xid, zxid, r.err);
  switch (static_cast<OpCode>(txn.type)) {
    case OpCode::sync:
      return send_reply(p.conn, p.xid, zxid, wire::SyncResponse{p.sync_path});
    case OpCode::create:
      return send_reply(p.conn, p.xid, zxid, wire::CreateResponse{r.path});
    case OpCode::create2:
    case OpCode::createContainer:
    case OpCode::createTTL:
      return send_reply(p.conn, p.xid, zxid, wire::Create2Response{r.path, r.stat});
    case OpCode::setData:
    case OpCode::setACL:
      return send_reply(p.conn, p.xid, zxid, wire::StatResponse{r.stat});
    case OpCode::reconfig: {
      // ZooKeeper answers with the configuration now in force and the node's Stat.
      const Node* config = tree_.find(reconfig::config_node);
      return send_reply(p.conn, p.xid, zxid,
                        wire::GetDataResponse{config ? config->data_bytes() : std::nullopt, r.stat});
    }
    case OpCode::multi:
      // A failed multi still says OK in its header; the per-op results carry the errors.
      send_frame(*c, reply_frame(wire::ReplyHeader{p.xid, zxid, 0},
                                [&](wire::Writer& w) { wire::encode_multi_response(w, r.multi); }));
      return;
    default:
      return send_reply(p.conn, p.xid, zxid, Err::ok);
  }
}

}  // namespace warden::server
