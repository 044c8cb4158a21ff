import Foundation
import SaveKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``SaveStorage`` in a folder of the local file system. Objects are files directly in it;
/// an `ifAbsent` write is a temporary file linked to its name (`link` fails when the name is
/// taken), so a reader never sees half an object and two writers never both win.
public struct LocalFolderStorage: SaveStorage {
    public let directory: String
    /// Whether writing makes the folder (and those above it) when it is missing: a child's is
    /// made by its first object, a repository's must exist.
    public let createsDirectory: Bool

    public init(directory: String, createsDirectory: Bool = false) {
        self.directory = directory
        self.createsDirectory = createsDirectory
    }

    public func child(_ folder: String) throws -> any SaveStorage {
        LocalFolderStorage(directory: try path(of: folder), createsDirectory: true)
    }

    public var location: String { directory }

    public func list() throws -> [StoredObject] {
        let entries: [(bytes: [UInt8], type: UInt8)]
        do { entries = try FileIO.entries(in: directory) } catch { throw SaveError(.notFound, file: directory, error.description, cause: error) }
        var objects: [StoredObject] = []
        for (bytes, _) in entries {
            guard let name = String(validating: bytes, as: UTF8.self), !FileIO.isTemporaryName(name) else { continue }
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            objects.append(StoredObject(name: name, size: Int64(info.st_size), modified: Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))))
        }
        return objects.sorted { $0.name < $1.name }
    }

    public func read(_ name: String) throws -> [UInt8] {
        let path = try self.path(of: name)
        do { return try FileIO.read(path) } catch { throw SaveError(error.category, file: path, error.description, cause: error) }
    }

    public func write(_ bytes: [UInt8], to name: String, ifAbsent: Bool) throws {
        let path = try self.path(of: name)
        let (descriptor, temporary) = try temporaryFile(beside: path)
        defer { unlink(temporary) }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        let flushed = failure == 0 && fsync(descriptor) == 0
        close(descriptor)
        guard flushed else { throw SaveError(.io, file: path, FileError.reason(failure != 0 ? failure : errno)) }
        do {
            try place(temporary, at: path, ifAbsent: ifAbsent)
        } catch let error as SaveError where error.category == .conflict {
            // The same bytes there already count as this write, as the protocol says.
            guard (try? FileIO.read(path)) == bytes else { throw error }
        }
    }

    public func startUpload(to name: String, ifAbsent: Bool) throws -> any StorageUpload {
        let path = try self.path(of: name)
        let (descriptor, temporary) = try temporaryFile(beside: path)
        return Upload(storage: self, path: path, ifAbsent: ifAbsent, descriptor: descriptor, temporary: temporary)
    }

    /// A temporary file beside the object's name, flushed and then placed by ``finish()``.
    final class Upload: StorageUpload {
        let storage: LocalFolderStorage
        let path: String
        let ifAbsent: Bool
        private var descriptor: Int32
        private let temporary: String
        /// Why the upload cannot finish: a write failed, or it was given up.
        private var failure: SaveError?

        init(storage: LocalFolderStorage, path: String, ifAbsent: Bool, descriptor: Int32, temporary: String) {
            (self.storage, self.path, self.ifAbsent, self.descriptor, self.temporary) = (storage, path, ifAbsent, descriptor, temporary)
        }

        deinit { abort() }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            if let failure { throw failure }
            let code = FileIO.writeAll(bytes, to: descriptor)
            guard code == 0 else {
                failure = SaveError(.io, file: path, FileError.reason(code))
                throw failure!
            }
        }

        func finish() throws {
            // A write that failed lost bytes: what is left is not the object.
            if let failure { throw failure }
            defer { abort() }
            guard fsync(descriptor) == 0 else { throw SaveError(.io, file: path, FileError.reason(errno)) }
            try storage.place(temporary, at: path, ifAbsent: ifAbsent)
        }

        func abort() {
            guard descriptor >= 0 else { return }
            if failure == nil { failure = SaveError(.io, file: path, "the upload was given up") }
            close(descriptor)
            descriptor = -1
            unlink(temporary)  // after a rename it names nothing; after a link, only the spare name goes
        }
    }

    public func download(_ name: String, to file: String) throws {
        let path = try self.path(of: name)
        guard access(path, F_OK) == 0 else { throw SaveError(.notFound, file: path, "no such object in \(directory)") }
        do { try FileManager.default.copyItem(atPath: path, toPath: file) } catch {
            throw SaveError(.cannotCreate, file: file, FileError.reason(of: error))
        }
    }

    public func copy(_ name: String, to target: String) throws {
        try upload(file: try path(of: name), to: target, ifAbsent: false)
    }

    public func delete(_ name: String) throws {
        try delete([name])
    }

    public func delete(_ names: [String]) throws {
        guard !names.isEmpty else { return }
        defer { FileIO.syncDirectory(directory) }  // what was removed before a failure stays removed
        for name in names {
            let path = try self.path(of: name)
            guard unlink(path) == 0 || errno == ENOENT else { throw SaveError(.io, file: path, "cannot be removed: \(FileError.reason(errno))") }
        }
    }

    // MARK: -

    /// An object's file; names are single path components (no folder, no `..`).
    private func path(of name: String) throws -> String {
        guard !name.isEmpty, !name.utf8.contains(UInt8(ascii: "/")), name != ".", name != ".." else {
            throw SaveError(.usage, file: directory, "the object name \"\(name)\", expected a file name without a folder")
        }
        return directory + "/" + name
    }

    private func temporaryFile(beside path: String) throws -> (Int32, String) {
        if createsDirectory, access(directory, F_OK) != 0 { try makeDirectory(directory) }
        do { return try FileIO.makeTemporaryFile(beside: path) } catch { throw SaveError(error.category, file: path, error.description, cause: error) }
    }

    /// Makes `folder` and what is missing above it, each flushed into its parent: an object
    /// written in it must not vanish with a folder that was never on disk.
    private func makeDirectory(_ folder: String) throws {
        let parent = FileIO.parentDirectory(of: folder)
        if parent != folder, access(parent, F_OK) != 0 { try makeDirectory(parent) }
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { throw SaveError(.cannotCreate, file: folder, FileError.reason(errno)) }
        FileIO.syncDirectory(parent)
    }

    /// Gives the complete temporary file its name: exclusively (a hard link, which fails when the
    /// name is taken) or replacing (a rename); then flushes the folder.
    fileprivate func place(_ temporary: String, at path: String, ifAbsent: Bool) throws {
        if ifAbsent {
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw SaveError(.conflict, file: path, "exists already, expected a new object") }
                throw SaveError(.io, file: path, FileError.reason(errno))
            }
        } else {
            guard rename(temporary, path) == 0 else { throw SaveError(.io, file: path, FileError.reason(errno)) }
        }
        FileIO.syncDirectory(directory)
    }
}
