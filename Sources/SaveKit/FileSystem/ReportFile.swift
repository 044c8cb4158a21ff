#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A batch's report: lines written into the file as each file is done, so that a run that is
/// killed leaves a record of what it did, as a log does.
///
/// The file is opened before any work, so a path that cannot be written stops the run before a
/// file is touched, and a regular file is emptied only when the first lines come: a run that
/// fails before then leaves an earlier report as it was, and removes a file it made. `-`, a
/// pipe, a terminal or a device (`/dev/stdout`, `>(jq …)`) is written as it is.
///
/// Written by one caller at a time (``BatchMigration`` hands it its lines in turn), hence
/// `@unchecked Sendable`.
public final class ReportFile: @unchecked Sendable {
    public let path: String
    private let descriptor: Int32
    /// Made by this run (exclusively), so removed if the run stops before its first line.
    private let created: Bool
    /// A regular file, which is emptied first and flushed at the end; anything else is written
    /// as a stream.
    private let isRegular: Bool
    private var emptied = false

    public init(path: String) throws(FileError) {
        self.path = path
        if path == "-" {
            (descriptor, created, isRegular) = (STDOUT_FILENO, false, false)
            return
        }
        // An existing file (through its links) is opened as it is; a new one is made exclusively,
        // so that only a file this run made is ever removed; a link to nothing yet makes its file.
        var descriptor = open(path, O_WRONLY | O_CLOEXEC)
        var created = false
        if descriptor < 0 && errno == ENOENT {
            descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            created = descriptor >= 0
            if descriptor < 0 && errno == EEXIST { descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o666) }
        }
        guard descriptor >= 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw .cannotCreate(path: path, reason: FileError.reason(code))
        }
        (self.descriptor, self.created, isRegular) = (descriptor, created, info.st_mode & S_IFMT == S_IFREG)
    }

    deinit { if descriptor != STDOUT_FILENO { close(descriptor) } }

    /// The report file itself, which a walk of the folder it is in leaves out.
    public var identity: FileWalk.Identity? {
        var info = stat()
        return isRegular && fstat(descriptor, &info) == 0 ? FileWalk.Identity(info) : nil
    }

    public func write(_ lines: String) throws(FileError) {
        if !emptied {
            if isRegular, ftruncate(descriptor, 0) != 0 { throw .ioFailure(path: path, operation: "emptying", reason: FileError.reason(errno)) }
            emptied = true
        }
        let failure = Array(lines.utf8).withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        guard failure == 0 else { throw .ioFailure(path: path, operation: "writing", reason: FileError.reason(failure)) }
    }

    /// The end of the run: the report flushed to disk, and emptied if no line was written (the
    /// report of a run that migrated nothing is an empty file).
    public func finish() throws(FileError) {
        if !emptied { try write("") }
        guard !isRegular || fsync(descriptor) == 0 else { throw .ioFailure(path: path, operation: "flushing", reason: FileError.reason(errno)) }
    }

    /// A run that stopped before its first line: a file it made is removed.
    public func abandon() {
        if created && !emptied { unlink(path) }
    }
}
