// A session's order: a read between its writes answered at its point in the apply order, frames
// held behind writes of an earlier connection, the linearizable barrier.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

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

}  // namespace warden::server
