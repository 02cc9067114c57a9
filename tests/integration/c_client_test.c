/* The official ZooKeeper C client (libzookeeper-mt) against Warden: synchronous and
 * asynchronous calls, watches, multi and error codes. Usage: c_client_test HOST:PORT */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

static int passed, failed;
#define CHECK(cond, what)                               \
  do {                                                  \
    if (cond) {                                         \
      passed++;                                         \
    } else {                                            \
      failed++;                                         \
      fprintf(stderr, "FAILED: %s (line %d)\n", what, __LINE__); \
    }                                                   \
  } while (0)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected;
static int events[16], event_count;
static char event_paths[16][64];
static int completions, last_rc;
static char last_value[64];

static void global_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
  (void)zh; (void)ctx; (void)path;
  pthread_mutex_lock(&mu);
  if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) connected = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
  (void)zh; (void)state; (void)ctx;
  pthread_mutex_lock(&mu);
  if (event_count < 16) {
    snprintf(event_paths[event_count], sizeof event_paths[0], "%s", path);
    events[event_count++] = type;
  }
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* Waits until *counter reaches want or 10 s pass. */
static int wait_for(int *counter, int want) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&mu);
  while (*counter < want) {
    if (pthread_cond_timedwait(&cv, &mu, &deadline) != 0) break;
  }
  int ok = *counter >= want;
  pthread_mutex_unlock(&mu);
  return ok;
}

static void string_done(int rc, const char *value, const void *data) {
  (void)data;
  pthread_mutex_lock(&mu);
  last_rc = rc;
  snprintf(last_value, sizeof last_value, "%s", value ? value : "");
  completions++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void data_done(int rc, const char *value, int len, const struct Stat *stat, const void *data) {
  (void)stat; (void)data;
  pthread_mutex_lock(&mu);
  last_rc = rc;
  snprintf(last_value, sizeof last_value, "%.*s", len > 0 ? len : 0, value ? value : "");
  completions++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void void_done(int rc, const void *data) {
  (void)data;
  pthread_mutex_lock(&mu);
  last_rc = rc;
  completions++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  zhandle_t *zh = zookeeper_init(argv[1], global_watcher, 10000, 0, 0, 0);
  CHECK(zh != NULL, "zookeeper_init");
  CHECK(wait_for(&connected, 1), "the session connects");

  /* synchronous calls */
  char path[128];
  int rc = zoo_create(zh, "/c", "hello", 5, &ZOO_OPEN_ACL_UNSAFE, 0, path, sizeof path);
  CHECK(rc == ZOK && strcmp(path, "/c") == 0, "zoo_create");
  rc = zoo_create(zh, "/c", "again", 5, &ZOO_OPEN_ACL_UNSAFE, 0, path, sizeof path);
  CHECK(rc == ZNODEEXISTS, "zoo_create of an existing node is ZNODEEXISTS");
  char buf[64];
  int len = sizeof buf;
  struct Stat st;
  rc = zoo_get(zh, "/c", 0, buf, &len, &st);
  CHECK(rc == ZOK && len == 5 && memcmp(buf, "hello", 5) == 0, "zoo_get");
  CHECK(st.version == 0 && st.dataLength == 5, "zoo_get's stat");
  CHECK(zoo_set(zh, "/c", "x", 1, 7) == ZBADVERSION, "zoo_set with a wrong version is ZBADVERSION");
  CHECK(zoo_set(zh, "/c", "x", 1, 0) == ZOK, "zoo_set");
  CHECK(zoo_exists(zh, "/nope", 0, &st) == ZNONODE, "zoo_exists of a missing node is ZNONODE");
  rc = zoo_create(zh, "/c/e-", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, path, sizeof path);
  CHECK(rc == ZOK && strcmp(path, "/c/e-0000000000") == 0, "an ephemeral sequential node");

  /* watches */
  rc = zoo_wexists(zh, "/c", node_watcher, NULL, &st);
  CHECK(rc == ZOK, "zoo_wexists");
  CHECK(zoo_set(zh, "/c", "y", 1, -1) == ZOK, "a set that triggers the watch");
  CHECK(wait_for(&event_count, 1) && events[0] == ZOO_CHANGED_EVENT && strcmp(event_paths[0], "/c") == 0,
        "the exists watch fires ZOO_CHANGED_EVENT");
  struct String_vector kids;
  rc = zoo_wget_children(zh, "/c", node_watcher, NULL, &kids);
  CHECK(rc == ZOK && kids.count == 1, "zoo_wget_children");
  deallocate_String_vector(&kids);
  CHECK(zoo_create(zh, "/c/k", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, path, sizeof path) == ZOK, "create a child");
  CHECK(wait_for(&event_count, 2) && events[1] == ZOO_CHILD_EVENT, "the child watch fires ZOO_CHILD_EVENT");
  rc = zoo_wexists(zh, "/later", node_watcher, NULL, &st);
  CHECK(rc == ZNONODE, "zoo_wexists on a missing node");
  CHECK(zoo_create(zh, "/later", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, path, sizeof path) == ZOK, "create it");
  CHECK(wait_for(&event_count, 3) && events[2] == ZOO_CREATED_EVENT, "ZOO_CREATED_EVENT");
  len = sizeof buf;
  CHECK(zoo_wget(zh, "/later", node_watcher, NULL, buf, &len, &st) == ZOK, "zoo_wget");
  CHECK(zoo_delete(zh, "/later", -1) == ZOK, "zoo_delete");
  CHECK(wait_for(&event_count, 4) && events[3] == ZOO_DELETED_EVENT, "ZOO_DELETED_EVENT");

  /* asynchronous calls */
  int base = completions;
  CHECK(zoo_acreate(zh, "/async", "a1", 2, &ZOO_OPEN_ACL_UNSAFE, 0, string_done, NULL) == ZOK, "zoo_acreate");
  CHECK(wait_for(&completions, base + 1) && last_rc == ZOK && strcmp(last_value, "/async") == 0,
        "the create completion");
  CHECK(zoo_aget(zh, "/async", 0, data_done, NULL) == ZOK, "zoo_aget");
  CHECK(wait_for(&completions, base + 2) && last_rc == ZOK && strcmp(last_value, "a1") == 0, "the get completion");
  CHECK(zoo_adelete(zh, "/async", 5, void_done, NULL) == ZOK, "zoo_adelete");
  CHECK(wait_for(&completions, base + 3) && last_rc == ZBADVERSION, "the delete completion carries ZBADVERSION");
  CHECK(zoo_aget(zh, "/missing", 0, data_done, NULL) == ZOK, "zoo_aget of a missing node");
  CHECK(wait_for(&completions, base + 4) && last_rc == ZNONODE, "its completion carries ZNONODE");

  /* multi */
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  char p1[64], p2[64];
  zoo_create_op_init(&ops[0], "/multi", "m", 1, &ZOO_OPEN_ACL_UNSAFE, 0, p1, sizeof p1);
  zoo_create_op_init(&ops[1], "/multi/kid", "k", 1, &ZOO_OPEN_ACL_UNSAFE, 0, p2, sizeof p2);
  CHECK(zoo_multi(zh, 2, ops, results) == ZOK && results[1].err == ZOK, "zoo_multi commits");
  zoo_create_op_init(&ops[0], "/multi2", "m", 1, &ZOO_OPEN_ACL_UNSAFE, 0, p1, sizeof p1);
  zoo_delete_op_init(&ops[1], "/multi", -1);
  rc = zoo_multi(zh, 2, ops, results);
  CHECK(rc == ZNOTEMPTY, "a failed zoo_multi returns the failing op's error");
  CHECK(results[1].err == ZNOTEMPTY, "and carries it in that op's result");
  CHECK(zoo_exists(zh, "/multi2", 0, &st) == ZNONODE, "and applied nothing");

  CHECK(zookeeper_close(zh) == ZOK, "zookeeper_close");
  printf("c_client: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
