import CSaveToolSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written piece by piece under a temporary name beside its destination (or, for a new
/// file that the caller flushes with the rest of a batch, unnamed in its folder), and put in
/// place only by ``commit()``: until then the destination is untouched, and a crash, a full
/// disk or ``abort()`` leaves it as it was. `-` writes to standard output directly, and a
/// device or FIFO (`/dev/null`) is written in place, never replaced. A symbolic link is
/// written through or replaced as `links` says (``LinkPolicy``).
public final class AtomicFileOutput: ByteOutput {
    /// The destination as given, which messages name.
    public let path: String
    /// Where the file lands: `path`, or the file its links lead to.
    private let destination: String
    private let descriptor: Int32
    private let target: Target
    private let mode: mode_t
    /// The owner and group of the file replaced, kept (as root can; another user keeps the group
    /// where it may, as `cp -p` does): `sudo savetool set` never takes a save from its app.
    private var owner: (uid: uid_t, gid: gid_t)?
    private var finished = false
    private let durable: Bool
    private var writeback = EarlyWriteback()

    /// Where the bytes go until ``commit()``.
    private enum Target {
        /// Standard output (`-`), left open.
        case standardOutput
        /// A device or FIFO opened in place, closed when done.
        case special
        /// A temporary file beside the destination, renamed over it.
        case named(temporaryPath: String)
        /// An unnamed file in the destination's folder (O_TMPFILE), linked in where nothing is:
        /// one change to the folder, where a temporary name and a rename make two (on a batch of
        /// small files, a sixth of the kernel's time), and nothing left behind by a crash.
        case unnamed
    }

    /// `mode` is the new file's permission bits; without it, those of the file replaced (for a
    /// new file, 0666 less the umask, as `cp` and the shell's `>` make it).
    public init(path: String, durable: Bool = true, mode: mode_t? = nil, links: LinkPolicy = .replace) throws(FileError) {
        self.path = path
        self.durable = durable
        if path == "-" {
            (descriptor, target, self.mode, destination) = (STDOUT_FILENO, .standardOutput, 0, path)
            return
        }
        // `-o saves/` names a folder: said as such, not as the "not a directory" the system gives.
        if path.hasSuffix("/") { throw .cannotCreate(path: path, reason: "a folder's name (it ends in /), expected a file's") }
        let destination = try FileIO.destination(of: path, links: links)
        self.destination = destination
        // One look at what is there: nothing (the usual case of a batch writing new files), a
        // device or FIFO written in place, a link (whose file's mode and owner are kept), a file.
        var existing = stat()
        var replaces = lstat(destination, &existing) == 0
        if replaces, FileIO.isSpecialType(existing.st_mode), let special = try FileIO.openSpecialDestination(destination) {
            (descriptor, target, self.mode) = (special, .special, 0)
            return
        }
        if replaces, existing.st_mode & S_IFMT == S_IFLNK { replaces = stat(destination, &existing) == 0 }
        if replaces { owner = (existing.st_uid, existing.st_gid) }
        let mode = mode ?? (replaces ? existing.st_mode & 0o7777 : FileIO.newFileMode)
        self.mode = mode
        // Only where the caller flushes the whole file system afterwards (a batch's `syncfs`),
        // which writes the inode's new link count with its name; a durable write keeps the
        // well-trodden named temporary file, flushed before its rename.
        if !replaces, !durable, FileIO.namesUnnamedFiles {
            let unnamed = savetool_open_unnamed(FileIO.parentDirectory(of: destination), UInt32(mode & 0o777))
            if unnamed >= 0 {
                (descriptor, target) = (unnamed, .unnamed)
                return
            }
        }
        let (temporary, temporaryPath) = try FileIO.makeTemporaryFile(beside: destination)
        (descriptor, target) = (temporary, .named(temporaryPath: temporaryPath))
    }

    deinit { abort() }

    /// Names an unnamed file (`savetool_link_unnamed`); tests make it fail as a restricted
    /// /proc would, to see the copy that stands in.
    nonisolated(unsafe) static var linkUnnamed: (Int32, String) -> Int32 = { savetool_link_unnamed($0, $1) }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        let failure = FileIO.writeAll(bytes, to: descriptor)
        guard failure == 0 else { throw FileError.ioFailure(path: path, operation: "writing", reason: FileError.reason(failure)) }
        switch target {
        case .named, .unnamed: if durable { writeback.wrote(bytes.count, to: descriptor) }
        case .standardOutput, .special: break
        }
    }

    /// Flushes the file to disk and moves it into place. Without `replacing`, it is placed only
    /// where nothing is, not even a link (an exclusive rename): ``FileError/cannotCreate(path:reason:)``
    /// says "file exists" otherwise.
    public func commit(replacing: Bool = true) throws(FileError) {
        guard !finished else { return }
        finished = true
        switch target {
        case .standardOutput:
            return
        case .special:
            close(descriptor)
            return
        case .named, .unnamed:
            break
        }
        var placed = false
        defer {
            if !placed, case .named(let temporaryPath) = target { unlink(temporaryPath) }
        }
        if let owner, owner.uid != geteuid() || owner.gid != getegid() {
            // Before the mode: a change of owner clears setuid and setgid bits.
            if fchown(descriptor, owner.uid, owner.gid) != 0 { _ = fchown(descriptor, uid_t.max, owner.gid) }
        }
        guard fchmod(descriptor, mode) == 0 else {
            close(descriptor)
            throw .ioFailure(path: path, operation: "setting permissions", reason: FileError.reason(errno))
        }
        guard !durable || fsync(descriptor) == 0 else {
            let code = errno
            close(descriptor)
            throw .ioFailure(path: path, operation: "flushing", reason: FileError.reason(code))
        }
        switch target {
        case .named(let temporaryPath):
            guard close(descriptor) == 0 else { throw .ioFailure(path: path, operation: "closing", reason: FileError.reason(errno)) }
            guard (replacing ? rename(temporaryPath, destination) : savetool_rename_noreplace(temporaryPath, destination)) == 0 else {
                throw .cannotCreate(path: path, reason: FileError.reason(errno))
            }
        case .unnamed:
            var linked = Self.linkUnnamed(descriptor, destination) == 0
            if !linked && errno == EEXIST {
                // Something took the name since it was looked at: replaced only if asked, through
                // a temporary name, as a named temporary file would be.
                guard replacing else {
                    close(descriptor)
                    throw .cannotCreate(path: path, reason: FileError.reason(EEXIST))
                }
                linked = try linkReplacing()
            }
            // /proc/self/fd refused (a restricted /proc, a policy on linkat): the bytes are copied
            // into a named temporary file, which is renamed in, as if unnamed files were never tried.
            if !linked { try copyToNamedFile(replacing: replacing) }
            guard close(descriptor) == 0 else { throw .ioFailure(path: path, operation: "closing", reason: FileError.reason(errno)) }
        case .standardOutput, .special:
            break
        }
        placed = true
        if durable { FileIO.syncDirectory(FileIO.parentDirectory(of: destination)) }
    }

    /// Names the unnamed file with a temporary name beside the destination, then renames it
    /// over; `false` when it cannot be named at all.
    private func linkReplacing() throws(FileError) -> Bool {
        for _ in 0..<100 {
            let temporary = FileIO.temporaryName(beside: destination)
            guard Self.linkUnnamed(descriptor, temporary) == 0 else {
                if errno == EEXIST { continue }
                return false
            }
            guard rename(temporary, destination) == 0 else {
                let code = errno
                unlink(temporary)
                close(descriptor)
                throw .cannotCreate(path: path, reason: FileError.reason(code))
            }
            return true
        }
        close(descriptor)
        throw .cannotCreate(path: path, reason: "no free temporary name beside it")
    }

    /// Copies what was written into a named temporary file beside the destination and renames
    /// it in (exclusively unless `replacing`).
    private func copyToNamedFile(replacing: Bool) throws(FileError) {
        let temporary: (descriptor: Int32, path: String)
        do { temporary = try FileIO.makeTemporaryFile(beside: destination) } catch {
            close(descriptor)
            throw error
        }
        var renamed = false
        defer { if !renamed { unlink(temporary.path) } }
        let failure = savetool_append_file(descriptor, temporary.descriptor, 0)
        let permissions = fchmod(temporary.descriptor, mode) == 0 ? 0 : errno
        guard close(temporary.descriptor) == 0, failure == 0, permissions == 0 else {
            close(descriptor)
            throw .ioFailure(path: path, operation: "writing", reason: FileError.reason(failure != 0 ? failure : permissions != 0 ? permissions : errno))
        }
        guard (replacing ? rename(temporary.path, destination) : savetool_rename_noreplace(temporary.path, destination)) == 0 else {
            let code = errno
            close(descriptor)
            throw .cannotCreate(path: path, reason: FileError.reason(code))
        }
        renamed = true
    }

    /// Throws the partial file away; the destination keeps its old contents.
    public func abort() {
        guard !finished else { return }
        finished = true
        switch target {
        case .standardOutput:
            return
        case .special, .unnamed:
            close(descriptor)
        case .named(let temporaryPath):
            close(descriptor)
            unlink(temporaryPath)
        }
    }
}
