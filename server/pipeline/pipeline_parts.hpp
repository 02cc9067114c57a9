// What the request pipeline's files share (private to server/pipeline/): the includes, and
// the helpers that make reply frames, marker txns and lastOp names. RequestPipeline is one class
// in seven files a concern: request_pipeline.cpp (connections, a frame's stages, dispatch,
// submit, the tick), sessions.cpp (handshakes, auth, SASL, setWatches), reads.cpp,
// session_order.cpp (a session's reads and frames held behind its writes, the barrier),
// forwarding.cpp (a follower's forwards, a leader's receipt of them, role changes),
// commits.cpp (a commit applied, replay, the configuration node) and replies.cpp.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "server/pipeline/request_pipeline.hpp"
#include "wire/framing.hpp"

namespace warden::server {

using wire::Err;
using wire::is_write;
using wire::OpCode;

// A txn that changes nothing and carries only a result code (a sync's no-op, a refusal that
// must reach its member in order, a re-attach's confirmation).
inline Txn marker_txn(SessionId session, int32_t cxid, int64_t time, int32_t type, Err err) {
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

// ZooKeeper's names for a connection's last operation (FinalRequestProcessor's lastOp).
inline const char* op_name(OpCode op) {
  switch (op) {
    case OpCode::ping:
      return "PING";
    case OpCode::createSession:
      return "SESS";
    case OpCode::multi:
      return "MULT";
    case OpCode::multiRead:
      return "MLTR";
    case OpCode::create:
    case OpCode::create2:
    case OpCode::createTTL:
    case OpCode::createContainer:
      return "CREA";
    case OpCode::remove:
      return "DELE";
    case OpCode::setData:
      return "SETD";
    case OpCode::reconfig:
      return "RECO";
    case OpCode::setACL:
      return "SETA";
    case OpCode::closeSession:
      return "CLOS";
    case OpCode::sync:
      return "SYNC";
    case OpCode::check:
      return "CHEC";
    case OpCode::exists:
      return "EXIS";
    case OpCode::getData:
      return "GETD";
    case OpCode::setWatches:
      return "SETW";
    case OpCode::setWatches2:
      return "STW2";
    case OpCode::addWatch:
      return "ADDW";
    case OpCode::getACL:
      return "GETA";
    case OpCode::getChildren:
    case OpCode::getChildren2:
      return "GETC";
    case OpCode::getAllChildrenNumber:
      return "GETACN";
    case OpCode::checkWatches:
      return "CHKW";
    case OpCode::removeWatches:
      return "REMW";
    case OpCode::whoAmI:
      return "HOMI";
    case OpCode::getEphemerals:
      return "GETE";
    default:
      return "NA";
  }
}

// A reply with a body, from every file of the pipeline (replies.cpp has the rest of sending).
template <class R>
void RequestPipeline::send_reply(ConnId id, int32_t xid, Zxid zxid, const R& body) {
  Conn* c = conn(id);
  if (!c) return;
  send_frame(*c, frame_of(wire::ReplyHeader{xid, zxid, 0}, &body), xid == wire::xid::notification);
}

}  // namespace warden::server
