#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif

/// Whole-file reads and crash-safe writes.
///
/// Writes go to a temporary file in the destination's own directory, are flushed to disk, and
/// are then renamed over the destination: a crash or a full disk leaves either the old file or
/// the new one, never half of one.
public enum FileIO {
    /// The whole contents of a regular file; `-` reads standard input.
    public static func read(_ path: String) throws(FileError) -> [UInt8] {
        let descriptor: Int32
        if path == "-" {
            descriptor = STDIN_FILENO
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .unreadable(path: path, reason: FileError.reason(errno)) }
        }
        defer { if path != "-" { close(descriptor) } }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw .unreadable(path: path, reason: FileError.reason(EISDIR))
        }
        var contents: [UInt8] = []
        if info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 { contents.reserveCapacity(Int(info.st_size)) }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "reading", reason: FileError.reason(errno))
            }
            contents.append(contentsOf: chunk[..<count])
        }
        return contents
    }

    /// Replaces `path` with `bytes` atomically; `-` writes standard output.
    ///
    /// The new file keeps the permission bits of the file it replaces (0644 for a new file).
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(FileError) {
        let output = try AtomicFileOutput(path: path)
        do {
            try bytes.withUnsafeBytes { try output.write($0) }
        } catch let error as FileError {
            output.abort()
            throw error
        } catch {
            output.abort()
            throw .ioFailure(path: path, operation: "writing", reason: "\(error)")
        }
        try output.commit()
    }

    /// Flushes a directory's entries, so that a rename in it survives a power cut.
    public static func syncDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
