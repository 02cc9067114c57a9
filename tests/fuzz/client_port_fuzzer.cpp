// libFuzzer target over everything behind the client port. An input is what one connection
// sends (the corpus holds real clients' conversations, captured by capture_corpus.py):
//  - a four-letter word in its first four bytes is answered as the runtime answers it;
//  - otherwise its frames are cut as the runtime cuts them (jute.maxbuffer), each payload goes
//    through every decoder (connect request, request header, every request record, multi in
//    both forms, txn, quota text) and then into a RequestPipeline with an in-memory log, as a live
//    connection's frames do: connect handshake, requests, watches, multi, auth, four-letter
//    state. SASL packets go through Cyrus SASL's DIGEST-MD5 (a JAAS Server section's users), as
//    a server with SASL configured runs them. The same bytes are also read as a zoo.cfg and as
//    a JAAS file, and as the tokens of a DIGEST-MD5 exchange.
// Any crash, sanitizer report, leak or hang is a finding.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "consensus/replicator.hpp"
#include "server/admin/four_letter.hpp"
#include "server/auth/jaas.hpp"
#include "server/auth/sasl_server.hpp"
#include "server/config/config.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/state/quota.hpp"
#include "server/state/txn.hpp"
#include "storage/log_store.hpp"
#include "wire/framing.hpp"
#include "wire/records.hpp"

using namespace warden;

namespace {
struct Link : server::ClientLink {
  bool closed = false;
  size_t sent = 0;
  std::string addr = "127.0.0.1";
  void send(std::string frame) override { sent += frame.size(); }
  void close() override { closed = true; }
  const std::string& peer_address() const override { return addr; }
};

template <class... R>
void decode_all(std::string_view body) {
  (static_cast<void>(wire::decode<R>(body)), ...);
}

void decoders(std::string_view payload) {
  static_cast<void>(wire::decode_connect_request(payload));
  static_cast<void>(wire::decode_multi_response(payload));
  static_cast<void>(server::decode_txn(payload));
  static_cast<void>(server::StatsTrack::parse(payload).text());
  std::string_view body = payload.size() >= 8 ? payload.substr(8) : payload;
  decode_all<wire::RequestHeader, wire::CreateRequest, wire::CreateTTLRequest, wire::DeleteRequest,
             wire::PathWatchRequest, wire::SetDataRequest, wire::PathRequest, wire::SetACLRequest,
             wire::CheckVersionRequest, wire::AuthPacket, wire::SetWatches, wire::SetWatches2, wire::AddWatchRequest,
             wire::CheckWatchesRequest, wire::GetSaslRequest, wire::ReconfigRequest, wire::WatcherEvent>(body);
  static_cast<void>(wire::decode_multi(body, false));
  static_cast<void>(wire::decode_multi(body, true));
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // bad input is logged by design; quiet here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  static_cast<void>(server::parse_config(in, "fuzz.cfg"));
  static_cast<void>(server::auth::parse_jaas(in, "fuzz.jaas"));
  // One SASL server for the whole run (Cyrus is set up once a process).
  static server::auth::SaslServer sasl(
      std::get<server::auth::JaasFile>(server::auth::parse_jaas(
          "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob=\"secret\"; };", "f")),
      "Server");
  {  // the input as a client's answer to the challenge, then as a first token
    auto exchange = sasl.start();
    static_cast<void>(exchange->step({}));
    static_cast<void>(exchange->step(in));
    static_cast<void>(sasl.start()->step(in));
  }

  int64_t now = 1'700'000'000'000;
  storage::MemoryLogStore log;
  consensus::ZabReplicator* rep = nullptr;
  consensus::ZabReplicator replicator{log, [&](storage::LogEntry e) {
                                         wire::Zxid z = e.zxid;
                                         log.append({std::move(e)});
                                         rep->durable(z);
                                       }};
  rep = &replicator;
  server::ServerOptions opts;
  opts.extended_types = true;
  opts.enforce_quota = true;
  opts.sasl = [] { return sasl.start(); };
  opts.sasl_acls = true;
  server::RequestPipeline zk(opts, replicator, [&] { return now; });
  replicator.start(0);
  Link link;
  server::ConnId id = zk.open(&link);

  if (size >= 4 && server::is_four_letter_word(in.substr(0, 4))) {
    static_cast<void>(server::four_letter_text(zk, in.substr(0, 4), id, server::FourLetterEnv{}));
    return 0;
  }
  size_t off = 0;
  for (int frames = 0; !link.closed && frames < 10000; ++frames) {
    auto scan = wire::scan_frame(in.substr(off), wire::default_max_buffer);
    if (scan.status != wire::FrameStatus::complete) break;  // the runtime waits, or closes
    off += scan.consumed;
    decoders(scan.payload);
    zk.receive(id, scan.payload);
    if (frames % 16 == 15) {  // time passes: sessions may expire, containers go
      now += 5000;
      zk.tick();
    }
  }
  for (const char* word : {"stat", "cons", "dump", "wchc", "mntr"})
    static_cast<void>(server::four_letter_text(zk, word, id, server::FourLetterEnv{}));
  zk.closed(id);
  return 0;
}
