#include "wire/records.hpp"

namespace warden::wire {

namespace {
// The optional trailing readOnly byte: present only when exactly one byte is left.
std::optional<bool> read_trailing_bool(Reader& r) {
  if (!r.ok() || r.at_end()) return std::nullopt;
  return r.get_bool();
}
}  // namespace

std::optional<ConnectRequest> decode_connect_request(std::string_view in) {
  Reader r(in);
  ConnectRequest c;
  c.protocolVersion = r.get_int();
  c.lastZxidSeen = r.get_long();
  c.timeOut = r.get_int();
  c.sessionId = r.get_long();
  c.passwd = r.get_bytes();
  c.read_only = read_trailing_bool(r);
  if (!r.ok()) return std::nullopt;
  return c;
}

std::string encode_connect_request(const ConnectRequest& c) {
  std::string out;
  Writer w(out);
  w.put_int(c.protocolVersion);
  w.put_long(c.lastZxidSeen);
  w.put_int(c.timeOut);
  w.put_long(c.sessionId);
  w.put_bytes(c.passwd);
  if (c.read_only) w.put_bool(*c.read_only);
  return out;
}

std::optional<ConnectResponse> decode_connect_response(std::string_view in) {
  Reader r(in);
  ConnectResponse c;
  c.protocolVersion = r.get_int();
  c.timeOut = r.get_int();
  c.sessionId = r.get_long();
  c.passwd = r.get_bytes();
  c.read_only = read_trailing_bool(r);
  if (!r.ok()) return std::nullopt;
  return c;
}

std::string encode_connect_response(const ConnectResponse& c) {
  std::string out;
  Writer w(out);
  w.put_int(c.protocolVersion);
  w.put_int(c.timeOut);
  w.put_long(c.sessionId);
  w.put_bytes(c.passwd);
  if (c.read_only) w.put_bool(*c.read_only);
  return out;
}

namespace {
template <class R>
MultiOpRecord read_op(Reader& r) {
  R rec{};
  rec.visit(r);
  return rec;
}

std::optional<MultiOpRecord> read_write_op(OpCode t, Reader& r) {
  switch (t) {
    case OpCode::create:
    case OpCode::create2:
    case OpCode::createContainer:
      return read_op<CreateRequest>(r);
    case OpCode::createTTL:
      return read_op<CreateTTLRequest>(r);
    case OpCode::remove:
      return read_op<DeleteRequest>(r);
    case OpCode::setData:
      return read_op<SetDataRequest>(r);
    case OpCode::check:
      return read_op<CheckVersionRequest>(r);
    default:
      return std::nullopt;
  }
}

std::optional<MultiOpRecord> read_read_op(OpCode t, Reader& r) {
  switch (t) {
    case OpCode::getData:
    case OpCode::getChildren:
      return read_op<PathWatchRequest>(r);
    default:
      return std::nullopt;
  }
}
}  // namespace

MultiDecoded decode_multi(std::string_view in, bool read_only) {
  MultiDecoded out;
  Reader r(in);
  for (;;) {
    MultiHeader h;
    h.visit(r);
    if (!r.ok()) {
      out.error = MultiDecodeError::malformed;
      return out;
    }
    if (h.done) return out;
    if (out.ops.size() >= max_multi_ops) {
      out.error = MultiDecodeError::malformed;
      return out;
    }
    auto type = static_cast<OpCode>(h.type);
    auto rec = read_only ? read_read_op(type, r) : read_write_op(type, r);
    if (!rec) {
      out.error = MultiDecodeError::unsupportedOp;
      return out;
    }
    if (!r.ok()) {
      out.error = MultiDecodeError::malformed;
      return out;
    }
    out.ops.push_back(MultiOp{type, std::move(*rec)});
  }
}

std::string encode_multi_request(const std::vector<MultiOp>& ops) {
  std::string out;
  Writer w(out);
  for (const auto& op : ops) {
    MultiHeader{static_cast<int32_t>(op.type), false, -1}.visit(w);
    std::visit([&](const auto& rec) { rec.visit(w); }, op.record);
  }
  MultiHeader{-1, true, -1}.visit(w);
  return out;
}

void encode_multi_response(Writer& w, const std::vector<MultiResult>& results) {
  for (const auto& res : results) {
    MultiHeader{res.type, false, res.err}.visit(w);
    std::visit(
        [&](const auto& rec) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(rec)>, std::monostate>) rec.visit(w);
        },
        res.record);
  }
  MultiHeader{-1, true, -1}.visit(w);
}

std::optional<std::vector<MultiResult>> decode_multi_response(std::string_view in) {
  std::vector<MultiResult> out;
  Reader r(in);
  for (;;) {
    MultiHeader h;
    h.visit(r);
    if (!r.ok()) return std::nullopt;
    if (h.done) return out;
    MultiResult res{h.type, h.err, std::monostate{}};
    auto read = [&]<class R>() {
      R rec{};
      rec.visit(r);
      res.record = rec;
    };
    switch (static_cast<OpCode>(h.type)) {
      case OpCode::create: read.operator()<CreateResponse>(); break;
      case OpCode::create2:
      case OpCode::createContainer:
      case OpCode::createTTL: read.operator()<Create2Response>(); break;
      case OpCode::setData: read.operator()<StatResponse>(); break;
      case OpCode::getData: read.operator()<GetDataResponse>(); break;
      case OpCode::getChildren: read.operator()<GetChildrenResponse>(); break;
      case OpCode::error: read.operator()<ErrorResponse>(); break;
      case OpCode::remove:
      case OpCode::check: break;
      default: return std::nullopt;
    }
    if (!r.ok() || out.size() >= max_multi_ops) return std::nullopt;
    out.push_back(std::move(res));
  }
}

std::string_view err_name(Err e) {
  switch (e) {
    case Err::ok: return "OK";
    case Err::systemError: return "SystemError";
    case Err::runtimeInconsistency: return "RuntimeInconsistency";
    case Err::dataInconsistency: return "DataInconsistency";
    case Err::connectionLoss: return "ConnectionLoss";
    case Err::marshallingError: return "MarshallingError";
    case Err::unimplemented: return "Unimplemented";
    case Err::operationTimeout: return "OperationTimeout";
    case Err::badArguments: return "BadArguments";
    case Err::unknownSession: return "UnknownSession";
    case Err::newConfigNoQuorum: return "NewConfigNoQuorum";
    case Err::reconfigInProgress: return "ReconfigInProgress";
    case Err::apiError: return "APIError";
    case Err::noNode: return "NoNode";
    case Err::noAuth: return "NoAuth";
    case Err::badVersion: return "BadVersion";
    case Err::noChildrenForEphemerals: return "NoChildrenForEphemerals";
    case Err::nodeExists: return "NodeExists";
    case Err::notEmpty: return "NotEmpty";
    case Err::sessionExpired: return "SessionExpired";
    case Err::invalidCallback: return "InvalidCallback";
    case Err::invalidACL: return "InvalidACL";
    case Err::authFailed: return "AuthFailed";
    case Err::sessionMoved: return "SessionMoved";
    case Err::notReadOnly: return "NotReadOnly";
    case Err::ephemeralOnLocalSession: return "EphemeralOnLocalSession";
    case Err::noWatcher: return "NoWatcher";
    case Err::requestTimeout: return "RequestTimeout";
    case Err::reconfigDisabled: return "ReconfigDisabled";
    case Err::sessionClosedRequireSasl: return "SessionClosedRequireSasl";
    case Err::quotaExceeded: return "QuotaExceeded";
    case Err::throttledOp: return "Throttled";
  }
  return "Unknown";
}

}  // namespace warden::wire
