// One process using a Warden recipe beside Curator's on the same path: the arguments of
// tests/integration/java/RecipeContender.java, and its output ("READY" first, "DONE VIOLATIONS n"
// last).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <unistd.h>

#include "recipes/client.hpp"
#include "recipes/coordination.hpp"
#include "recipes/mutex.hpp"

using namespace warden::client;
namespace fs = std::filesystem;

namespace {
int count(const fs::path& dir, const std::string& prefix) {
  int n = 0;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}
void touch(const fs::path& p) { std::ofstream(p) << "x"; }
int usage() {
  std::cerr << "usage: recipe-contender CONNECT read|write PATH ROUNDS DIR | semaphore PATH MAX ROUNDS DIR |"
               " barrier PATH MEMBERS DIR | counter PATH TIMES DIR (then prints VALUE n)\n"
               "  (says READY once connected, starts once DIR/go exists)\n";
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return usage();
  try {
    Options o;
    o.connect_string = argv[1];
    o.session_timeout_ms = 6000;
    o.connect_timeout_ms = 20000;
    Client client(o);
    client.start();
    std::string mode = argv[2], path = argv[3];
    // Every contender starts when DIR/go exists (bounded), so that all contend at once.
    fs::path go = fs::path(argv[argc - 1]) / "go";
    std::cout << "READY" << std::endl;
    for (int i = 0; i < 12000 && !fs::exists(go); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string me = std::to_string(getpid());
    int violations = 0;
    if ((mode == "read" || mode == "write") && argc == 6) {
      int rounds = std::stoi(argv[4]);
      fs::path dir = argv[5];
      ReadWriteLock rw(client, path);
      bool reader = mode == "read";
      Mutex& m = reader ? rw.read_lock() : rw.write_lock();
      for (int i = 0; i < rounds; ++i) {
        m.acquire();
        fs::path mine = dir / ((reader ? "reader-" : "writer-") + me);
        touch(mine);
        if (count(dir, "writer-") > (reader ? 0 : 1)) ++violations;
        if (!reader && count(dir, "reader-") > 0) ++violations;
        std::this_thread::sleep_for(std::chrono::milliseconds(reader ? 15 : 3));
        fs::remove(mine);
        m.release();
      }
    } else if (mode == "semaphore" && argc == 7) {
      int max = std::stoi(argv[4]), rounds = std::stoi(argv[5]);
      fs::path dir = argv[6];
      Semaphore sem(client, path, max);
      for (int i = 0; i < rounds; ++i) {
        auto leases = sem.acquire();
        fs::path mine = dir / ("holder-" + me);
        touch(mine);
        if (count(dir, "holder-") > max) ++violations;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        fs::remove(mine);
      }
    } else if (mode == "barrier" && argc == 6) {
      int members = std::stoi(argv[4]);
      fs::path dir = argv[5];
      DoubleBarrier b(client, path, members);
      touch(dir / ("entered-" + me));
      if (!b.enter(std::chrono::seconds(60))) ++violations;
      if (count(dir, "entered-") < members) ++violations;
      // Nobody leaves before every member is through: see RecipeContender.java.
      touch(dir / ("passed-" + me));
      for (int i = 0; i < 6000 && count(dir, "passed-") < members; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (count(dir, "passed-") < members) ++violations;
      touch(dir / ("leaving-" + me));
      if (!b.leave(std::chrono::seconds(60))) ++violations;
      if (count(dir, "leaving-") < members) ++violations;
    } else if (mode == "counter" && argc == 6) {
      int times = std::stoi(argv[4]);
      Counter n(client, path);
      for (int i = 0; i < times; ++i) n.increment();
      std::cout << "VALUE " << n.get() << "\n";
    } else {
      return usage();
    }
    std::cout << "DONE VIOLATIONS " << violations << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "recipe-contender: " << e.what() << "\n";
    return 1;
  }
}
