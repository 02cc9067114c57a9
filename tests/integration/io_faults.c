/* Injects I/O errors into a server started with LD_PRELOAD=libwarden-io-faults.so, for
 * io_fault_test.py: the errors a failing disk returns, at run time, on the files a test names.
 *
 *   WARDEN_IO_FAULT="OP PATH ERRNO COUNT"
 *     OP     write (write, pwrite, writev, pwritev), sync (fsync, fdatasync) or read (read,
 *            pread, readv, preadv, fread, fread_unlocked)
 *     PATH   a call fails only on a file whose path contains this text; with a '*', contains
 *            what comes before it and ends in what follows it ("data/log*.log")
 *     ERRNO  EIO or ENOSPC
 *     COUNT  how many calls fail in all (0: every one)
 *   WARDEN_IO_FAULT_ARM=FILE   calls fail only while FILE exists (unset: from the start)
 *
 * A failed sync also drops what was written to that file since its last sync that succeeded
 * (the file is cut back to that length), as Linux may drop the dirty pages of a failed
 * writeback: a server that acknowledged on it would lose the write at its next start.
 *
 * Each failure is written to stderr ("io fault: OP on PATH: ERRNO"). A test library, never linked
 * into the server. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum op { op_write, op_sync, op_read, op_none };

static enum op fault_op = op_none;
static char fault_path[512];
static const char* fault_suffix = "";
static int fault_errno;
static long fault_count;
static atomic_long failed;
static const char* arm_file;

__attribute__((constructor)) static void io_faults_init(void) {
  const char* spec = getenv("WARDEN_IO_FAULT");
  if (!spec) return;
  char op[16], err[16];
  if (sscanf(spec, "%15s %511s %15s %ld", op, fault_path, err, &fault_count) != 4) {
    fprintf(stderr, "io faults: WARDEN_IO_FAULT=\"%s\" is not \"OP PATH ERRNO COUNT\"\n", spec);
    abort();
  }
  if (!strcmp(op, "write")) fault_op = op_write;
  else if (!strcmp(op, "sync")) fault_op = op_sync;
  else if (!strcmp(op, "read")) fault_op = op_read;
  else {
    fprintf(stderr, "io faults: unknown OP %s (write, sync or read)\n", op);
    abort();
  }
  if (!strcmp(err, "EIO")) fault_errno = EIO;
  else if (!strcmp(err, "ENOSPC")) fault_errno = ENOSPC;
  else {
    fprintf(stderr, "io faults: unknown ERRNO %s (EIO or ENOSPC)\n", err);
    abort();
  }
  char* star = strchr(fault_path, '*');
  if (star) {
    *star = 0;
    fault_suffix = star + 1;
  }
  arm_file = getenv("WARDEN_IO_FAULT_ARM");
}

static void* next(const char* name) { return dlsym(RTLD_NEXT, name); }

/* For sync faults: each file's length at its last sync that succeeded (or when first written
 * through here), by descriptor, with the inode it was taken of (descriptors are reused). */
#define max_fds 65536
static struct synced {
  ino_t ino;
  off_t length;
} synced_at[max_fds];

static void note_length(int fd, int always) {
  struct stat st;
  if (fault_op != op_sync || fd < 0 || fd >= max_fds || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (always || synced_at[fd].ino != st.st_ino) {
    synced_at[fd].ino = st.st_ino;
    synced_at[fd].length = st.st_size;
  }
}

static void drop_unsynced(int fd) {
  struct stat st;
  if (fd < 0 || fd >= max_fds || fstat(fd, &st) != 0 || synced_at[fd].ino != st.st_ino) return;
  if (st.st_size > synced_at[fd].length && ftruncate(fd, synced_at[fd].length) == 0)
    fprintf(stderr, "io fault: %ld unsynced bytes dropped\n", (long)(st.st_size - synced_at[fd].length));
}

/* Whether this call on fd fails: it sets errno when it does. */
static int fails(enum op op, int fd) {
  if (op != fault_op || fd < 0) return 0;
  if (fault_count > 0 && atomic_load(&failed) >= fault_count) return 0;
  int saved = errno;
  if (arm_file && access(arm_file, F_OK) != 0) {
    errno = saved;
    return 0;
  }
  char link[64], path[1024];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) {
    errno = saved;
    return 0;
  }
  path[n] = 0;
  size_t len = (size_t)n, suffix = strlen(fault_suffix);
  int matches = strstr(path, fault_path) && len >= suffix && !strcmp(path + len - suffix, fault_suffix);
  if (!matches || (fault_count > 0 && atomic_fetch_add(&failed, 1) >= fault_count)) {
    errno = saved;
    return 0;
  }
  static const char* names[] = {"write", "sync", "read"};
  fprintf(stderr, "io fault: %s on %s: %s\n", names[op], path, strerror(fault_errno));
  errno = fault_errno;
  return 1;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = next("write");
  return fails(op_write, fd) ? -1 : (note_length(fd, 0), real)(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = next("pwrite");
  return fails(op_write, fd) ? -1 : (note_length(fd, 0), real)(fd, buf, n, at);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t at) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = next("pwrite64");
  return fails(op_write, fd) ? -1 : (note_length(fd, 0), real)(fd, buf, n, at);
}

ssize_t writev(int fd, const struct iovec* v, int n) {
  static ssize_t (*real)(int, const struct iovec*, int);
  if (!real) real = next("writev");
  return fails(op_write, fd) ? -1 : (note_length(fd, 0), real)(fd, v, n);
}

ssize_t pwritev(int fd, const struct iovec* v, int n, off_t at) {
  static ssize_t (*real)(int, const struct iovec*, int, off_t);
  if (!real) real = next("pwritev");
  return fails(op_write, fd) ? -1 : (note_length(fd, 0), real)(fd, v, n, at);
}

static int sync_with(int (*real)(int), int fd) {
  if (fails(op_sync, fd)) {
    int e = errno;
    drop_unsynced(fd);
    errno = e;
    return -1;
  }
  int r = real(fd);
  if (r == 0) note_length(fd, 1);
  return r;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = next("fsync");
  return sync_with(real, fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = next("fdatasync");
  return sync_with(real, fd);
}

ssize_t read(int fd, void* buf, size_t n) {
  static ssize_t (*real)(int, void*, size_t);
  if (!real) real = next("read");
  return fails(op_read, fd) ? -1 : real(fd, buf, n);
}

ssize_t pread(int fd, void* buf, size_t n, off_t at) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = next("pread");
  return fails(op_read, fd) ? -1 : real(fd, buf, n, at);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t at) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = next("pread64");
  return fails(op_read, fd) ? -1 : real(fd, buf, n, at);
}

ssize_t preadv(int fd, const struct iovec* v, int n, off_t at) {
  static ssize_t (*real)(int, const struct iovec*, int, off_t);
  if (!real) real = next("preadv");
  return fails(op_read, fd) ? -1 : real(fd, v, n, at);
}

/* A stream's read fails as the disk's would: the stream's error flag set, nothing read. */
size_t fread(void* buf, size_t size, size_t n, FILE* f) {
  static size_t (*real)(void*, size_t, size_t, FILE*);
  if (!real) real = next("fread");
  if (fails(op_read, fileno(f))) {
    f->_flags |= _IO_ERR_SEEN; /* ferror() says so */
    return 0;
  }
  return real(buf, size, n, f);
}

#undef fread_unlocked
size_t(fread_unlocked)(void* buf, size_t size, size_t n, FILE* f) {
  static size_t (*real)(void*, size_t, size_t, FILE*);
  if (!real) real = next("fread_unlocked");
  if (fails(op_read, fileno(f))) {
    f->_flags |= _IO_ERR_SEEN;
    return 0;
  }
  return real(buf, size, n, f);
}
