// warden-sim: runs seeded simulations of whole replicas (tests/sim/simulation.hpp).
//   warden-sim --seeds N [--first S] [--voters 3|5] [--observers K] [--spares K] [--reconfig] [--wipes|--disk-faults]
//                [--mixed-versions]
//                [--plant BUG] [--stop]
//   warden-sim --seed S [same shape options] [--verbose] [--capture DIR]
// One line per failing seed (the seed and the broken invariant) and exit 1; or a summary and 0.
#include <fmt/format.h>

#include <chrono>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "tests/sim/simulation.hpp"

namespace {
const char* usage =
    "usage: warden-sim --seeds N [--first S] [--voters 3|5] [--observers K] [--spares K] [--reconfig] [--wipes|--disk-faults|--beyond-rule]\n"
    "                  [--plant BUG] [--stop]\n"
    "       warden-sim --seed S [--voters 3|5] [--observers K] [--spares K] [--reconfig] [--wipes|--disk-faults|--beyond-rule]\n"
    "                  [--plant BUG] [--verbose] [--capture DIR]\n"
    "--spares K: K more servers outside the first configuration (0 to 3)\n"
    "--reconfig: the leader proposes random new configurations of all the servers among the faults\n"
    "--wipes: a crashed server's store may come back empty or damaged (then set aside), one server's at a time\n"
    "--disk-faults: --wipes, and failed writes and fsyncs (EIO, ENOSPC), torn writes, lost writes and failed reads\n"
    "--beyond-rule: --disk-faults, and stores lost on several servers at once (one voter's kept): safety only is\n"
    "     checked, and calm stretches that commit nothing are counted\n"
    "--mixed-versions: a rolling upgrade: every server starts on the build before (peer protocol 2 alone), and\n"
    "     restarts among the faults upgrade them one by one (not with --wipes, --disk-faults or --beyond-rule)\n"
    "BUG: commit-minority, skip-trunc, stale-vote, commit-old-quorum-only, count-removed-member (these two need\n"
    "     --reconfig), count-unsynced or truncate-on-damage (these two need --wipes), one-epoch-copy (needs\n"
    "     --disk-faults), decide-unheard (needs --beyond-rule): test-only bugs the checks must catch\n"
    "--stop: end at the first failing seed\n"
    "--capture DIR: write the first 300 delivered peer messages, one file each, as fuzzer inputs\n";

int bad(const std::string& why) {
  std::fprintf(stderr, "warden-sim: %s\n%s", why.c_str(), usage);
  return 2;
}

bool number(std::string_view s, uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}
}  // namespace

int main(int argc, char** argv) {
  warden::sim::SimOptions base;
  uint64_t seeds = 0, first = 1, seed = 0, voters = 3, observers = 0, spares = 0;
  bool one = false, verbose = false, stop = false;
  std::string capture;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](uint64_t& out) { return i + 1 < argc && number(argv[++i], out); };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a == "--seeds") {
      if (!value(seeds) || seeds == 0) return bad("--seeds needs a positive number");
    } else if (a == "--first") {
      if (!value(first)) return bad("--first needs a number");
    } else if (a == "--seed") {
      if (!value(seed)) return bad("--seed needs a number");
      one = true;
    } else if (a == "--voters") {
      if (!value(voters) || (voters != 3 && voters != 5 && voters != 1)) return bad("--voters takes 1, 3 or 5");
    } else if (a == "--observers") {
      if (!value(observers) || observers > 3) return bad("--observers takes 0 to 3");
    } else if (a == "--spares") {
      if (!value(spares) || spares > 3) return bad("--spares takes 0 to 3");
    } else if (a == "--reconfig") {
      base.reconfig = true;
    } else if (a == "--wipes") {
      base.wipes = true;
    } else if (a == "--disk-faults") {
      base.wipes = base.disk_faults = true;
    } else if (a == "--mixed-versions") {
      base.mixed_versions = true;
    } else if (a == "--beyond-rule") {
      base.wipes = base.disk_faults = base.beyond_rule = true;
    } else if (a == "--plant") {
      if (i + 1 >= argc) return bad("--plant needs a bug's name");
      std::string_view p = argv[++i];
      if (p == "commit-minority") base.plants.commit_minority = true;
      else if (p == "skip-trunc") base.plants.skip_trunc = true;
      else if (p == "stale-vote") base.plants.stale_vote = true;
      else if (p == "commit-old-quorum-only") base.plants.commit_old_quorum_only = true;
      else if (p == "count-removed-member") base.plants.count_removed_member = true;
      else if (p == "count-unsynced") base.plants.count_unsynced = true;
      else if (p == "decide-unheard") base.plants.decide_unheard = true;
      else if (p == "truncate-on-damage") base.truncate_on_damage = true;
      else if (p == "one-epoch-copy") base.one_epoch_copy = true;
      else return bad("unknown plant '" + std::string(p) + "'");
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--stop") {
      stop = true;
    } else if (a == "--capture") {
      if (i + 1 >= argc) return bad("--capture needs a directory");
      capture = argv[++i];
    } else {
      return bad("unknown argument '" + std::string(a) + "'");
    }
  }
  if (one == (seeds > 0)) return bad("give either --seed or --seeds");
  if (verbose && !one) return bad("--verbose goes with --seed");
  if ((base.plants.count_unsynced || base.truncate_on_damage) && !base.wipes)
    return bad("the plants count-unsynced and truncate-on-damage need --wipes");
  if (base.one_epoch_copy && !base.disk_faults) return bad("the plant one-epoch-copy needs --disk-faults");
  if (base.plants.decide_unheard && !base.beyond_rule) return bad("the plant decide-unheard needs --beyond-rule");
  if (base.beyond_rule && base.reconfig) return bad("--beyond-rule does not go with --reconfig");
  if (base.mixed_versions && base.wipes)
    return bad("--mixed-versions does not go with --wipes, --disk-faults or --beyond-rule (the build before does "
               "not survive a lost store)");
  base.voters = static_cast<int>(voters);
  base.observers = static_cast<int>(observers);
  base.spares = static_cast<int>(spares);
  if (verbose) base.trace = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  if (!capture.empty() && !one) return bad("--capture goes with --seed");
  int captured = 0;
  if (!capture.empty())
    base.capture = [&](int64_t from, const std::string& bytes) {
      if (captured >= 300 || bytes.size() > 0xffff) return;
      // The peer fuzzer's input: [sender][length, 2 bytes big-endian][message].
      std::string record{static_cast<char>(from), static_cast<char>(bytes.size() >> 8),
                         static_cast<char>(bytes.size() & 0xff)};
      record += bytes;
      std::string path = capture + "/msg-" + std::to_string(captured++);
      if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(record.data(), 1, record.size(), f);
        std::fclose(f);
      }
    };

  auto totals = [](const warden::sim::SimResult& r) {
    return fmt::format("{} steps, {} txns committed, {} writes acknowledged, {} leaders established; faults: {} "
                       "crashes, {} partitions, {} network changes, {} disk changes, {} disks wiped, {} stores "
                       "damaged, {} writes failed, {} writes torn, {} synced writes lost, {} opens with failed reads; {} calm "
                       "stretches checked, the longest wait for a commit in one {} ms; {} servers upgraded",
                       r.steps, r.committed, r.acked, r.elections, r.crashes, r.partitions, r.network_changes,
                       r.disk_changes, r.wipes, r.damaged, r.failed_writes, r.torn_writes, r.lost_writes,
                       r.failed_reads, r.calm_stretches, r.max_settle_ms, r.upgrades);
  };
  if (one) {
    base.seed = seed;
    auto r = warden::sim::run_simulation(base);
    if (!r.ok) {
      std::printf("seed %llu FAILED: %s\n", static_cast<unsigned long long>(seed), r.failure.c_str());
      return 1;
    }
    std::printf("seed %llu passed: %s\n", static_cast<unsigned long long>(seed), totals(r).c_str());
    if (base.reconfig) std::printf("reconfigs: %llu proposed, %llu committed\n",
                                   static_cast<unsigned long long>(r.reconfigs),
                                   static_cast<unsigned long long>(r.reconfigs_committed));
    if (base.beyond_rule)
      std::printf("beyond the rule: %llu of %llu calm stretches committed nothing (unavailable, allowed)\n",
                  static_cast<unsigned long long>(r.calm_unavailable), static_cast<unsigned long long>(r.calm_stretches));
    return 0;
  }
  warden::sim::SimResult sum;
  uint64_t failed = 0, ran = 0;
  auto started = std::chrono::steady_clock::now();
  for (uint64_t s = first; s < first + seeds && !(stop && failed); ++s, ++ran) {
    base.seed = s;
    auto r = warden::sim::run_simulation(base);
    sum.steps += r.steps;
    sum.committed += r.committed;
    sum.acked += r.acked;
    sum.elections += r.elections;
    sum.crashes += r.crashes;
    sum.wipes += r.wipes;
    sum.damaged += r.damaged;
    sum.failed_writes += r.failed_writes;
    sum.torn_writes += r.torn_writes;
    sum.lost_writes += r.lost_writes;
    sum.failed_reads += r.failed_reads;
    sum.partitions += r.partitions;
    sum.network_changes += r.network_changes;
    sum.disk_changes += r.disk_changes;
    sum.calm_stretches += r.calm_stretches;
    sum.calm_unavailable += r.calm_unavailable;
    sum.reconfigs += r.reconfigs;
    sum.reconfigs_committed += r.reconfigs_committed;
    sum.upgrades += r.upgrades;
    sum.max_settle_ms = std::max(sum.max_settle_ms, r.max_settle_ms);
    if (!r.ok) {
      ++failed;
      std::printf("seed %llu FAILED: %s\n", static_cast<unsigned long long>(s), r.failure.c_str());
      std::fflush(stdout);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%llu seeds (%llu..%llu, %llu voters, %llu observers) in %.0f s (%.1f seeds/s): %s\n",
              static_cast<unsigned long long>(ran), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(first + ran - 1), static_cast<unsigned long long>(voters),
              static_cast<unsigned long long>(observers), secs, secs > 0 ? static_cast<double>(ran) / secs : 0.0,
              totals(sum).c_str());
  if (base.reconfig)
    std::printf("reconfigs: %llu proposed, %llu committed\n", static_cast<unsigned long long>(sum.reconfigs),
                static_cast<unsigned long long>(sum.reconfigs_committed));
  if (base.beyond_rule)
    std::printf("beyond the rule: %llu of %llu calm stretches committed nothing (unavailable, allowed)\n",
                static_cast<unsigned long long>(sum.calm_unavailable), static_cast<unsigned long long>(sum.calm_stretches));
  // The closing line CTest's output is read for.
  std::printf("%llu passed, %llu failed\n", static_cast<unsigned long long>(ran - failed),
              static_cast<unsigned long long>(failed));
  return failed ? 1 : 0;
}
