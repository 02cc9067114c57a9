// A follower's forwards to its leader and the leader's receipt of them; role changes and
// leadership lost; clients' pings waiting for the leader's acknowledgement.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

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

}  // namespace warden::server
