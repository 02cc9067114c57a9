// Reads answered from the tree: one request, or a multiRead.
#include "server/pipeline/pipeline_parts.hpp"

namespace warden::server {

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

}  // namespace warden::server
