#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
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
        if path == "-" {
            try writeAll(bytes, to: STDOUT_FILENO, path: path)
            return
        }
        let directory = parentDirectory(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var existing = stat()
        let mode: mode_t = stat(path, &existing) == 0 ? existing.st_mode & 0o7777 : 0o644
        var template = Array("\(directory)/.\(name).savetool-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
        let temporary = String(cString: template)
        var renamed = false
        defer {
            if !renamed { unlink(temporary) }
        }
        do throws(FileError) {
            try writeAll(bytes, to: descriptor, path: path)
            guard fchmod(descriptor, mode) == 0 else { throw FileError.ioFailure(path: path, operation: "setting permissions", reason: FileError.reason(errno)) }
            guard fsync(descriptor) == 0 else { throw FileError.ioFailure(path: path, operation: "flushing", reason: FileError.reason(errno)) }
        } catch {
            close(descriptor)
            throw error
        }
        guard close(descriptor) == 0 else { throw .ioFailure(path: path, operation: "closing", reason: FileError.reason(errno)) }
        guard rename(temporary, path) == 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
        renamed = true
        syncDirectory(directory)
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

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(FileError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                systemWrite(descriptor, buffer.baseAddress! + written, min(buffer.count - written, 1 << 20))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "writing", reason: FileError.reason(errno))
            }
            written += count
        }
    }
}
