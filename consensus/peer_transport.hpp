// The peer transport: the members of an ensemble talk over TCP on their quorum and election
// ports (zoo.cfg's server.N=host:quorumPort:electionPort). Each member connects out to every
// other member's two ports and sends on those connections only; what it receives comes in on
// the connections the others made to it. So a pair of members has its own connection each way
// and no one decides who connects: there is nothing to tie-break. Votes go to the election
// port, everything else to the quorum port.
//
// A connection opens with a hello: "WRDP", the protocol version, the sender's id and the id it
// expects to reach (all big-endian). A sender the configuration does not name, itself, a hello
// meant for another member, any other version, or a sender whose connection does not come from
// an address of its configured host is refused, logged and closed; so is a connection that
// sends no whole hello within hello_timeout. Then frames: a 4-byte big-endian length and that
// many bytes of one encoded peer message (0 bytes: a keepalive, nothing to deliver); a length
// above max_frame, or a message the receiver cannot decode, closes that connection and nothing
// else, and so does silence past idle_timeout once identified. Without sslQuorum this is what
// stands between the peer ports and whoever reaches them, so everything is bounded: at most
// max_unidentified connections may be waiting for their hello (more are closed at once), and a
// member has one incoming connection per port (a newer hello replaces the older connection, as
// ZooKeeper's QuorumCnxManager does, so a member that restarted is never locked out by its
// half-open predecessor). Memory per connection is bounded by max_frame (max_stranger_frame for
// a server outside the configuration, of which at most max_strangers connect at once), and a
// failed allocation closes that connection instead of leaving the I/O loop.
//
// Outgoing connections leave from this member's own configured address (so the receiver's
// address check holds) and come back by themselves after a failure, with backoff, which a
// message to send does not cut short; what was queued for a member whose connection failed is
// dropped (the consensus core treats it as lost, as it treats a broken connection). Each
// member's queue is bounded: past max_queued bytes (a member that is stopped and does not read)
// its connection is closed and the queue dropped. A frame is never larger than a queue.
//
// TLS (ZooKeeper's sslQuorum, set_tls): outgoing connections handshake as TLS clients, checking
// the other member's certificate against its configured host; incoming ones take TLS, plaintext,
// or either (ZooKeeper's portUnification, told apart by the first byte, 0x16 for TLS), require a
// certificate the trust store accepts, and check it against the configured host of the member
// its hello names. So an ensemble moves to TLS by rolling restarts, as ZooKeeper's does:
// portUnification on everywhere, then sslQuorum on, then portUnification off.
//
// SASL (ZooKeeper's quorum.auth.*, set_auth): after its hello, the member that connected (the
// "learner" in ZooKeeper's words) authenticates to the one it reached (the "server") with auth
// frames, told from message frames by the top bit of their length: 0x80000000 | n, then n bytes,
// a status (0: a token follows; from the server also 1: authenticated, with its last token; 2:
// refused; 3: this member does not take SASL, with the reason) and the token or reason. The
// learner sends no message before the exchange ends. A server that requires SASL counts the
// connection as unidentified (hello_timeout, max_unidentified) until it authenticated, and
// closes it at a failure or at a message frame before; one that does not require it answers
// and takes the connection either way (ZooKeeper's rolling way in: enableSasl everywhere, then
// learnerRequireSasl, then serverRequireSasl). A learner that requires SASL drops the
// connection (and retries with backoff) unless the server authenticated it.
//
// Everything runs on the io_context given, the server's thread; Asio stays in the .cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
namespace ssl {
class context;
}
}  // namespace boost::asio

namespace warden::consensus {

class PeerTransport {
 public:
  struct Member {
    int64_t id = 0;
    std::string host;  // an address, or a name resolved at each connection attempt (off this thread)
    uint16_t quorum_port = 0;
    uint16_t election_port = 0;
  };
  // A frame from a member; false when it is garbage: that connection closes.
  using Receive = std::function<bool(int64_t from, std::string_view bytes)>;

  static constexpr uint32_t version = 1;
  // A sender queues at most max_queued bytes for a member, so no frame of its can be larger.
  // The same as the codec's max_peer_message_bytes (checked where both are seen).
  static constexpr size_t max_queued = 64u << 20;
  static constexpr size_t max_frame = max_queued;
  // A member sends its hello as it connects: a connection silent this long is not one.
  static constexpr int hello_timeout_ms = 5000;
  // After its hello, a connection silent this long is closed; a sender with nothing to say
  // sends an empty frame (a keepalive) every keepalive_ms, so only a dead or stopped sender's
  // connection goes (it connects again once it runs).
  static constexpr int idle_timeout_ms = 10000;
  static constexpr int keepalive_ms = 1000;
  // Connections still owing their hello, at most (a member has two incoming connections from
  // each other member once identified; this is room for reconnects under way).
  static constexpr size_t max_unidentified = 16;
  // Servers outside the configuration (set_accept_strangers) connected at once, at most: a
  // reconfig adds one or a few; a hello from one more is refused. A stranger sends votes, its
  // FollowerInfo, acks and forwarded requests (at most jute.maxbuffer's default of 1 MiB each),
  // so a frame of one is refused above max_stranger_frame rather than max_frame.
  static constexpr size_t max_strangers = 8;
  static constexpr size_t max_stranger_frame = 4u << 20;

  PeerTransport(boost::asio::io_context& io, int64_t self, std::vector<Member> members, Receive receive);
  ~PeerTransport();
  PeerTransport(const PeerTransport&) = delete;
  PeerTransport& operator=(const PeerTransport&) = delete;

  // Binds this member's quorum and election ports (from its Member entry; a port of 0 picks a
  // free one) and starts accepting and connecting. Throws std::runtime_error naming the
  // address and the system's reason when a port cannot be bound.
  void start();
  struct Tls {
    enum class Accept { plain, tls, either } accept = Accept::plain;
    bool connect = false;  // outgoing connections speak TLS
    bool verify_host = true;  // ssl.quorum.hostnameVerification
    // The contexts for a new connection (taken at each one, so rotated stores apply).
    std::function<std::shared_ptr<boost::asio::ssl::context>()> server, client;
  };
  // Before start().
  void set_tls(Tls tls);
  struct Auth {
    // One side of one SASL exchange: the learner's first step gets an empty token and gives its
    // first; the server's steps get the learner's tokens. A server's done step names in
    // `detail` the id the learner authenticated as; failed ones say why there.
    struct Step {
      enum class Status { more, done, failed } status = Status::failed;
      std::string token;
      std::string detail;
    };
    class Exchange {
     public:
      virtual ~Exchange() = default;
      virtual Step step(std::string_view token) = 0;
    };
    bool enabled = false;           // quorum.auth.enableSasl
    bool learner_required = false;  // quorum.auth.learnerRequireSasl
    bool server_required = false;   // quorum.auth.serverRequireSasl
    std::function<std::unique_ptr<Exchange>(const Member& to)> learner;
    std::function<std::unique_ptr<Exchange>(const Member& from)> server;
  };
  // Before start().
  void set_auth(Auth auth);
  // Takes the hellos of servers that are not members (with reconfigEnabled: a server about to
  // be added follows the leader first, as a ZooKeeper learner outside the configuration does);
  // what they send reaches the receiver, which may add_members() them to answer. Their address
  // is not checked (there is none to check it against), nor, with ssl.quorum.hostnameVerification,
  // can their certificate be: with it they are refused.
  void set_accept_strangers(bool on);
  // Called when this member's quorum-port connection to `member` breaks or cannot be made.
  void set_on_lost(std::function<void(int64_t member)> lost);
  // Called each time a write to `member`'s quorum port completed (a sync stream sends more).
  void set_on_written(std::function<void(int64_t member)> written);
  // Bytes queued for `member`'s quorum port and not yet written.
  size_t queued(int64_t member) const;
  // Messages queued for it (the same bytes' frames).
  size_t queued_frames(int64_t member) const;
  // Members a reconfig added (zoo.cfg's text in /zookeeper/config): connected to, and their
  // hellos taken, from now on. A member already known keeps its addresses until a restart (a
  // changed one is logged); none is forgotten, so a removed member can still follow as a
  // server outside the configuration and be added back.
  // Returns how many were new.
  size_t add_members(const std::vector<Member>& members);
  // A server outside the configuration that reached this member (its hello taken by
  // set_accept_strangers) and says where it listens: connected to, without resolving its host on
  // this thread, and forgotten (those connections closed) once none of its own connections to
  // this member is left. False when it is known already, or max_strangers are known.
  bool add_stranger(const Member& member);
  // Servers outside the configuration known now (for tests).
  size_t strangers() const;
  // Queues an encoded message for `to`; `vote` picks the election port's connection.
  void send(int64_t to, std::string bytes, bool vote);
  void stop();
  // The ports bound (after start()).
  uint16_t quorum_port() const;
  uint16_t election_port() const;
  // Connections refused at their hello, and closed for garbage, since start (for tests).
  uint64_t refused() const;
  // Incoming connections whose learner authenticated, since start (for tests).
  uint64_t authenticated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::consensus
