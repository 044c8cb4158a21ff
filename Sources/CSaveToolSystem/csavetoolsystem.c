// System calls the Swift overlays do not expose.
#define _GNU_SOURCE
#include "csavetoolsystem.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int savetool_append_file(int from, int to) {
    off_t offset = 0;
#if defined(__linux__)
    for (;;) {
        ssize_t copied = copy_file_range(from, &offset, to, NULL, 1 << 30, 0);
        if (copied > 0) continue;
        if (copied == 0) return 0;
        if (errno == EINTR) continue;
        // Across file systems, or where the kernel cannot: the buffer below.
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) return errno;
        break;
    }
#endif
    static const size_t size = 1 << 20;
    char *buffer = malloc(size);
    if (buffer == NULL) return ENOMEM;
    int result = 0;
    for (;;) {
        ssize_t got = pread(from, buffer, size, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { result = errno; break; }
        if (got == 0) break;
        offset += got;
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(to, buffer + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put < 0) { result = errno; goto end; }
            done += put;
        }
    }
end:
    free(buffer);
    return result;
}
