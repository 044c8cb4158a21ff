import CSystem
import Crypto
import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a save directory as a bundle: `manifest.json`, then each file under `files/`.
///
/// The files are read twice — once to checksum them for the manifest, which comes first in
/// the archive, and once to copy them — and a file that changes in between (its size, times or
/// inode differ from the first read's, before or after the copy; the change time cannot be set
/// back) fails the export rather than landing with a checksum that does not match. The bundle is written under a
/// temporary name beside its destination and renamed into place only when complete.
/// The same files and `createdAt` give the same bytes.
public struct BundleExporter: Sendable {
    public var format: ArchiveFormat = .tar(.gzip)
    public var label: String?
    /// The manifest's `createdAt`, also the time of the `manifest.json` entry.
    public var createdAt: Date
    public var createdBy: String
    public var registry: CodecRegistry = .builtIn
    /// Recorded in the manifest as `sourcePath` (backups set it).
    public var sourcePath: String?
    /// Paths relative to the source that are left out, with everything below them (a backup
    /// repository inside the folder it backs up).
    public var excluded: Set<String> = []

    public init(createdAt: Date, createdBy: String) {
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    /// The manifest a bundle of `source` would have, without writing one (checksums read every file).
    public func manifest(of source: String) throws -> BundleManifest {
        let root = source.hasSuffix("/") && source.count > 1 ? String(source.dropLast()) : source
        let files = try describeInParallel(try Self.files(under: root, excluding: excluded), root: root).map(\.file)
        let sourceName = URL(fileURLWithPath: root).standardizedFileURL.lastPathComponent
        return BundleManifest(createdAt: createdAt, createdBy: createdBy, label: label, source: sourceName, sourcePath: sourcePath, files: files)
    }

    @discardableResult
    public func export(directory source: String, to destination: String) throws -> BundleManifest {
        let root = source.hasSuffix("/") && source.count > 1 ? String(source.dropLast()) : source
        return try export(files: try Self.files(under: root, excluding: excluded), under: root, to: destination, replacing: true)
    }

    /// Writes the files at the relative `paths` under `root` as a bundle. With `replacing` false
    /// the bundle is created exclusively: an existing file at `destination` is never replaced,
    /// and ``BundleError/exists(_:)`` is thrown instead.
    @discardableResult
    public func export(files paths: [String], under root: String, to destination: String, replacing: Bool) throws -> BundleManifest {
        let described = try describeInParallel(paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, root: root)
        let files = described.map(\.file)
        let sourceName = URL(fileURLWithPath: root).standardizedFileURL.lastPathComponent
        let manifest = BundleManifest(createdAt: createdAt, createdBy: createdBy, label: label, source: sourceName, sourcePath: sourcePath, files: files)
        try write(manifest, identities: described.map(\.identity), root: root, to: destination, replacing: replacing)
        return manifest
    }

    // MARK: - Reading the source

    /// Regular files below `root`, relative and sorted by their UTF-8 bytes; links and special
    /// files are refused, since no import would restore them.
    static func files(under root: String, excluding excluded: Set<String> = []) throws -> [String] {
        var info = stat()
        guard lstat(root, &info) == 0 else { throw BundleError.unreadable(path: root, reason: FileError.reason(errno)) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw BundleError.notADirectory(root) }
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory)
            } catch {
                throw BundleError.unreadable(path: directory, reason: "cannot list the directory")
            }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                let path = root + "/" + child
                guard lstat(path, &info) == 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
                switch info.st_mode & S_IFMT {
                case S_IFREG: found.append(child)
                case S_IFDIR: if !excluded.contains(child) { pending.append(child) }
                case S_IFLNK: throw BundleError.unsupportedEntry(path: path, kind: "a symbolic link")
                default: throw BundleError.unsupportedEntry(path: path, kind: "a device, FIFO or socket")
                }
            }
        }
        return found.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Checksums the files on every core: the manifest comes first in the bundle, so all of
    /// them are read once before any is written, and that pass is worth sharing out.
    private func describeInParallel(_ paths: [String], root: String) throws -> [(file: BundleManifest.File, identity: FileIdentity)] {
        final class Results: @unchecked Sendable {
            var files: [(file: BundleManifest.File, identity: FileIdentity)?]
            var failure: (any Error)?
            let lock = NSLock()
            init(count: Int) { files = Array(repeating: nil, count: count) }
        }
        let results = Results(count: paths.count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, paths.count))
        let exporter = self
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for index in stride(from: worker, to: paths.count, by: workers) {
                do {
                    let file = try exporter.describe(root + "/" + paths[index], as: paths[index])
                    results.lock.withLock { results.files[index] = file }
                } catch {
                    results.lock.withLock { if results.failure == nil { results.failure = error } }
                    return
                }
            }
        }
        if let failure = results.failure { throw failure }
        return results.files.map { $0! }
    }

    /// What identifies one version of a file: a write changes the size, the modification or
    /// the change time, and replacing the file changes the inode.
    struct FileIdentity: Equatable, Sendable {
        var device: UInt64, inode: UInt64, size: Int64
        var modified: timespec, changed: timespec

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = info.st_mtim
            changed = info.st_ctim
        }

        static func == (a: FileIdentity, b: FileIdentity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    private func describe(_ path: String, as relative: String) throws -> (file: BundleManifest.File, identity: FileIdentity) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
        var hasher = SHA256()
        var size: Int64 = 0
        var head: [UInt8] = []
        try Self.readChunks(path) { chunk in
            hasher.update(bufferPointer: chunk)
            if head.count < CodecRegistry.sniffLength { head.append(contentsOf: chunk.prefix(CodecRegistry.sniffLength - head.count)) }
            size += Int64(chunk.count)
        }
        var after = stat()
        guard stat(path, &after) == 0, FileIdentity(after) == FileIdentity(info), Int64(info.st_size) == size else {
            throw BundleError.changedDuringExport(path: path)
        }
        let modified = Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec))
        let file = BundleManifest.File(
            path: relative, size: size, sha256: Checksum.hex(hasher.finalize()), mode: UInt16(info.st_mode & 0o7777),
            modifiedAt: modified, codec: recognisedCodec(head, name: relative), kind: nil, version: nil)
        return (file, FileIdentity(info))
    }

    /// The codec of a file whose first bytes and name agree: a binary plist's magic number is
    /// enough; text needs a matching extension too (a `.txt` starting with `{` is not called
    /// JSON). Decoding every save to be sure would cost more than the whole export.
    private func recognisedCodec(_ head: [UInt8], name: String) -> String? {
        guard let codec = registry.codec(sniffing: head) else { return nil }
        if codec.traits.contains(.conclusiveMagic) { return codec.id }
        let lowered = name.lowercased()
        return codec.fileExtensions.contains { lowered.hasSuffix("." + $0) } ? codec.id : nil
    }

    // MARK: - Writing the bundle

    private func write(_ manifest: BundleManifest, identities: [FileIdentity], root: String, to destination: String, replacing: Bool) throws {
        let directory = FileIO.parentDirectory(of: destination)
        let descriptor: Int32, temporary: String
        do {
            (descriptor, temporary) = try FileIO.makeTemporaryFile(beside: destination)
        } catch {
            guard case .cannotCreate(_, let reason) = error else { throw BundleError.cannotCreate(path: destination, reason: "\(error)") }
            throw BundleError.cannotCreate(path: destination, reason: reason)
        }
        var renamed = false
        defer {
            close(descriptor)
            if !renamed { unlink(temporary) }
        }
        let writer = try ArchiveWriter(fileDescriptor: descriptor, name: destination, format: format)
        let manifestBytes = try manifest.encoded()
        try writer.begin(.file("manifest.json", size: Int64(manifestBytes.count), permissions: 0o644, modified: manifest.createdAt))
        try writer.write(manifestBytes)
        for (file, identity) in zip(manifest.files, identities) {
            let path = root + "/" + file.path
            try writer.begin(.file("files/" + file.path, size: file.size, permissions: file.mode, modified: file.modifiedAt))
            var written: Int64 = 0
            try Self.readChunks(path, expecting: identity) { chunk in
                written += Int64(chunk.count)
                guard written <= file.size else { throw BundleError.changedDuringExport(path: path) }
                try writer.write(chunk)
            }
            guard written == file.size else { throw BundleError.changedDuringExport(path: path) }
        }
        try writer.close()
        guard fchmod(descriptor, 0o644) == 0, fsync(descriptor) == 0 else {
            throw BundleError.ioFailure(path: destination, reason: FileError.reason(errno))
        }
        guard (replacing ? rename(temporary, destination) : savetool_rename_noreplace(temporary, destination)) == 0 else {
            if errno == EEXIST && !replacing { throw BundleError.exists(destination) }
            throw BundleError.cannotCreate(path: destination, reason: FileError.reason(errno))
        }
        renamed = true
        FileIO.syncDirectory(directory)
    }

    /// Calls `body` with each 1 MiB chunk of a file; with `identity`, the file must be that
    /// version of it before and after.
    static func readChunks(_ path: String, expecting identity: FileIdentity? = nil, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
        defer { close(descriptor) }
        func check() throws {
            guard let identity else { return }
            var info = stat()
            guard fstat(descriptor, &info) == 0, FileIdentity(info) == identity else { throw BundleError.changedDuringExport(path: path) }
        }
        try check()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw BundleError.unreadable(path: path, reason: FileError.reason(errno))
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        try check()
    }
}

/// Why a bundle could not be written or read.
public enum BundleError: Error, Sendable, Equatable, CustomStringConvertible {
    case notADirectory(String)
    case unreadable(path: String, reason: String)
    case cannotCreate(path: String, reason: String)
    case ioFailure(path: String, reason: String)
    /// A link or special file in a save directory: no import would restore it.
    case unsupportedEntry(path: String, kind: String)
    case changedDuringExport(path: String)
    /// A bundle that must not replace anything found a file at its name.
    case exists(String)

    public var path: String {
        switch self {
        case .notADirectory(let path), .exists(let path): path
        case .unreadable(let path, _), .cannotCreate(let path, _), .ioFailure(let path, _): path
        case .unsupportedEntry(let path, _), .changedDuringExport(let path): path
        }
    }

    public var description: String {
        switch self {
        case .notADirectory: "not a directory, expected the save directory to export"
        case .unreadable(_, let reason): "cannot read: \(reason)"
        case .cannotCreate(_, let reason): "cannot create: \(reason)"
        case .ioFailure(_, let reason): "writing failed: \(reason)"
        case .unsupportedEntry(_, let kind): "\(kind), expected regular files and directories only (a bundle restores no links or devices)"
        case .changedDuringExport: "the file changed while it was being exported, expected it unchanged; try again"
        case .exists: "already exists, expected a new name (an existing file is never replaced)"
        }
    }
}

extension BundleError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .notADirectory, .unreadable: .notFound
        case .cannotCreate, .exists: .cannotCreate
        case .ioFailure, .changedDuringExport: .io
        case .unsupportedEntry: .badData
        }
    }
}
