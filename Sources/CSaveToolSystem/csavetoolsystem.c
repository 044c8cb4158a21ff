// System calls the Swift overlays do not expose.
#define _GNU_SOURCE
#include "csavetoolsystem.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int savetool_rename_exchange(const char *first, const char *second) {
#if defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, first, AT_FDCWD, second, RENAME_EXCHANGE);
#elif defined(__APPLE__)
    return renamex_np(first, second, RENAME_SWAP);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int savetool_sync_file_system(int descriptor) {
#if defined(__linux__)
    if (syncfs(descriptor) == 0) return 0;
#endif
    return fsync(descriptor);
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int savetool_open_unnamed(const char *directory, unsigned int mode) {
#if defined(__linux__) && defined(O_TMPFILE)
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t)mode);
#else
    (void)directory;
    (void)mode;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int savetool_link_unnamed(int descriptor, const char *to) {
#if defined(__linux__)
    // By the descriptor itself where the process may (CAP_DAC_READ_SEARCH, which root has):
    // no walk through /proc for every file. Without it the kernel answers ENOENT, and /proc
    // is used from then on.
    static int emptyPathRefused = 0;
    if (!__atomic_load_n(&emptyPathRefused, __ATOMIC_RELAXED)) {
        if (linkat(descriptor, "", AT_FDCWD, to, AT_EMPTY_PATH) == 0) return 0;
        if (errno != ENOENT && errno != EINVAL) return -1;
        __atomic_store_n(&emptyPathRefused, 1, __ATOMIC_RELAXED);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", descriptor);
    return linkat(AT_FDCWD, path, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
#else
    (void)descriptor;
    (void)to;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int savetool_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(SYS_renameat2)
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
#elif defined(__APPLE__)
    if (renamex_np(from, to, RENAME_EXCL) == 0) return 0;
    if (errno != ENOTSUP) return -1;
#endif
    // A file system without an exclusive rename: a hard link fails the same way when `to` exists.
    if (link(from, to) != 0) return -1;
    unlink(from);
    return 0;
}

#if defined(__linux__)
#include <sys/xattr.h>
#endif

long savetool_list_xattrs(int descriptor, const char *path, char *names, unsigned long size) {
#if defined(__linux__)
    return descriptor >= 0 ? (long)flistxattr(descriptor, names, size) : (long)llistxattr(path, names, size);
#else
    errno = ENOTSUP;
    return -1;
#endif
}

long savetool_get_xattr(int descriptor, const char *path, const char *name, void *value, unsigned long size) {
#if defined(__linux__)
    return descriptor >= 0 ? (long)fgetxattr(descriptor, name, value, size) : (long)lgetxattr(path, name, value, size);
#else
    errno = ENOTSUP;
    return -1;
#endif
}

int savetool_set_xattr(int descriptor, const char *path, const char *name, const void *value, unsigned long size) {
#if defined(__linux__)
    return descriptor >= 0 ? fsetxattr(descriptor, name, value, size, 0) : lsetxattr(path, name, value, size, 0);
#else
    errno = ENOTSUP;
    return -1;
#endif
}

int savetool_has_holes(int descriptor, long long size) {
#if defined(SEEK_HOLE)
    if (size <= 0) return 0;
    off_t hole = lseek(descriptor, 0, SEEK_HOLE);
    lseek(descriptor, 0, SEEK_SET);
    return hole >= 0 && hole < size;
#else
    return 0;
#endif
}

void savetool_map_buffers_from(long bytes) {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, (int)bytes);
    // Setting the threshold stops glibc adjusting both it and the trim threshold; left at
    // 128 KiB, every free of a 1 MiB read buffer at the top of the heap would shrink it (brk)
    // and the next allocation grow it again.
    mallopt(M_TRIM_THRESHOLD, (int)(2 * bytes));
#else
    (void)bytes;
#endif
}

void savetool_limit_malloc_arenas(int count) {
#if defined(__GLIBC__)
    mallopt(M_ARENA_MAX, count);
#else
    (void)count;
#endif
}

static int savetool_copy_stretch(int from, int to, off_t *offset, off_t end, char **buffer) {
#if defined(__linux__)
    while (*buffer == NULL && *offset < end) {
        ssize_t copied = copy_file_range(from, offset, to, NULL, (size_t)(end - *offset), 0);
        if (copied > 0) continue;
        if (copied == 0) return EIO;  // `from` is shorter than it said: never a short copy
        if (errno == EINTR) continue;
        // Across file systems, where the kernel cannot, where a sandbox forbids, or into a file
        // open for appending (EBADF): a buffer, which reports a descriptor really bad itself.
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP && errno != EPERM && errno != EBADF) return errno;
        break;
    }
#endif
    static const size_t size = 1 << 20;
    while (*offset < end) {
        if (*buffer == NULL && (*buffer = malloc(size)) == NULL) return ENOMEM;
        size_t wanted = (size_t)(end - *offset) < size ? (size_t)(end - *offset) : size;
        ssize_t got = pread(from, *buffer, wanted, *offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno;
        if (got == 0) return EIO;
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(to, *buffer + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put < 0) return errno;
            done += put;
        }
        *offset += got;
    }
    return 0;
}

int savetool_append_file(int from, int to, int release) {
    struct stat info;
    if (fstat(from, &info) != 0) return errno;
    off_t offset = 0;
    char *buffer = NULL;
    int result = 0;
    static const off_t stretch = (off_t)64 << 20;
    while (offset < info.st_size && result == 0) {
        off_t start = offset;
        off_t end = info.st_size - offset > stretch ? offset + stretch : info.st_size;
        result = savetool_copy_stretch(from, to, &offset, end, &buffer);
#if defined(__linux__) && defined(FALLOC_FL_PUNCH_HOLE)
        // Where holes cannot be punched the spool simply keeps its blocks until it is closed.
        if (result == 0 && release) (void)fallocate(from, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, start, offset - start);
#else
        (void)start;
        (void)release;
#endif
    }
    free(buffer);
    return result;
}

static volatile sig_atomic_t tracked_groups[64];

void savetool_track_child_group(int group) {
    for (int index = 0; index < 64; index++) {
        if (tracked_groups[index] == 0) { tracked_groups[index] = group; return; }
    }
}

void savetool_untrack_child_group(int group) {
    for (int index = 0; index < 64; index++) {
        if (tracked_groups[index] == group) tracked_groups[index] = 0;
    }
}

/// Async-signal-safe: kill and raise only.
static void savetool_stop_tracked_groups(int signal_number) {
    for (int index = 0; index < 64; index++) {
        int group = tracked_groups[index];
        if (group > 0) kill(-group, SIGKILL);
    }
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

void savetool_stop_tracked_groups_on_interrupt(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = savetool_stop_tracked_groups;
    sigemptyset(&action.sa_mask);
    int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (int index = 0; index < 3; index++) {
        struct sigaction previous;
        // A signal ignored when savetool started (nohup, a shell's background job) stays ignored.
        if (sigaction(signals[index], NULL, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
        sigaction(signals[index], &action, NULL);
    }
}
