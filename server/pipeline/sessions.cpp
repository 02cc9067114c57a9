// Sessions on a connection: the handshake (new, re-attached, read-only), auth packets, SASL,
// enforced auth, setWatches.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

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

}  // namespace warden::server
