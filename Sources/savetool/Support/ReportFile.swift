import SaveKit

#if canImport(Glibc)
import Glibc
#endif

/// A batch's `--report`: JSON lines written into the file as each batch is done, so that a run
/// that is killed leaves a record of what it did, as a log does.
///
/// The file is opened before any work, so a path that cannot be written stops the run before a
/// file is touched, and it is emptied only when the first lines come: a run that fails before
/// then leaves an earlier report as it was, and removes a file it made.
final class ReportFile {
    let path: String
    private let descriptor: Int32
    private let created: Bool
    private var emptied = false

    init(path: String) throws(FileError) {
        self.path = path
        var descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        created = descriptor >= 0
        if descriptor < 0 && errno == EEXIST { descriptor = open(path, O_WRONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            close(descriptor)
            throw .cannotCreate(path: path, reason: "a folder, expected a file for the report")
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The report file itself, which a walk of the folder it is in leaves out.
    var identity: FileWalk.Identity? {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? FileWalk.Identity(info) : nil
    }

    func write(_ lines: String) throws(FileError) {
        if !emptied {
            guard ftruncate(descriptor, 0) == 0 else { throw .ioFailure(path: path, operation: "emptying", reason: FileError.reason(errno)) }
            emptied = true
        }
        let failure = Array(lines.utf8).withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        guard failure == 0 else { throw .ioFailure(path: path, operation: "writing", reason: FileError.reason(failure)) }
    }

    /// The end of the run: the report flushed to disk, and emptied if no line was written (the
    /// report of a run that migrated nothing is an empty file).
    func finish() throws(FileError) {
        if !emptied { try write("") }
        guard fsync(descriptor) == 0 else { throw .ioFailure(path: path, operation: "flushing", reason: FileError.reason(errno)) }
    }

    /// A run that stopped before its first line: a file it made is removed.
    func abandon() {
        if created && !emptied { unlink(path) }
    }
}
