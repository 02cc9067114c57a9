# Shared by scripts/run, scripts/test and scripts/bench: install what is missing, then build.
# Sourced, not run.

WARDEN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$WARDEN_ROOT/build}"
# ccache makes the second and later builds on a machine cheap, from any clone: paths under the
# checkout are hashed relative to it and the working directory is left out, so a fresh clone in
# another folder (as CI makes) finds what an earlier build compiled.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$WARDEN_ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# Debian packages that building the server needs: all that scripts/run installs.
RUN_PACKAGES=(cmake ninja-build g++ ccache libboost-dev libspdlog-dev libfmt-dev
              libprotobuf-dev protobuf-compiler librocksdb-dev libssl-dev
              libsasl2-dev libsasl2-modules libsasl2-modules-gssapi-mit pkgconf libsystemd-dev zlib1g-dev libsnappy-dev)
# What the server binary is built from: scripts/run builds only this, with the tests left out of
# the configuration, so that nothing the tests need has to be installed.
RUN_TARGETS=(warden-server)
# What scripts/bench runs: the server and the two load generators, in a Release build.
BENCH_TARGETS=(warden-server warden-loadgen warden-lockbench)
# Debian packages every other target needs too (the unit tests' framework).
BUILD_PACKAGES=("${RUN_PACKAGES[@]}" catch2)
# The real clients and tools the integration tests drive (zktop reads the four-letter words),
# and ZooKeeper itself as the reference.
CLIENT_PACKAGES=(zookeeper zookeeper-bin libzookeeper-mt-dev python3-kazoo libcurator-recipes-java
                 default-jdk-headless zktop
                 # TLS and SASL tests: certificates, a private Kerberos KDC, GSSAPI for Cyrus and kazoo
                 openssl krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit python3-kerberos
                 # the Debian package test: cpack's dependency list, the unit's check, its user
                 dpkg-dev systemd adduser
                 # the metrics test: a real Prometheus and promtool
                 prometheus
                 # kazoo's own test suite (kazoo.tests): its runner and the modules it imports;
                 # pytest-timeout bounds each of its tests, so that a hung one fails by name
                 python3-pytest python3-mock python3-objgraph python3-pytest-timeout)

# libFuzzer: clang and its runtime.
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

# Configures $BUILD_DIR; extra arguments go to cmake. WARDEN_TESTS=OFF leaves the tests out.
configure() {
  cmake -S "$WARDEN_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    -DWARDEN_TESTS="${WARDEN_TESTS:-ON}" "$@" >/dev/null
}

# Configures and builds $BUILD_DIR (the targets in BUILD_TARGET, else all); extra arguments go to cmake.
build() {
  configure "$@"
  ninja -C "$BUILD_DIR" ${BUILD_TARGET:-}
}

# What scripts/run builds: the server binary alone, from a configuration without the tests.
build_for_run() {
  WARDEN_TESTS=OFF BUILD_TARGET="${RUN_TARGETS[*]}" build "$@"
}
