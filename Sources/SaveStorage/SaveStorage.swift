import Foundation
import SaveKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a backup repository keeps its objects: a local folder, or a bucket and prefix of an
/// S3-compatible object store. The one storage seam: the repository is written against this
/// protocol, and neither it nor SaveKit knows which one it has.
///
/// Object stores have no rename, so the protocol has none: what must appear whole is written
/// under its final name with `ifAbsent` (a local folder does that with an exclusive rename,
/// an object store with `If-None-Match: *`), and a repository marks complete what is complete
/// by a second object written last.
///
/// Errors are ``SaveKit/SaveError``s with the categories the command line maps to exit codes:
/// `notFound` (no such object or bucket), `permissionDenied` (credentials refused), `busy`
/// (the store did not answer in time), `io`, and `conflict` for an `ifAbsent` write that found
/// the name taken.
public protocol SaveStorage: Sendable {
    /// For messages: `backups` or `s3://bucket/prefix`.
    var location: String { get }

    /// Every object, sorted by name. Throws when the listing fails: never a quiet empty list,
    /// which a retention pass would take for "nothing to keep".
    func list() throws -> [StoredObject]

    /// The objects whose names begin with `prefix`, sorted by name: an object store asks the
    /// server for just those (a sync server's slot among thousands).
    func list(prefix: String) throws -> [StoredObject]

    /// The objects under `folder` (one name, no `/`) as a store of their own: a folder beside
    /// the objects, or a longer prefix. Nothing is created until an object is written in it;
    /// listing one that holds nothing yet fails with `notFound`, or lists nothing.
    func child(_ folder: String) throws -> any SaveStorage

    /// A small object's bytes (a marker, a lock), whole.
    func read(_ name: String) throws -> [UInt8]

    /// Writes a small object; with `ifAbsent`, only when no object has that name — or one that
    /// holds exactly these bytes already, which counts as this write: a store that tries a
    /// request again when its answer was lost finds its own first try there.
    func write(_ bytes: [UInt8], to name: String, ifAbsent: Bool) throws

    /// Starts an object written a piece at a time (a bundle as it is made): nothing appears
    /// under `name` until ``StorageUpload/finish()`` succeeds, and memory does not grow with
    /// the object's size. With `ifAbsent`, finishing fails with `conflict` when the name is taken.
    func startUpload(to name: String, ifAbsent: Bool) throws -> any StorageUpload

    /// Copies an object into a new local file, a piece at a time.
    func download(_ name: String, to file: String) throws

    /// Removes an object; removing one that is not there is not an error.
    func delete(_ name: String) throws

    /// Removes several objects at once: a local folder flushes its entries once, not once per
    /// name (fifty flushes made a sync server's thinning a push's slowest step on a disk).
    func delete(_ names: [String]) throws

    /// Copies an object to another name, replacing what is there (on the server, for an
    /// object store: nothing comes down).
    func copy(_ name: String, to target: String) throws

    /// Gives up transfers that a killed run left unfinished, started more than `age` seconds
    /// ago, for the objects `belongs` accepts (an object store's multipart uploads keep their
    /// parts, and cost, until then); returns the objects they were for.
    func removeAbandonedUploads(olderThan age: TimeInterval, of belongs: (String) -> Bool) throws -> [String]
}

extension SaveStorage {
    public func list(prefix: String) throws -> [StoredObject] { try list().filter { $0.name.hasPrefix(prefix) } }

    public func delete(_ names: [String]) throws {
        for name in names { try delete(name) }
    }

    /// A local folder has none: an unfinished file is a temporary name, never an object.
    public func removeAbandonedUploads(olderThan age: TimeInterval, of belongs: (String) -> Bool) throws -> [String] { [] }

    /// Writes an object through `body` and finishes it; gives it up if anything throws, so
    /// that nothing appears under `name` unless all of it was written.
    public func upload(to name: String, ifAbsent: Bool, _ body: (inout any StorageUpload) throws -> Void) throws {
        var upload = try startUpload(to: name, ifAbsent: ifAbsent)
        do {
            try body(&upload)
            try upload.finish()
        } catch {
            upload.abort()
            throw error
        }
    }

    /// Copies a local file into an object, a piece at a time (memory does not grow with its size).
    public func upload(file: String, to name: String, ifAbsent: Bool) throws {
        let source = open(file, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw SaveError(.notFound, file: file, FileError.reason(errno)) }
        defer { close(source) }
        try upload(to: name, ifAbsent: ifAbsent) { upload in
            do { try FileIO.readChunks(of: source, path: file) { try upload.write($0) } } catch let error as FileError {
                throw SaveError(error.category, file: file, error.description, cause: error)
            }
        }
    }
}

/// An object on its way into a ``SaveStorage``: written in order, then finished (it appears
/// whole under its name) or aborted (nothing appears, and nothing is left behind). Not for
/// use from two threads at once.
public protocol StorageUpload: AnyObject, ByteOutput {
    /// Makes the object appear under its name, whole; an upload that failed throws its error.
    func finish() throws
    /// Gives the upload up. Safe to call after a failure, or more than once.
    func abort()
}

/// One object of a ``SaveStorage``.
public struct StoredObject: Sendable, Equatable {
    /// Relative to the repository: `kape-2026-11-20.tar.gz`.
    public var name: String
    public var size: Int64
    public var modified: Date?

    public init(name: String, size: Int64, modified: Date?) {
        (self.name, self.size, self.modified) = (name, size, modified)
    }
}
