// The request pipeline's core: its connections, a frame's way through its stages (admitted,
// routed, dispatched), writes submitted to the replicator, the tick, the operator view. The
// other parts of RequestPipeline: pipeline_parts.hpp names them.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

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
