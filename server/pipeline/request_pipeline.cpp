#include "server/pipeline/request_pipeline.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cassert>

#include "wire/framing.hpp"

namespace warden::server {

using wire::Err;
using wire::OpCode;

namespace {
// A txn that changes nothing and carries only a result code (a sync's no-op, a refusal that
// must reach its member in order, a re-attach's confirmation).
Txn marker_txn(SessionId session, int32_t cxid, int64_t time, int32_t type, Err err) {
  Txn t;
  t.session = session;
  t.cxid = cxid;
  t.time = time;
  t.type = type;
  t.body = ErrorTxn{static_cast<int32_t>(err)};
  return t;
}

// Writes a reply frame: a length prefix, the header, then whatever `body` writes; `reserve`:
// about how many bytes that is, when large (one allocation, no copying as the frame grows).
template <class BodyWriter>
std::string reply_frame(const wire::ReplyHeader& h, BodyWriter&& body, size_t reserve = 0) {
  std::string out;
  out.reserve(reserve + 32);
  out.assign(4, '\0');
  wire::Writer w(out);
  h.visit(w);
  body(w);
  std::string prefix;
  wire::Writer(prefix).put_int(static_cast<int32_t>(out.size() - 4));
  out.replace(0, 4, prefix);
  return out;
}

template <class R>
std::string frame_of(const wire::ReplyHeader& h, const R* body) {
  return reply_frame(h, [&](wire::Writer& w) {
    if (body) body->visit(w);
  });
}

using wire::is_write;

}  // namespace

RequestPipeline::RequestPipeline(ServerOptions opts, consensus::Replicator& replicator, Clock clock, Clock elapsed)
    : opts_(opts),
      replicator_(replicator),
      clock_(std::move(clock)),
      elapsed_(elapsed ? std::move(elapsed) : clock_),
      allows_{opts.skip_acl},
      prep_(tree_, opts.extended_types, opts.enforce_quota, opts.sasl_acls, allows_),
      sessions_(opts.tick_ms),
      rng_(opts.random_seed ? *opts.random_seed : std::random_device{}()) {
  tree_.enable_zk_digest(opts.digest_enabled);
  prep_.set_reconfig(&reconfig_gate_);
  write_config_node();
  sessions_.seed_ids(clock_(), opts_.server_id);
  replicator_.set_commit_handler([this](Zxid z, std::string_view p) { on_commit(z, p); });
  next_container_check_ = clock_() + opts_.container_check_interval_ms;
}

void RequestPipeline::write_config_node() {
  if (opts_.config_node.empty()) return;
  // A newer configuration from a reconfig (in a snapshot, or replayed from the log) stays.
  const Node* now = tree_.find(reconfig::config_node);
  if (now && now->mzxid > opts_.config_version) return;
  tree_.set_config_node(opts_.config_node, opts_.config_version, clock_());
}

RequestPipeline::Conn* RequestPipeline::conn(ConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : &it->second;
}

ConnId RequestPipeline::open(ClientLink* link) {
  ConnId id = next_conn_++;
  Conn c;
  c.link = link;
  c.stats.established_ms = clock_();
  add_auth_id(c.auth, wire::Id{"ip", link->peer_address()});
  for (auto& id : link->transport_ids()) add_auth_id(c.auth, std::move(id));
  if (!link->secure()) {
    const std::string& a = link->peer_address();
    bool local = a.rfind("127.", 0) == 0 || a == "::1" || a.rfind("::ffff:127.", 0) == 0;
    ++(local ? counters_.non_mtls_local : counters_.non_mtls_remote);
  }
  sessionless_.emplace_back(session_time(c.stats.established_ms), id);
  conns_.emplace(id, std::move(c));
  return id;
}

void RequestPipeline::handshake_failed(bool timed_out) {
  ++counters_.auth_failed;
  ++counters_.unsuccessful_handshake;
  if (timed_out) ++counters_.tls_handshake_exceeded;
}

void RequestPipeline::closed(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  if (it->second.attached) {
    auto o = owner_.find(it->second.session);
    if (o != owner_.end() && o->second == id) owner_.erase(o);
  }
  size_t watches_before = watches_.watch_count();
  int64_t started = clock_();
  watches_.remove_connection(id);
  if (size_t dead = watches_before - watches_.watch_count(); dead > 0) {
    metrics_.dead_watchers += static_cast<int64_t>(dead);
    metrics_.dead_watchers_latency.add(std::max<int64_t>(0, clock_() - started));
  }
  for (auto& p : pending_)
    if (p.conn == id) p.conn = 0;  // its replies have nowhere to go
  size_t waiting = it->second.held.size() + it->second.after_writes.size();
  held_total_ -= waiting;
  metrics_.stale_requests += static_cast<int64_t>(waiting);
  conns_.erase(it);
}

void RequestPipeline::close_conn(ConnId id) {
  Conn* c = conn(id);
  if (!c || c->closing) return;
  c->closing = true;
  c->link->close();
}

void RequestPipeline::receive(ConnId id, std::string_view payload) {
  Conn* c = conn(id);
  if (!c || c->closing) return;
  ++c->stats.received;
  ++packets_received_;
  metrics_.bytes_received += static_cast<int64_t>(payload.size()) + 4;
  metrics_.prep_queue_size.add_zero_or(static_cast<int64_t>(c->held.size()));
  Route to = c->held.empty() ? route(*c, payload) : Route::hold;
  if (to == Route::now) {
    metrics_.prep_queue_time.add_zero_or(0);
    if (c->attached) note_read_wait(payload, 0);  // else a ConnectRequest: no request header
    process(id, *c, payload);
    return;
  }
  if (c->held.size() + c->after_writes.size() >= max_held_frames) {
    spdlog::warn("closing connection of {}: {} requests wait behind its writes", who(*c),
                 c->held.size() + c->after_writes.size());
    close_conn(id);
    return;
  }
  ++held_total_;
  if (to == Route::after_write)
    c->after_writes.push_back(Conn::Attached{c->last_write, Conn::Held{std::string(payload), clock_()}});
  else
    c->held.push_back(Conn::Held{std::string(payload), clock_()});
  metrics_.session_queue_size.add(static_cast<int64_t>(c->held.size() + c->after_writes.size()));
}

RequestPipeline::Route RequestPipeline::route(const Conn& c, std::string_view payload) const {
  if (!c.attached) return c.session != 0 ? Route::hold : Route::now;  // its session is being created
  if (c.in_flight == 0 && !session_writes_.count(c.session)) return Route::now;
  wire::Reader r(payload);
  wire::RequestHeader h;
  h.visit(r);
  if (!r.ok()) return Route::hold;
  auto op = static_cast<OpCode>(h.type);
  if (is_write(op)) return Route::now;
  // A linearizable read has a barrier of its own to wait for (hold_for_barrier); a read whose
  // session has writes in flight on another connection waits for all of them.
  if (!reads_tree(op) || opts_.linearizable_reads || c.read_only || c.writes == 0) return Route::hold;
  auto it = session_writes_.find(c.session);
  return it != session_writes_.end() && it->second == c.writes ? Route::after_write : Route::hold;
}

void RequestPipeline::note_read_wait(std::string_view payload, int64_t waited) {
  // The op is the header's second int (after the xid); a frame too short for it is no read.
  if (payload.size() < 8) return;
  auto b = reinterpret_cast<const unsigned char*>(payload.data()) + 4;
  auto op = static_cast<OpCode>(
      static_cast<int32_t>(uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]}));
  if (reads_tree(op)) metrics_.read_commitproc_time.add_zero_or(std::max<int64_t>(0, waited));
}

bool RequestPipeline::reads_tree(OpCode op) {
  switch (op) {
    case OpCode::exists:
    case OpCode::getData:
    case OpCode::getChildren:
    case OpCode::getChildren2:
    case OpCode::getACL:
    case OpCode::multiRead:
    case OpCode::getAllChildrenNumber:
    case OpCode::getEphemerals:
      return true;
    default:
      return false;
  }
}

void RequestPipeline::hold_reads(Pending& p, SessionId s) {
  if (p.kind != Kind::request || p.barrier || s == 0) return;
  p.holds_reads = s;
  ++session_writes_[s];
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) {
    ++c->writes;
    c->last_write = p.seq;
  }
}

void RequestPipeline::release_reads(const Pending& p) {
  if (p.holds_reads == 0) return;
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) {
    --c->writes;
    // The reads that came between this write and the next are answered now, at their point
    // in the apply order: after it, before the next of the session's writes applies.
    bool queued = !c->after_writes.empty() || !c->held.empty();
    int64_t answered = 0;
    while (!c->closing && !c->after_writes.empty() && c->after_writes.front().after == p.seq) {
      Conn::Held h = std::move(c->after_writes.front().frame);
      c->after_writes.pop_front();
      --held_total_;
      ++answered;
      int64_t waited = clock_() - h.arrived_ms;
      metrics_.prep_queue_time.add(std::max<int64_t>(0, waited));
      note_read_wait(h.payload, waited);
      process(p.conn, *c, h.payload);
      c = conn(p.conn);
      if (!c) break;
    }
    if (queued) metrics_.reads_after_write.add(answered);
  }
  auto it = session_writes_.find(p.holds_reads);
  if (it == session_writes_.end() || --it->second > 0) return;
  session_writes_.erase(it);
  std::vector<ConnId> waiting;
  for (const auto& [id, c] : conns_)
    if (c.attached && c.session == p.holds_reads && !c.held.empty()) waiting.push_back(id);
  for (ConnId id : waiting) drain(id);
}

void RequestPipeline::process(ConnId id, Conn& c, std::string_view payload) {
  ++metrics_.prep_queued;
  if (!c.attached) {
    handle_connect(id, c, payload);
  } else {
    handle_request(id, c, payload);
  }
}

void RequestPipeline::drain(ConnId id) {
  for (;;) {
    Conn* c = conn(id);
    if (!c || c->closing || c->held.empty()) return;
    Route to = route(*c, c->held.front().payload);
    if (to == Route::hold) return;
    Conn::Held h = std::move(c->held.front());
    c->held.pop_front();
    if (to == Route::after_write) {
      c->after_writes.push_back(Conn::Attached{c->last_write, std::move(h)});
      continue;
    }
    --held_total_;
    int64_t waited = clock_() - h.arrived_ms;
    metrics_.prep_queue_time.add(std::max<int64_t>(0, waited));
    note_read_wait(h.payload, waited);
    process(id, *c, h.payload);
  }
}

void RequestPipeline::handle_connect(ConnId id, Conn& c, std::string_view payload) {
  if (c.session != 0) return;  // a session is being created for this connection: ignore extras
  ++metrics_.connection_requests;
  if (!serving() && !read_only()) {
    ++metrics_.closed_not_serving;
    close_conn(id);  // as ZooKeeper's member without a quorum: the client tries another
    return;
  }
  auto req = wire::decode_connect_request(payload);
  if (!req) {
    spdlog::warn("closing {}: malformed connect request of {} bytes", who(c), payload.size());
    close_conn(id);
    return;
  }
  if (!serving() && !req->read_only.value_or(false)) {
    ++metrics_.closed_not_serving;  // as ZooKeeper's read-only server: "not a read-only client"
    close_conn(id);
    return;
  }
  Zxid last = tree_.last_applied();
  if (req->lastZxidSeen > last) {
    spdlog::info("refusing session request of {} (session 0x{:x}): it has seen zxid 0x{:x}, ours is 0x{:x}; it must "
                 "try another server", who(c), req->sessionId, req->lastZxidSeen, last);
    close_conn(id);
    return;
  }
  int32_t timeout = std::clamp(req->timeOut, opts_.min_session_timeout_ms, opts_.max_session_timeout_ms);
  c.old_client = !req->read_only.has_value();
  c.read_only = !serving();  // read_only() let it in above: it answers from its own tree
  c.negotiated_timeout = timeout;
  if (req->sessionId == 0) {
    SessionId s = sessions_.next_id();
    std::string passwd(16, '\0');
    for (auto& ch : passwd) ch = static_cast<char>(rng_());
    if (c.read_only) {  // a session of this member's own: no txn, no leader to ask
      attach(id, c, s);
      return send_connect_response(c, timeout, s, passwd);
    }
    c.session = s;
    if (!leads()) {
      Forwarded f;
      f.kind = Forwarded::create_session;
      f.session = s;
      f.timeout = timeout;
      f.passwd = passwd;
      Pending p{Kind::connect, id, 0};
      p.session = s;
      forward(std::move(f), std::move(p));
      return;
    }
    Txn t;
    t.session = s;
    t.time = clock_();
    t.type = static_cast<int32_t>(OpCode::createSession);
    t.body = CreateSessionTxn{timeout, passwd};
    submit(std::move(t), Pending{Kind::connect, id, 0});
    return;
  }
  ++metrics_.connection_revalidations;  // a client back with its session, whatever becomes of it
  Session* s = sessions_.find(req->sessionId);
  if (!s && !leads() && !c.read_only && req->passwd) {
    // A member behind the one that made the session has not applied its creation yet (the
    // client's lastZxidSeen says nothing of it): as ZooKeeper's learner, ask the leader, whose
    // answer comes after the creation in the log.
    reattach_through_leader(id, c, req->sessionId, *req->passwd);
    return;
  }
  if (!s || s->closing || !req->passwd || *req->passwd != s->passwd) {
    spdlog::info("session 0x{:x} ({}) is expired or its password does not match", req->sessionId, who(c));
    send_connect_response(c, 0, 0, std::string(16, '\0'));
    close_conn(id);
    return;
  }
  if (c.read_only) {  // as its tree knows it: no leader to confirm it, nor to move it here
    if (auto o = owner_.find(s->id); o != owner_.end() && o->second != id) close_conn(o->second);
    attach(id, c, s->id);
    return send_connect_response(c, timeout, s->id, s->passwd);
  }
  if (!leads()) {
    reattach_through_leader(id, c, s->id, s->passwd);
    return;
  }
  session_owner_[s->id] = 0;
  if (auto o = owner_.find(s->id); o != owner_.end() && o->second != id) close_conn(o->second);
  sessions_.touch(s->id, session_time(clock_()));
  attach(id, c, s->id);
  send_connect_response(c, timeout, s->id, s->passwd);
}

void RequestPipeline::reattach_through_leader(ConnId id, Conn& c, SessionId s, const std::string& passwd) {
  // The leader confirms the session lives and moves it here; the answer comes in order.
  Forwarded f;
  f.kind = Forwarded::reattach;
  f.session = s;
  f.passwd = passwd;
  Pending p{Kind::connect, id, 0};
  p.session = s;
  p.reattach = true;
  c.session = s;
  forward(std::move(f), std::move(p));
}

void RequestPipeline::attach(ConnId id, Conn& c, SessionId s) {
  c.session = s;
  c.attached = true;
  owner_[s] = id;
}

void RequestPipeline::send_connect_response(Conn& c, int32_t timeout, SessionId s, const std::string& passwd) {
  wire::ConnectResponse r;
  r.timeOut = timeout;
  r.sessionId = s;
  r.passwd = passwd;
  if (!c.old_client) r.read_only = c.read_only;
  std::string frame;
  wire::append_frame(frame, wire::encode_connect_response(r));
  send_frame(c, std::move(frame));
}

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

namespace {
// ZooKeeper's names for a connection's last operation (FinalRequestProcessor's lastOp).
const char* op_name(OpCode op) {
  switch (op) {
    case OpCode::ping: return "PING";
    case OpCode::createSession: return "SESS";
    case OpCode::multi: return "MULT";
    case OpCode::multiRead: return "MLTR";
    case OpCode::create:
    case OpCode::create2:
    case OpCode::createTTL:
    case OpCode::createContainer: return "CREA";
    case OpCode::remove: return "DELE";
    case OpCode::setData: return "SETD";
    case OpCode::reconfig: return "RECO";
    case OpCode::setACL: return "SETA";
    case OpCode::closeSession: return "CLOS";
    case OpCode::sync: return "SYNC";
    case OpCode::check: return "CHEC";
    case OpCode::exists: return "EXIS";
    case OpCode::getData: return "GETD";
    case OpCode::setWatches: return "SETW";
    case OpCode::setWatches2: return "STW2";
    case OpCode::addWatch: return "ADDW";
    case OpCode::getACL: return "GETA";
    case OpCode::getChildren:
    case OpCode::getChildren2: return "GETC";
    case OpCode::getAllChildrenNumber: return "GETACN";
    case OpCode::checkWatches: return "CHKW";
    case OpCode::removeWatches: return "REMW";
    case OpCode::whoAmI: return "HOMI";
    case OpCode::getEphemerals: return "GETE";
    default: return "NA";
  }
}
}  // namespace

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

template <class R>
void RequestPipeline::send_reply(ConnId id, int32_t xid, Zxid zxid, const R& body) {
  Conn* c = conn(id);
  if (!c) return;
  send_frame(*c, frame_of(wire::ReplyHeader{xid, zxid, 0}, &body), xid == wire::xid::notification);
}

void RequestPipeline::handle_request(ConnId id, Conn& c, std::string_view payload) {
  wire::Reader r(payload);
  wire::RequestHeader h;
  h.visit(r);
  if (!r.ok()) {
    spdlog::warn("closing connection of {}: request of {} bytes has no header", who(c), payload.size());
    close_conn(id);
    return;
  }
  Request q;
  q.xid = h.xid;
  q.type = h.type;
  q.op = static_cast<OpCode>(h.type);
  q.payload = payload;
  q.body = payload.substr(8);
  q.now = clock_();  // the pipeline's clock is not free
  // set_trace_mask chooses what is traced, as ZooKeeper's ZooTrace (at log level trace).
  if ((trace_mask_ & (q.op == OpCode::ping ? trace_mask::client_ping : trace_mask::client_request)) &&
      spdlog::should_log(spdlog::level::trace))
    spdlog::trace("{}: request {} xid {} of {} bytes", who(c), op_name(q.op), q.xid, payload.size());
  if (q.op != OpCode::auth && q.op != OpCode::sasl && !enforced_auth_met(c)) {
    // As ZooKeeper's AuthenticationHelper: the reply, then the connection closed (the session
    // itself lives on until it expires or a client that authenticates re-attaches it).
    spdlog::warn("closing connection of {}: none of its ids is of a scheme enforce.auth.schemes asks for", who(c));
    send_reply(id, q.xid, 0, Err::sessionClosedRequireSasl);
    close_conn(id);
    return;
  }
  q.last = tree_.last_applied();
  if (!admitted(id, c, q) || routed(id, c, q)) return;
  if (q.op == OpCode::auth) {
    handle_auth(id, c, q.xid, q.body);
    return;
  }
  if (opts_.linearizable_reads && !c.read_only && hold_for_barrier(id, c, q.op, q.xid, payload)) return;
  dispatch(id, c, q);
}

bool RequestPipeline::admitted(ConnId id, Conn& c, const Request& q) {
  if (c.read_only) {
    // Nothing reaches a leader from here: what would change the tree is refused, a close is
    // this member's alone, and a ping is answered at once.
    if (q.op == OpCode::closeSession) {
      send_reply(id, q.xid, q.last, Err::ok);
      close_conn(id);
      return false;
    }
    if (is_write(q.op) || q.op == OpCode::sync || q.op == OpCode::reconfig) {
      send_reply(id, q.xid, q.last, Err::notReadOnly);
      return false;
    }
    if (q.op == OpCode::ping) {
      send_reply(id, wire::xid::ping, q.last, Err::ok);
      return false;
    }
  } else if (!sessions_.touch(c.session, session_time(q.now))) {
    send_reply(id, q.xid, q.last, Err::sessionExpired);
    close_conn(id);
    return false;
  }
  return true;
}

bool RequestPipeline::routed(ConnId id, Conn& c, const Request& q) {
  if (!leads() && !c.read_only) {
    touched_.push_back(c.session);  // the leader, which expires sessions, hears of it each tick
    if (!wire::goes_to_leader(q.op)) return false;
    Forwarded f;
    f.kind = Forwarded::request;
    f.session = c.session;
    f.cxid = q.xid;
    f.type = q.type;
    f.body = std::string(q.body);
    f.auth = c.auth;
    Pending p{Kind::request, id, q.xid, q.now};
    p.session = c.session;
    if (q.op == OpCode::sync) {
      // Answered once the leader's no-op commits here: by then this server has applied every
      // txn the leader committed before it.
      auto req = wire::decode<wire::SyncRequest>(q.body);
      if (!req) {
        send_reply(id, q.xid, q.last, Err::marshallingError);
        return true;
      }
      p.sync_path = req->path;
    }
    forward(std::move(f), std::move(p));
    return true;
  }
  if (q.op != OpCode::sync || !ensemble_) return false;
  // An ensemble's leader answers a sync once its no-op commits, as a follower's: a quorum then
  // still follows it. Answered at once (as ZooKeeper's leader does), a leader deposed without
  // knowing it yet (stopped, or cut off, up to syncLimit) let the session's next read return
  // what the new leader had already overwritten.
  auto req = wire::decode<wire::SyncRequest>(q.body);
  if (!req) {
    send_reply(id, q.xid, q.last, Err::marshallingError);
    return true;
  }
  Pending p{Kind::request, id, q.xid, q.now};
  p.session = c.session;
  p.sync_path = req->path;
  submit(marker_txn(c.session, q.xid, q.now, q.type, Err::ok), std::move(p));
  return true;
}

void RequestPipeline::dispatch(ConnId id, Conn& c, const Request& q) {
  const Zxid last = q.last;
  const int32_t xid = q.xid;
  // Everything but a write or a close is answered in this call, at the time the request came
  // (the clock is in milliseconds and reading it again costs more than most reads).
  if (!is_write(q.op) && q.op != OpCode::closeSession) note_reply(c, q.op, xid, last, q.now, q.now);
  switch (q.op) {
    case OpCode::ping:
      if (!leads() && ensemble_->progress().link != 0) {
        // Answered once the leader has heard of the touch (peer_progress), not before. (A host
        // that tracks no link progress, link 0, has its pings answered at once.)
        if (ping_waiters_.size() >= max_ping_waiters) {
          spdlog::warn("closing connection of {}: too many pings wait for the leader", who(c));
          return close_conn(id);
        }
        ping_waiters_.push_back(PingWaiter{id, wire::xid::ping, 0, 0});
        return;
      }
      // ZooKeeper answers a ping with xid -2 whatever xid it came with (clients send -2).
      return send_reply(id, wire::xid::ping, last, Err::ok);
    case OpCode::setWatches:
      return handle_set_watches(id, c, xid, q.body);
    case OpCode::sync: {
      auto req = wire::decode<wire::SyncRequest>(q.body);
      if (!req) return send_reply(id, xid, last, Err::marshallingError);
      return send_reply(id, xid, last, wire::SyncResponse{req->path});
    }
    case OpCode::closeSession: {
      Session* s = sessions_.find(c.session);
      if (s) s->closing = true;
      int64_t started = q.now;
      Txn t = staged([&] { return prep_.close_session(c.session, xid, started); }, &metrics_.close_session_prep_time,
                     started);
      return submit(std::move(t), Pending{Kind::request, id, xid, started});
    }
    case OpCode::setWatches2:
      return handle_set_watches(id, c, xid, q.body, true);
    case OpCode::exists:
    case OpCode::getData:
    case OpCode::getChildren:
    case OpCode::getChildren2:
    case OpCode::getACL:
      return handle_read(id, c, q.op, xid, q.body);
    case OpCode::multiRead:
      return handle_multi_read(id, c, xid, q.body);
    case OpCode::getEphemerals:
    case OpCode::getAllChildrenNumber:
    case OpCode::whoAmI:
    case OpCode::addWatch:
    case OpCode::checkWatches:
    case OpCode::removeWatches:
    case OpCode::sasl:
      return handle_other(id, c, q.op, xid, q.body);
    default:
      break;
  }
  if (is_write(q.op)) return submit_write(id, c, q);
  spdlog::warn("closing connection of {}: unknown opcode {}", who(c), q.type);
  send_reply(id, xid, -1, Err::unimplemented);
  close_conn(id);
}

void RequestPipeline::submit_write(ConnId id, Conn& c, const Request& q) {
  if (!owns(c.session, 0)) {
    submit(marker_txn(c.session, q.xid, q.now, q.type, Err::sessionMoved), Pending{Kind::request, id, q.xid, q.now});
    return;
  }
  int64_t started = q.now;
  PrepRequest pr{c.session, q.xid, q.op, q.body, &c.auth, started};
  Txn t = staged([&] { return prep_.prepare(pr); }, &metrics_.prep_process_time, started);
  submit(std::move(t), Pending{Kind::request, id, q.xid, started});
}

void RequestPipeline::handle_read(ConnId id, Conn& c, OpCode op, int32_t xid, std::string_view body) {
  Zxid last = tree_.last_applied();
  if (op == OpCode::getACL) {
    auto req = wire::decode<wire::GetACLRequest>(body);
    if (!req) return send_reply(id, xid, last, Err::marshallingError);
    const Node* n = tree_.find(req->path);
    if (!n) return send_reply(id, xid, last, Err::noNode);
    const auto& acl = *tree_.acl_of(*n);
    if (!allows_(acl, wire::perms::read | wire::perms::admin, c.auth))
      return send_reply(id, xid, last, Err::noAuth);
    wire::GetACLResponse resp{acl, client_stat(*n)};
    // Without ADMIN, digest ids are shown without their hashes, as ZooKeeper does.
    if (!allows_(acl, wire::perms::admin, c.auth))
      for (auto& a : resp.acl)
        if (a.id.scheme == "digest") a.id.id = a.id.id.substr(0, a.id.id.find(':')) + ":x";
    return send_reply(id, xid, last, resp);
  }
  auto req = wire::decode<wire::PathWatchRequest>(body);
  if (!req) return send_reply(id, xid, last, Err::marshallingError);
  const Node* n = tree_.find(req->path);
  if (op == OpCode::exists) {
    // exists leaves a watch on a missing node too: it fires when the node is created.
    if (req->watch) watches_.add_data_watch(req->path, id);
    if (!n) return send_reply(id, xid, last, Err::noNode);
    metrics_.add_read(req->path, 0);
    return send_reply(id, xid, last, wire::StatResponse{client_stat(*n)});
  }
  if (Err e = readable(n, c); e != Err::ok) return send_reply(id, xid, last, e);
  if (op == OpCode::getData) {
    if (req->watch) watches_.add_data_watch(req->path, id);
    metrics_.add_read(req->path, n->data_size());
    // GetDataResponse written from the node's bytes: a large value is copied once, into the frame.
    wire::Stat stat = client_stat(*n);
    std::string_view data = n->data();
    bool has_data = n->has_data();
    return send_frame(c, reply_frame(wire::ReplyHeader{xid, last, 0}, [&](wire::Writer& w) {
      if (has_data)
        w.put_string(data);
      else
        w.put_int(-1);
      stat.visit(w);
    }, data.size() + 128));
  }
  if (req->watch) watches_.add_child_watch(req->path, id);
  // GetChildrenResponse (and GetChildren2Response's stat) written from the node's children: no
  // string is made for each name.
  int64_t names = 0;
  int32_t count = 0;
  for (const Node& kid : n->children()) {
    names += static_cast<int64_t>(kid.name().size());
    ++count;
  }
  metrics_.add_read(req->path, names);
  std::optional<wire::Stat> stat;
  if (op == OpCode::getChildren2) stat = client_stat(*n);
  return send_frame(c, reply_frame(wire::ReplyHeader{xid, last, 0}, [&](wire::Writer& w) {
    w.put_int(count);
    for (const Node& kid : n->children()) w.put_string(kid.name());
    if (stat) stat->visit(w);
  }, static_cast<size_t>(names) + 4 * static_cast<size_t>(count) + 128));
}

Err RequestPipeline::readable(const Node* n, const Conn& c) const {
  if (!n) return Err::noNode;
  return allows_(*tree_.acl_of(*n), wire::perms::read, c.auth) ? Err::ok : Err::noAuth;
}

std::vector<std::string> RequestPipeline::children_of(const Node& n) {
  std::vector<std::string> kids;
  kids.reserve(n.child_count());
  for (const Node& kid : n.children()) kids.emplace_back(kid.name());
  return kids;
}

void RequestPipeline::handle_multi_read(ConnId id, Conn& c, int32_t xid, std::string_view body) {
  Zxid last = tree_.last_applied();
  // ZooKeeper answers a malformed multiRead with MarshallingError; one holding another kind of
  // op with MarshallingError too, but after the results of the reads before it.
  auto decoded = wire::decode_multi(body, true);
  if (decoded.error == wire::MultiDecodeError::malformed) return send_reply(id, xid, last, Err::marshallingError);
  // Each op on its own, as ZooKeeper does: a failed read fails alone, nothing rolls back. Its
  // ops set no watches (ZooKeeper's Op.GetData and Op.GetChildren carry no watch flag).
  std::vector<wire::MultiResult> results;
  results.reserve(decoded.ops.size());
  for (const auto& op : decoded.ops) {
    const auto& req = std::get<wire::PathWatchRequest>(op.record);
    const Node* n = tree_.find(req.path);
    if (Err e = readable(n, c); e != Err::ok) {
      results.push_back({-1, static_cast<int32_t>(e), wire::ErrorResponse{static_cast<int32_t>(e)}});
    } else if (op.type == OpCode::getData) {
      results.push_back({static_cast<int32_t>(op.type), 0, wire::GetDataResponse{n->data_bytes(), client_stat(*n)}});
    } else {
      results.push_back({static_cast<int32_t>(op.type), 0, wire::GetChildrenResponse{children_of(*n)}});
    }
  }
  int32_t err = decoded.error ? static_cast<int32_t>(Err::marshallingError) : 0;
  send_frame(c, reply_frame(wire::ReplyHeader{xid, last, err},
                           [&](wire::Writer& w) { wire::encode_multi_response(w, results); }));
}

void RequestPipeline::handle_other(ConnId id, Conn& c, OpCode op, int32_t xid, std::string_view body) {
  Zxid last = tree_.last_applied();
  auto empty_ok = [&] { send_reply(id, xid, last, Err::ok); };
  switch (op) {
    case OpCode::getEphemerals: {
      auto req = wire::decode<wire::PathRequest>(body);
      if (!req) return send_reply(id, xid, last, Err::marshallingError);
      // ZooKeeper's rule: an empty or "/" prefix (spaces trimmed) means all, else a plain
      // string prefix of the path.
      std::string_view trimmed = req->path;
      while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
      bool all = trimmed.empty() || trimmed == "/";
      wire::GetEphemeralsResponse resp;
      for (auto& p : tree_.ephemerals_of(c.session))
        if (all || p.starts_with(req->path)) resp.ephemerals.push_back(std::move(p));
      return send_reply(id, xid, last, resp);
    }
    case OpCode::getAllChildrenNumber: {
      auto req = wire::decode<wire::PathRequest>(body);
      if (!req) return send_reply(id, xid, last, Err::marshallingError);
      const Node* n = tree_.find(req->path);
      if (Err e = readable(n, c); e != Err::ok) return send_reply(id, xid, last, e);
      return send_reply(id, xid, last,
                        wire::GetAllChildrenNumberResponse{static_cast<int32_t>(DataTree::count_descendants(*n))});
    }
    case OpCode::whoAmI: {
      wire::WhoAmIResponse resp;
      for (const auto& a : c.auth)  // a digest shows its user name, as ZooKeeper's providers do
        resp.clientInfo.push_back(
            wire::ClientInfo{a.scheme, a.scheme == "digest" ? a.id.substr(0, a.id.find(':')) : a.id});
      return send_reply(id, xid, last, resp);
    }
    case OpCode::addWatch: {
      auto req = wire::decode<wire::AddWatchRequest>(body);
      if (!req || !watches_.add_persistent(req->path, id, req->mode))
        return send_reply(id, xid, last, Err::marshallingError);
      return send_reply(id, xid, last, wire::ErrorResponse{0});  // ZooKeeper's reply has this body
    }
    case OpCode::checkWatches:
    case OpCode::removeWatches: {
      // Both records are (path, type).
      auto req = wire::decode<wire::CheckWatchesRequest>(body);
      if (!req || req->type < 1 || req->type > 5) return send_reply(id, xid, last, Err::marshallingError);
      auto type = static_cast<WatcherType>(req->type);
      bool held = op == OpCode::checkWatches ? watches_.contains(req->path, type, id)
                                             : watches_.remove(req->path, type, id);
      if (!held) return send_reply(id, xid, last, Err::noWatcher);
      return empty_ok();
    }
    case OpCode::sasl:
      if (opts_.sasl) return handle_sasl(id, c, xid, body);
      // No SASL here. ZooKeeper 3.8 without SASL answers every SASL packet with OK and no token,
      // which ends the Java client's exchange (it fails on a missing token) but not kazoo's:
      // kazoo sends again and again until the session expires. The first answer is ZooKeeper's;
      // a client that asks again after it cannot authenticate here, and is told so at once.
      if (!c.sasl_answered) {
        c.sasl_answered = true;
        return send_reply(id, xid, 0, wire::SetSaslResponse{std::nullopt});  // zxid 0, as ZooKeeper's
      }
      spdlog::warn("closing connection of {}: it asks for SASL, which this server does not offer", who(c));
      ++counters_.auth_failed;
      send_reply(id, xid, 0, Err::authFailed);
      return close_conn(id);
    default:
      return send_reply(id, xid, last, Err::unimplemented);
  }
}

// As ZooKeeper's processSasl: each token through the connection's exchange; once it is done,
// sasl:<authorization id> (and super, for zookeeper.superUser) joins the connection's ids.
void RequestPipeline::handle_sasl(ConnId id, Conn& c, int32_t xid, std::string_view body) {
  auto req = wire::decode<wire::GetSaslRequest>(body);
  if (!req) {  // ZooKeeper fails to read the record and drops the connection
    spdlog::warn("closing connection of {}: a SASL packet that does not decode", who(c));
    return close_conn(id);
  }
  if (!c.sasl) c.sasl = opts_.sasl();
  auto step = c.sasl->step(req->token.value_or(std::string()));
  using Status = auth::SaslExchange::Step::Status;
  if (step.status == Status::failed) {
    spdlog::warn("{} failed to SASL authenticate: {}", who(c), step.error);
    ++counters_.auth_failed;
    c.sasl.reset();
    if (!opts_.sasl_failed_clients_stay) {
      bool required = std::find(opts_.enforce_auth_schemes.begin(), opts_.enforce_auth_schemes.end(), "sasl") !=
                      opts_.enforce_auth_schemes.end();
      Err err = required ? Err::sessionClosedRequireSasl : Err::authFailed;
      wire::SetSaslResponse none{std::nullopt};  // ZooKeeper sends its (null) token with the error
      send_frame(c, frame_of(wire::ReplyHeader{xid, 0, static_cast<int32_t>(err)}, &none));
      return close_conn(id);
    }
  } else if (step.status == Status::done) {
    spdlog::info("{}: SASL authenticated as '{}'", who(c), step.id);
    add_auth_id(c.auth, wire::Id{"sasl", step.id});
    if (!opts_.sasl_super_user.empty() && step.id == opts_.sasl_super_user) add_auth_id(c.auth, wire::Id{"super", ""});
  }
  send_reply(id, xid, 0, wire::SetSaslResponse{step.token});
}

bool RequestPipeline::enforced_auth_met(const Conn& c) const {
  const auto& wanted = opts_.enforce_auth_schemes;
  if (wanted.empty()) return true;
  for (const auto& a : c.auth)
    if (std::find(wanted.begin(), wanted.end(), a.scheme) != wanted.end()) return true;
  return false;
}

// The reply echoes the request's xid, as ZooKeeper 3.6+ does: the Java and C clients send auth
// with xid -4 and match that, the Go client (go-zookeeper) sends an ordinary xid and waits for it.
void RequestPipeline::handle_auth(ConnId id, Conn& c, int32_t xid, std::string_view body) {
  auto req = wire::decode<wire::AuthPacket>(body);
  if (req && req->scheme == "digest" && req->auth) {
    wire::Id id{"digest", digest_id(*req->auth)};
    // The super digest's user passes every ACL check (acl_allows), as in ZooKeeper.
    if (!opts_.super_digest.empty() && id.id == opts_.super_digest) add_auth_id(c.auth, wire::Id{"super", ""});
    add_auth_id(c.auth, id);
    send_frame(c, frame_of<wire::ErrorResponse>(wire::ReplyHeader{xid, 0, 0}, nullptr));
    return;
  }
  spdlog::warn("authentication failed for {}: scheme '{}'", who(c), req ? req->scheme : "?");
  ++counters_.auth_failed;
  send_frame(c, frame_of<wire::ErrorResponse>(
      wire::ReplyHeader{xid, 0, static_cast<int32_t>(Err::authFailed)}, nullptr));
  close_conn(id);
}

void RequestPipeline::handle_set_watches(ConnId id, Conn& c, int32_t xid, std::string_view body, bool v2) {
  (void)c;
  Zxid last = tree_.last_applied();
  std::optional<wire::SetWatches2> req;
  if (v2) {
    req = wire::decode<wire::SetWatches2>(body);
  } else if (auto v1 = wire::decode<wire::SetWatches>(body)) {
    req = wire::SetWatches2{v1->relativeZxid, std::move(v1->dataWatches), std::move(v1->existWatches),
                            std::move(v1->childWatches), {}, {}};
  }
  if (!req) return send_reply(id, xid, last, Err::marshallingError);
  // ZooKeeper's DataTree.setWatches: what changed after relativeZxid fires at once, the rest
  // is watched again.
  std::vector<WatchEvent> events;
  auto fire = [&](wire::EventType t, const std::string& p) {
    events.push_back({id, wire::WatcherEvent{static_cast<int32_t>(t),
                                             static_cast<int32_t>(wire::KeeperState::syncConnected), p}});
  };
  for (const auto& p : req->dataWatches) {
    const Node* n = tree_.find(p);
    if (!n)
      fire(wire::EventType::nodeDeleted, p);
    else if (n->mzxid > req->relativeZxid)
      fire(wire::EventType::nodeDataChanged, p);
    else
      watches_.add_data_watch(p, id);
  }
  for (const auto& p : req->existWatches) {
    if (tree_.find(p))
      fire(wire::EventType::nodeCreated, p);
    else
      watches_.add_data_watch(p, id);
  }
  for (const auto& p : req->childWatches) {
    const Node* n = tree_.find(p);
    if (!n)
      fire(wire::EventType::nodeDeleted, p);
    else if (n->pzxid > req->relativeZxid)
      fire(wire::EventType::nodeChildrenChanged, p);
    else
      watches_.add_child_watch(p, id);
  }
  // Persistent watches are set again as they were; nothing fires for what changed meanwhile.
  for (const auto& p : req->persistentWatches) watches_.add_persistent(p, id, 0);
  for (const auto& p : req->persistentRecursiveWatches) watches_.add_persistent(p, id, 1);
  for (const auto& e : events) send_reply(id, wire::xid::notification, -1, e.event);
  send_reply(id, xid, last, Err::ok);
}

void RequestPipeline::submit(Txn txn, Pending p) {
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) ++c->in_flight;
  p.prep_mark = prep_.mark();
  p.seq = ++submitted_;
  p.proposed_ms = clock_();
  hold_reads(p, txn.session);
  // Queued before proposing (its zxid unknown yet): a synchronous log commits it from inside
  // propose(), and a commit while the front's zxid is unknown is that one.
  pending_.push_back(p);
  std::string payload = encode_txn(txn);
  if (ensemble_) counters_.proposals.add(static_cast<int64_t>(payload.size()));
  int64_t prepared = std::exchange(prepared_at_, 0);
  auto z = replicator_.propose(std::move(payload));
  if (prepared) metrics_.proposal_process_time.add(std::max<int64_t>(0, clock_() - prepared));
  if (z) {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      if (it->seq == p.seq) {
        it->zxid = *z;
        break;
      }
    return;
  }
  // Not proposed (this server does not lead): nothing was staged for it that may stay, and its
  // client is treated as on a lost connection, as ZooKeeper's clients are on a leader change.
  spdlog::warn("a txn could not be proposed (this server does not lead); closing its connection");
  pending_.pop_back();
  release_reads(p);
  // Its staging in prep's overlay goes with the next txn that applies (retire() takes every
  // mark up to that one's), or now when nothing else is in flight.
  if (pending_.empty()) retire_staged();
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) {
    --c->in_flight;
    close_conn(p.conn);
  }
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

bool RequestPipeline::hold_for_barrier(ConnId id, Conn& c, OpCode op, int32_t xid, std::string_view payload) {
  if (!reads_tree(op)) return false;
  if (c.barrier_passed) {
    c.barrier_passed = false;
    return false;
  }
  // The barrier goes out after the read arrived, so its commit follows every write
  // acknowledged before the read was sent; the read is answered once it is applied here. It is
  // a sync's no-op, through the leader from any member (a leader's commit of it also proves it
  // still leads).
  Pending p{Kind::request, id, xid, clock_()};
  p.barrier = true;
  p.session = c.session;
  if (leads()) {
    submit(marker_txn(c.session, xid, clock_(), static_cast<int32_t>(OpCode::sync), Err::ok), std::move(p));
  } else {
    Forwarded f;
    f.kind = Forwarded::request;
    f.session = c.session;
    f.cxid = xid;
    f.type = static_cast<int32_t>(OpCode::sync);
    f.auth = c.auth;
    forward(std::move(f), std::move(p));
  }
  if (c.closing) return true;  // it could not be sent: the connection is closing
  // The read waits at the front of `held`, the frames after it behind it.
  c.held.push_front(Conn::Held{std::string(payload), clock_()});
  ++held_total_;
  return true;
}

bool RequestPipeline::matches(const Pending& p, const Txn& txn, Zxid zxid) {
  if (p.forwarded) {
    // The leader proposes a member's requests in the order they came: the next of ours to
    // commit is the front one.
    if (txn.session != p.session) return false;
    if (p.kind == Kind::connect)
      return txn.type == (p.reattach ? reattach_txn_type : static_cast<int32_t>(OpCode::createSession));
    return txn.cxid == p.xid && txn.type != static_cast<int32_t>(OpCode::createSession) &&
           txn.type != reattach_txn_type;
  }
  return p.zxid == zxid || p.zxid == 0;
}

void RequestPipeline::forward(Forwarded f, Pending p) {
  p.forwarded = true;
  p.seq = ++submitted_;
  if (!ensemble_->forward(encode_forwarded(f))) {
    // No leader to take it: the client sees a lost connection and tries another server.
    if (p.conn) close_conn(p.conn);
    return;
  }
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) ++c->in_flight;
  hold_reads(p, f.session);
  pending_.push_back(std::move(p));
}

bool RequestPipeline::owns(SessionId s, int64_t member) {
  auto [it, fresh] = session_owner_.emplace(s, member);
  return fresh || it->second == member;
}

void RequestPipeline::receive_forwarded(int64_t from, std::string_view bytes) {
  auto f = decode_forwarded(bytes);
  if (!f) {
    spdlog::warn("a forwarded request of {} bytes does not decode; dropped", bytes.size());
    return;
  }
  int64_t now = clock_();
  switch (f->kind) {
    case Forwarded::touch:
      for (SessionId s : f->sessions) sessions_.touch(s, session_time(now));
      return;
    case Forwarded::reattach: {
      // As ZooKeeper's revalidation: a live session with this password moves to `from`.
      ++metrics_.revalidations;
      Session* s = sessions_.find(f->session);
      bool valid = s && !s->closing && s->passwd == f->passwd;
      if (valid) {
        session_owner_[f->session] = from;
        sessions_.touch(f->session, session_time(now));
      }
      submit(marker_txn(f->session, 0, now, reattach_txn_type, valid ? Err::ok : Err::sessionExpired),
             Pending{Kind::request, 0, 0});
      return;
    }
    case Forwarded::create_session: {
      session_owner_[f->session] = from;
      Txn t;
      t.session = f->session;
      t.time = now;
      t.type = static_cast<int32_t>(OpCode::createSession);
      t.body = CreateSessionTxn{f->timeout, f->passwd};
      submit(std::move(t), Pending{Kind::request, 0, f->cxid});
      return;
    }
    case Forwarded::request: {
      auto op = static_cast<OpCode>(f->type);
      sessions_.touch(f->session, session_time(now));
      if (!owns(f->session, from)) {
        // The session moved to another member since this request's connection was made.
        submit(marker_txn(f->session, f->cxid, now, f->type, Err::sessionMoved), Pending{Kind::request, 0, f->cxid});
      } else if (op == OpCode::closeSession) {
        Session* s = sessions_.find(f->session);
        if (s) s->closing = true;
        submit(staged([&] { return prep_.close_session(f->session, f->cxid, now); }, &metrics_.close_session_prep_time),
               Pending{Kind::request, 0, f->cxid});
      } else if (op == OpCode::sync || !is_write(op)) {
        // A sync is a no-op txn: its commit reaches the member after every commit before it.
        submit(marker_txn(f->session, f->cxid, now, f->type, op == OpCode::sync ? Err::ok : Err::unimplemented),
               Pending{Kind::request, 0, f->cxid});
      } else {
        PrepRequest pr{f->session, f->cxid, op, f->body, &f->auth, now};
        submit(staged([&] { return prep_.prepare(pr); }, &metrics_.prep_process_time),
               Pending{Kind::request, 0, f->cxid});
      }
      return;
    }
    default:
      spdlog::warn("a forwarded request of unknown kind {}; dropped", f->kind);
  }
}

void RequestPipeline::role_changed() {
  if (!ensemble_) return;
  bool leading = ensemble_->leads() && ensemble_->serving();
  if (!ensemble_->serving() || !leading) {
    // Whatever this server proposed or forwarded may or may not commit: its clients see a lost
    // connection (leadership_lost), as ZooKeeper's do.
    leadership_lost();
  }
  if (!ensemble_->serving()) {
    std::vector<ConnId> all;
    for (const auto& [id, c] : conns_) all.push_back(id);
    for (ConnId id : all) close_conn(id);
    touched_.clear();
    return;
  }
  std::vector<ConnId> read_only_conns;  // serving again: its read-only clients look for it anew
  for (const auto& [id, c] : conns_)
    if (c.read_only) read_only_conns.push_back(id);
  for (ConnId id : read_only_conns) close_conn(id);
  if (leading) sessions_.touch_all(session_time(clock_()));
}

void RequestPipeline::retire_staged(std::optional<uint64_t> mark) {
  size_t before = prep_.overlay_size();
  if (mark)
    prep_.retire(*mark);
  else
    prep_.retire_all();
  metrics_.outstanding_changes_removed += static_cast<int64_t>(before - std::min(before, prep_.overlay_size()));
}

void RequestPipeline::lose(Pending p) {
  pending_.pop_front();
  if (pending_.empty()) retire_staged();
  if (Conn* c = p.conn ? conn(p.conn) : nullptr) {
    --c->in_flight;
    close_conn(p.conn);
  }
  release_reads(p);
}

void RequestPipeline::leadership_lost() {
  // Whatever is in flight may still commit under the next leader, or not: no answer is true, so
  // clients see a lost connection (as ZooKeeper's do on a leader change) and learn the outcome
  // from the tree. What prep assumed goes; a commit that still comes is applied as any other.
  while (!pending_.empty()) lose(pending_.front());
  retire_staged();
  sessions_.reopen_closing(session_time(clock_()));
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

std::string RequestPipeline::who(const Conn& c) {
  std::string peer = c.link ? c.link->peer_endpoint() : std::string("?");
  if (!peer.empty() && peer[0] == '/') peer.erase(0, 1);
  if (c.session == 0) return "connection from " + peer;
  return fmt::format("session 0x{:x} from {}", c.session, peer);
}

std::string RequestPipeline::describe(ConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? std::string("a closed connection") : who(it->second);
}

std::vector<RequestPipeline::ConnectionView> RequestPipeline::connections() const {
  std::vector<ConnectionView> out;
  out.reserve(conns_.size());
  for (const auto& [id, c] : conns_)
    out.push_back({id, &c.stats, c.link, c.session, c.attached, c.negotiated_timeout, c.held.size()});
  std::sort(out.begin(), out.end(), [](const ConnectionView& a, const ConnectionView& b) { return a.id < b.id; });
  return out;
}

SessionId RequestPipeline::session_of(ConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? SessionId{0} : it->second.session;
}

void RequestPipeline::reset_connection_stats() {
  for (auto& [id, c] : conns_) c.stats = ConnStats{0, 0, c.stats.established_ms, 0, 0, -1, -1, "NA", {}};
}

void RequestPipeline::reset_stats() {
  packets_received_ = packets_sent_ = 0;
  latency_ = Latency{};
  counters_.client_response = BufferStats{};
  metrics_.reset();  // ZooKeeper resets its metrics too (ServerMetrics.resetAll)
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

void RequestPipeline::expire_nodes(int64_t now) {
  // Copied: applying a removal edits the set being walked.
  std::vector<std::string> candidates(tree_.expirable().begin(), tree_.expirable().end());
  for (const auto& path : candidates)
    if (auto t = staged([&] { return prep_.expire_node(path, now); })) submit(std::move(*t), Pending{Kind::internal, 0, 0});
}

void RequestPipeline::tick() {
  int64_t now = clock_();
  int64_t elapsed = elapsed_();
  if (last_check_elapsed_ >= 0) {
    // Between two checks both clocks advance alike; what the wall clock did beyond that is a
    // step (a slew of NTP's moves them apart by at most half a millisecond a second).
    int64_t step = (now - last_check_wall_) - (elapsed - last_check_elapsed_);
    if (std::abs(step) >= clock_step_ms) {
      session_skew_ += step;
      spdlog::warn("the wall clock moved by {} ms more than the monotonic clock since the last check: session "
                   "deadlines keep to the monotonic clock",
                   step);
    }
  }
  last_check_wall_ = now;
  last_check_elapsed_ = elapsed;
  int64_t at = session_time(now);
  close_sessionless(at);
  if (!leads()) {
    bool reported = false;
    if (!touched_.empty() && ensemble_->serving()) {
      std::sort(touched_.begin(), touched_.end());
      touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
      Forwarded f;
      f.kind = Forwarded::touch;
      f.sessions = std::move(touched_);
      reported = ensemble_->forward(encode_forwarded(f));
    }
    touched_.clear();
    // The pings whose touches this report carries wait for the leader to acknowledge it; without
    // a report (no leader) they are not answered: their clients move to another member.
    auto p = ensemble_->progress();
    for (auto it = ping_waiters_.begin(); it != ping_waiters_.end();) {
      if (it->seq != 0) {
        ++it;
      } else if (reported) {
        it->link = p.link;
        it->seq = p.sent;
        ++it;
      } else {
        it = ping_waiters_.erase(it);
      }
    }
    return;  // only the leader expires sessions, containers and TTL nodes
  }
  for (SessionId s : sessions_.take_expired(at)) {
    ++metrics_.stale_sessions_expired;
    submit(staged([&] { return prep_.close_session(s, 0, now); }), Pending{Kind::internal, 0, 0});
  }
  if (at >= next_container_check_) {
    next_container_check_ = at + opts_.container_check_interval_ms;
    expire_nodes(now);  // TTLs count from mtime, a wall time
  }
}

void RequestPipeline::close_sessionless(int64_t now) {
  std::vector<ConnId> late;
  while (!sessionless_.empty() && now - sessionless_.front().first >= opts_.sessionless_timeout_ms) {
    ConnId id = sessionless_.front().second;
    sessionless_.pop_front();
    auto it = conns_.find(id);
    if (it != conns_.end() && it->second.session == 0 && !it->second.closing) late.push_back(id);
  }
  for (ConnId id : late) {
    spdlog::info("closing {}: no ConnectRequest within {} ms (zookeeper.nio.sessionlessCnxnTimeout)", describe(id),
                 opts_.sessionless_timeout_ms);
    ++metrics_.sessionless_expired;
    close_conn(id);
  }
}

void RequestPipeline::peer_progress() {
  if (ping_waiters_.empty() || !ensemble_ || leads()) {
    ping_waiters_.clear();  // a leader answers its own pings; it has no waiters
    return;
  }
  auto p = ensemble_->progress();
  Zxid last = tree_.last_applied();
  while (!ping_waiters_.empty() && ping_waiters_.front().seq != 0) {
    const PingWaiter& w = ping_waiters_.front();
    if (w.link == p.link && w.seq > p.acked) break;  // not heard yet: nor is anything after it
    // Heard on this link: answered. On another link (a new leader): dropped unanswered.
    if (w.link == p.link && conn(w.conn)) send_reply(w.conn, w.xid, last, Err::ok);
    ping_waiters_.pop_front();
  }
}

std::pair<int, std::string> RequestPipeline::admin_authorized(std::string_view authorization, const std::string& peer,
                                                       const std::string& path, int32_t perms) const {
  if (authorization.empty()) return {401, "Auth info is missing for the command"};
  // "scheme" or "scheme data", as ZooKeeper splits it on one space.
  auto space = authorization.find(' ');
  std::string scheme(authorization.substr(0, space));
  std::string_view data = space == std::string_view::npos ? std::string_view() : authorization.substr(space + 1);
  AuthIds ids;
  if (scheme == "digest" && !data.empty() && data.find(' ') == std::string_view::npos &&
      data.find(':') != std::string_view::npos) {
    std::string id = digest_id(data);
    if (!opts_.super_digest.empty() && id == opts_.super_digest) add_auth_id(ids, wire::Id{"super", ""});
    add_auth_id(ids, wire::Id{"digest", id});
  } else if (scheme == "ip" && data.empty() && !peer.empty()) {
    add_auth_id(ids, wire::Id{"ip", peer});
  } else {
    return {401, "Not authenticated"};
  }
  const Node* n = tree_.find(path);
  if (!n) return {403, "Not authorized"};
  for (int32_t bit = 1; bit <= perms; bit <<= 1)
    if ((perms & bit) && !allows_(*tree_.acl_of(*n), bit, ids)) return {403, "Not authorized"};
  return {200, ""};
}

}  // namespace warden::server
