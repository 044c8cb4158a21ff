import CSaveToolSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written piece by piece under a temporary name beside its destination, and renamed
/// over it only by ``commit()``: until then the destination is untouched, and a crash, a full
/// disk or ``abort()`` leaves it as it was. `-` writes to standard output directly, and a
/// device or FIFO (`/dev/null`) is written in place, never replaced. A symbolic link is
/// written through or replaced as `links` says (``LinkPolicy``).
public final class AtomicFileOutput: ByteOutput {
    /// The destination as given, which messages name.
    public let path: String
    /// Where the file lands: `path`, or the file its links lead to.
    private let destination: String
    private let descriptor: Int32
    private let temporaryPath: String?
    private let mode: mode_t
    /// The owner and group of the file replaced, kept (as root can; another user keeps the group
    /// where it may, as `cp -p` does): `sudo savetool set` never takes a save from its app.
    private var owner: (uid: uid_t, gid: gid_t)?
    private var finished = false
    /// A device or FIFO opened in place, closed when done (standard output is left open).
    private var ownsDescriptor = false
    private let durable: Bool
    private var writeback = EarlyWriteback()

    /// `mode` is the new file's permission bits; without it, those of the file replaced (for a
    /// new file, 0666 less the umask, as `cp` and the shell's `>` make it).
    public init(path: String, durable: Bool = true, mode: mode_t? = nil, links: LinkPolicy = .replace) throws(FileError) {
        self.path = path
        self.durable = durable
        if path == "-" {
            descriptor = STDOUT_FILENO
            temporaryPath = nil
            self.mode = 0
            destination = path
            return
        }
        // `-o saves/` names a folder: said as such, not as the "not a directory" the system gives.
        if path.hasSuffix("/") { throw .cannotCreate(path: path, reason: "a folder's name (it ends in /), expected a file's") }
        let destination = try FileIO.destination(of: path, links: links)
        self.destination = destination
        if let special = try FileIO.openSpecialDestination(destination) {
            (descriptor, temporaryPath, self.mode, ownsDescriptor) = (special, nil, 0, true)
            return
        }
        var existing = stat()
        let replaces = stat(destination, &existing) == 0
        if replaces { owner = (existing.st_uid, existing.st_gid) }
        if let mode {
            self.mode = mode
        } else {
            self.mode = replaces ? existing.st_mode & 0o7777 : FileIO.newFileMode
        }
        (descriptor, temporaryPath) = try FileIO.makeTemporaryFile(beside: destination)
    }

    deinit { abort() }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        let failure = FileIO.writeAll(bytes, to: descriptor)
        guard failure == 0 else { throw FileError.ioFailure(path: path, operation: "writing", reason: FileError.reason(failure)) }
        if durable && temporaryPath != nil { writeback.wrote(bytes.count, to: descriptor) }
    }

    /// Flushes the file to disk and moves it into place. Without `replacing`, it is placed only
    /// where nothing is, not even a link (an exclusive rename): ``FileError/cannotCreate(path:reason:)``
    /// says "file exists" otherwise.
    public func commit(replacing: Bool = true) throws(FileError) {
        guard !finished, let temporaryPath else {
            if !finished && ownsDescriptor { close(descriptor) }
            finished = true
            return
        }
        finished = true
        var renamed = false
        defer { if !renamed { unlink(temporaryPath) } }
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
        guard close(descriptor) == 0 else { throw .ioFailure(path: path, operation: "closing", reason: FileError.reason(errno)) }
        guard (replacing ? rename(temporaryPath, destination) : savetool_rename_noreplace(temporaryPath, destination)) == 0 else {
            throw .cannotCreate(path: path, reason: FileError.reason(errno))
        }
        renamed = true
        if durable { FileIO.syncDirectory(FileIO.parentDirectory(of: destination)) }
    }

    /// Throws the partial file away; the destination keeps its old contents.
    public func abort() {
        guard !finished else { return }
        finished = true
        guard let temporaryPath else {
            if ownsDescriptor { close(descriptor) }
            return
        }
        close(descriptor)
        unlink(temporaryPath)
    }
}
