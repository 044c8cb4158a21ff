#ifndef SAVETOOL_CSYSTEM_H
#define SAVETOOL_CSYSTEM_H

/// Swaps two paths atomically (Linux renameat2 RENAME_EXCHANGE, macOS renamex_np RENAME_SWAP):
/// at every moment each name refers to one complete directory. Returns 0, or -1 with errno
/// set (ENOSYS or EINVAL where the file system cannot exchange).
int savetool_rename_exchange(const char *first, const char *second);

/// Flushes every file of the file system holding `descriptor` to disk in one call (Linux
/// syncfs); elsewhere, or on failure, falls back to fsync of that descriptor.
int savetool_sync_file_system(int descriptor);

/// Renames `from` to `to` only if `to` does not exist (Linux renameat2 RENAME_NOREPLACE, else a
/// hard link): an existing file is never replaced. Returns 0, or -1 with errno EEXIST when `to` exists.
int savetool_rename_noreplace(const char *from, const char *to);

/// An unnamed file in `directory`, open for reading and writing (Linux O_TMPFILE): nothing is seen there
/// until savetool_link_unnamed names it, and nothing is left if the process dies first.
/// Returns the descriptor, or -1 with errno set (EOPNOTSUPP, EISDIR or EINVAL where the file
/// system or the system has none).
int savetool_open_unnamed(const char *directory, unsigned int mode);

/// Names the unnamed file open as `descriptor` `to` (linkat through /proc/self/fd), never
/// replacing a file: -1 with errno EEXIST when `to` exists.
int savetool_link_unnamed(int descriptor, const char *to);

/// Extended attributes of a path, not following a final symbolic link (Linux llistxattr,
/// lgetxattr, lsetxattr); `descriptor` ≥ 0 reads or sets those of an open file instead of
/// `path` (no path to look up). -1 with errno ENOTSUP elsewhere.
long savetool_list_xattrs(int descriptor, const char *path, char *names, unsigned long size);
long savetool_get_xattr(int descriptor, const char *path, const char *name, void *value, unsigned long size);
int savetool_set_xattr(int descriptor, const char *path, const char *name, const void *value, unsigned long size);

/// 1 when the open file has a hole before `size` (SEEK_HOLE), else 0.
int savetool_has_holes(int descriptor, long long size);

/// Buffers of `bytes` and more are mapped on their own and returned to the system when freed
/// (glibc's M_MMAP_THRESHOLD), rather than kept in malloc's arenas; nothing elsewhere.
void savetool_map_buffers_from(long bytes);

/// At most `count` malloc arenas (glibc's M_ARENA_MAX); nothing elsewhere. Past it, threads
/// share arenas instead of each taking one of its own, whose freed memory no other thread
/// reuses.
void savetool_limit_malloc_arenas(int count);

/// Appends the whole of the file open as `from` (from its start) at the current offset of `to`:
/// in the kernel where it can (Linux copy_file_range, which shares the blocks on file systems
/// that can), else through a buffer. With `release`, each copied stretch of `from` is freed
/// as soon as it is copied (a hole punched), so the two never take much more room than one.
/// Returns 0, or an errno (EIO when fewer bytes were copied than `from` holds).
int savetool_append_file(int from, int to, int release);

/// Plugin processes lead process groups of their own, which a terminal's Ctrl-C does not
/// reach: a group tracked here is killed (SIGKILL) if this process is interrupted (SIGINT,
/// SIGTERM, SIGHUP) once savetool_stop_tracked_groups_on_interrupt has been called, before
/// the signal takes its default course. Up to 64 groups; more are not tracked.
void savetool_track_child_group(int group);
void savetool_untrack_child_group(int group);
/// Installs the handlers (a command-line process; a server keeps its own).
void savetool_stop_tracked_groups_on_interrupt(void);

#endif
