/* A failing disk for the tests, loaded with LD_PRELOAD: the n-th write (and every later one) to a file
 * under a path prefix fails with a chosen errno, as a full disk (ENOSPC) or a dying one (EIO) would.
 * Only the transport is replaced: x2, HDF5, zarr and the video encoder run unchanged above it.
 *
 *   X2_FAULT_PATH   prefix of the absolute paths that fail (required; nothing fails without it)
 *   X2_FAULT_AFTER  the first failing write, counting from 1 (default 1)
 *   X2_FAULT_ERRNO  ENOSPC (default), EIO, EROFS, EACCES or a number
 *
 * Writes are every call that puts bytes into a file: write, pwrite, writev, pwritev, sendfile,
 * copy_file_range (shutil's copies), fallocate; fsync and fdatasync fail too once writes do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *prefix;
static long first_failing = 1;
static int fault_errno = ENOSPC;
static long writes;
static int failing;

__attribute__((constructor)) static void setup(void) {
    prefix = getenv("X2_FAULT_PATH");
    const char *after = getenv("X2_FAULT_AFTER");
    if (after) first_failing = atol(after);
    const char *e = getenv("X2_FAULT_ERRNO");
    if (e) {
        if (!strcmp(e, "ENOSPC")) fault_errno = ENOSPC;
        else if (!strcmp(e, "EIO")) fault_errno = EIO;
        else if (!strcmp(e, "EROFS")) fault_errno = EROFS;
        else if (!strcmp(e, "EACCES")) fault_errno = EACCES;
        else fault_errno = atoi(e);
    }
}

static int under_prefix(int fd) {
    char link[64], path[4096];
    if (!prefix || !*prefix) return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    return strncmp(path, prefix, strlen(prefix)) == 0;
}

/* 1 when this write must fail (and errno is set). */
static int fault(int fd) {
    if (!under_prefix(fd)) return 0;
    if (__atomic_add_fetch(&writes, 1, __ATOMIC_SEQ_CST) >= first_failing) {
        __atomic_store_n(&failing, 1, __ATOMIC_SEQ_CST);
        errno = fault_errno;
        return 1;
    }
    return 0;
}

#define REAL(name) static __typeof__(name) *real = NULL; if (!real) real = dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(write);
    return fault(fd) ? -1 : real(fd, buf, n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    REAL(pwrite);
    return fault(fd) ? -1 : real(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    REAL(pwrite64);
    return fault(fd) ? -1 : real(fd, buf, n, off);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    REAL(writev);
    return fault(fd) ? -1 : real(fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    REAL(pwritev);
    return fault(fd) ? -1 : real(fd, iov, cnt, off);
}
ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    REAL(pwritev2);
    return fault(fd) ? -1 : real(fd, iov, cnt, off, flags);
}
ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    REAL(sendfile);
    return fault(out) ? -1 : real(out, in, off, n);
}
ssize_t sendfile64(int out, int in, off_t *off, size_t n) {
    REAL(sendfile64);
    return fault(out) ? -1 : real(out, in, off, n);
}
ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned int flags) {
    REAL(copy_file_range);
    return fault(out) ? -1 : real(in, in_off, out, out_off, n, flags);
}
int fallocate(int fd, int mode, off_t off, off_t len) {
    REAL(fallocate);
    return fault(fd) ? -1 : real(fd, mode, off, len);
}
int posix_fallocate(int fd, off_t off, off_t len) {
    REAL(posix_fallocate);
    return fault(fd) ? fault_errno : real(fd, off, len);
}
int fsync(int fd) {
    REAL(fsync);
    if (__atomic_load_n(&failing, __ATOMIC_SEQ_CST) && under_prefix(fd)) { errno = fault_errno; return -1; }
    return real(fd);
}
int fdatasync(int fd) {
    REAL(fdatasync);
    if (__atomic_load_n(&failing, __ATOMIC_SEQ_CST) && under_prefix(fd)) { errno = fault_errno; return -1; }
    return real(fd);
}
