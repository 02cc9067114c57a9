#include "consensus/peer_codec.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

namespace warden::consensus {

std::string protocol_refusal(ProtocolRange theirs, ProtocolRange mine) {
  if (theirs.oldest <= theirs.newest && theirs.oldest <= mine.newest && mine.oldest <= theirs.newest) return {};
  return "it speaks peer protocol " + protocol_range_text(theirs) + ", this member " + protocol_range_text(mine);
}

void stamp_range(pb::PeerMessage& m, ProtocolRange r) {
  m.set_version(r.oldest);
  m.set_speaks(r.newest);
}

std::string encode_peer_message(const pb::PeerMessage& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

namespace {
// Entries must have non-negative, strictly ascending zxids.
bool ascending(const google::protobuf::RepeatedPtrField<pb::Entry>& entries) {
  int64_t prev = -1;
  for (const auto& e : entries) {
    if (e.zxid() <= prev) return false;
    prev = e.zxid();
  }
  return true;
}

// A configuration, when there is one: a version not below 0, at least one voter, at most 1,024
// members, and each id (0 to 2^31 - 1, as a reconfig may name) once, as a voter or an observer.
std::string check(const pb::Config& c) {
  if (c.version() < 0) return "a configuration with a negative version";
  if (c.voters().empty()) return "a configuration without voters";
  if (c.voters_size() + c.observers_size() > 1024) return "a configuration of more than 1024 members";
  if (c.members().size() > 256 * 1024) return "a configuration whose description is over 256 KiB";
  std::vector<int64_t> ids(c.voters().begin(), c.voters().end());
  ids.insert(ids.end(), c.observers().begin(), c.observers().end());
  for (int64_t id : ids)
    if (id < 0 || id > INT32_MAX) return "a configuration naming server id " + std::to_string(id);
  std::sort(ids.begin(), ids.end());
  if (auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    return "a configuration naming server " + std::to_string(*twice) + " twice";
  return {};
}

std::string check(const pb::PeerMessage& m) {
  using B = pb::PeerMessage::BodyCase;
  switch (m.body_case()) {
    case B::BODY_NOT_SET: return "no body";
    case B::kVote:
      if (m.vote().zxid() < 0 || m.vote().leader() < 0) return "a vote with a negative zxid or server id";
      if (m.vote().has_config())
        if (std::string why = check(m.vote().config()); !why.empty()) return why;
      return m.vote().has_pending() ? check(m.vote().pending()) : std::string();
    case B::kAckEpoch: return m.ack_epoch().last_zxid() < 0 ? "a negative zxid" : "";
    case B::kSync: {
      const auto& s = m.sync();
      if (s.trunc_after() < 0 || s.snapshot_zxid() < 0 || s.committed() < 0 || s.sync_last() < 0)
        return "a sync with a negative zxid";
      if (!ascending(s.entries())) return "a sync whose entries are not in ascending zxid order";
      return s.has_config() ? check(s.config()) : std::string();
    }
    case B::kAckNewLeader: return m.ack_new_leader().last_zxid() < 0 ? "a negative zxid" : "";
    case B::kUpToDate: return m.up_to_date().committed() < 0 ? "a negative zxid" : "";
    case B::kProposal:
      return ascending(m.proposal().entries()) ? "" : "a proposal whose entries are not in ascending zxid order";
    case B::kAck: return m.ack().zxid() < 0 ? "a negative zxid" : "";
    case B::kCommit: return m.commit().zxid() < 0 ? "a negative zxid" : "";
    case B::kInform:
      if (m.inform().committed() < 0) return "a negative zxid";
      return ascending(m.inform().entries()) ? "" : "an inform whose entries are not in ascending zxid order";
    case B::kPing: return m.ping().zxid() < 0 || m.ping().digest_zxid() < 0 ? "a negative zxid" : "";
    case B::kSyncData: {
      const auto& d = m.sync_data();
      if (d.after() < 0) return "sync data with a negative zxid";
      if (!ascending(d.entries()) || (d.entries_size() > 0 && d.entries(0).zxid() <= d.after()))
        return "sync data whose entries are not in ascending zxid order after its start";
      return {};
    }
    case B::kSnapChunk: {
      const auto& c = m.snap_chunk();
      if (c.zxid() <= 0) return "a snapshot chunk without a zxid";
      if (c.digest_from() < 0) return "a negative zxid";
      if (!c.end() && c.part() != 'n' && c.part() != 's') return "a snapshot chunk of an unknown part";
      return {};
    }
    default: return {};
  }
}
}  // namespace

DecodedPeerMessage decode_peer_message(std::string_view bytes) {
  DecodedPeerMessage out;
  if (bytes.size() > max_peer_message_bytes) {
    out.error = "a peer message of " + std::to_string(bytes.size()) + " bytes is over the limit";
    return out;
  }
  pb::PeerMessage m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    out.error = "not a peer message";
    return out;
  }
  if (std::string why = protocol_refusal(sender_range(m), ProtocolRange{}); !why.empty()) {
    out.error = why;
    return out;
  }
  if (std::string why = check(m); !why.empty()) {
    out.error = why;
    return out;
  }
  out.message = std::move(m);
  return out;
}

}  // namespace warden::consensus
