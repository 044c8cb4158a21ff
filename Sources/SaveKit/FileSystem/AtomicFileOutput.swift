#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// A file written piece by piece under a temporary name beside its destination, and renamed
/// over it only by ``commit()``: until then the destination is untouched, and a crash, a full
/// disk or ``abort()`` leaves it as it was. `-` writes to standard output directly.
public final class AtomicFileOutput: ByteOutput {
    public let path: String
    private let descriptor: Int32
    private let temporaryPath: String?
    private let mode: mode_t
    private var finished = false
    private let durable: Bool
    private var writtenBytes: Int64 = 0

    public init(path: String, durable: Bool = true) throws(FileError) {
        self.path = path
        self.durable = durable
        if path == "-" {
            descriptor = STDOUT_FILENO
            temporaryPath = nil
            mode = 0
            return
        }
        var existing = stat()
        mode = stat(path, &existing) == 0 ? existing.st_mode & 0o7777 : 0o644
        (descriptor, temporaryPath) = try FileIO.makeTemporaryFile(beside: path)
    }

    deinit { abort() }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        var written = 0
        while written < bytes.count {
            let count = systemWrite(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError.ioFailure(path: path, operation: "writing", reason: FileError.reason(errno))
            }
            written += count
        }
        #if os(Linux)
        // Starts writing this chunk to disk now (DONTNEED on dirty pages begins their
        // writeback without waiting), so that commit()'s fsync has little left to wait for.
        if durable, temporaryPath != nil, bytes.count >= 1 << 16 {
            _ = posix_fadvise(descriptor, off_t(writtenBytes), off_t(bytes.count), POSIX_FADV_DONTNEED)
        }
        #endif
        writtenBytes += Int64(bytes.count)
    }

    /// Flushes the file to disk and moves it into place.
    public func commit() throws(FileError) {
        guard !finished, let temporaryPath else { finished = true; return }
        finished = true
        defer { if access(temporaryPath, F_OK) == 0 { unlink(temporaryPath) } }
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
        guard rename(temporaryPath, path) == 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
        if durable { FileIO.syncDirectory(FileIO.parentDirectory(of: path)) }
    }

    /// Throws the partial file away; the destination keeps its old contents.
    public func abort() {
        guard !finished else { return }
        finished = true
        guard let temporaryPath else { return }
        close(descriptor)
        unlink(temporaryPath)
    }
}
