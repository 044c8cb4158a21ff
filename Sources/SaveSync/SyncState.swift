import Foundation
import OrderedCollections
import SaveKit

/// What `savetool sync` remembers of each file between runs: the server and space it syncs
/// with, its slot, and the version it last synced with that version's SHA-256 as written
/// locally. Kept in `.savetool-sync/state.json` in the folder synced (or beside the file).
///
/// The SHA-256 tells whether the file changed since; the version is the base of its next push.
public struct SyncState: Sendable {
    public struct Entry: Sendable, Equatable {
        public var server: String
        public var space: String
        public var slot: String
        public var version: Int
        public var sha256: String

        public init(server: String, space: String, slot: String, version: Int, sha256: String) {
            (self.server, self.space, self.slot, self.version, self.sha256) = (server, space, slot, version, sha256)
        }
    }

    /// By the file's path relative to the folder holding the state.
    public var entries: OrderedDictionary<String, Entry> = [:]
    public let file: String

    public static let folderName = ".savetool-sync"

    /// The state of `folder`; none yet is an empty state.
    public init(folder: String) throws {
        file = folder + "/" + Self.folderName + "/state.json"
        guard access(file, F_OK) == 0 else { return }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
        let document: SaveValue
        do { document = try JSONCodec().decode(bytes) } catch {
            throw SaveError(.badData, file: file, "\(error); remove it to sync every file again as new", cause: error)
        }
        for (path, value) in document.dictionaryValue?["files"]?.dictionaryValue ?? [:] {
            let read = FieldReader(value: value, what: "a synced file")
            do {
                entries[path] = Entry(
                    server: try read.string("server"), space: try read.string("space"), slot: try read.string("slot"), version: try read.int("version"),
                    sha256: try read.string("sha256"))
            } catch {
                throw SaveError(.badData, file: file, location: "/files/\(path)", "\(error.message); remove the file to sync every file again as new")
            }
        }
    }

    /// Written whole and flushed after each file, so that a run cut short keeps what it did.
    public func save() throws {
        let folder = FileIO.parentDirectory(of: file)
        if access(folder, F_OK) != 0, mkdir(folder, 0o755) != 0, errno != EEXIST {
            throw SaveError(.cannotCreate, file: folder, FileError.reason(errno))
        }
        var files: OrderedDictionary<String, SaveValue> = [:]
        for (path, entry) in entries {
            files[path] = .dictionary([
                "server": .string(entry.server), "space": .string(entry.space), "slot": .string(entry.slot),
                "version": .integer(Int64(entry.version)), "sha256": .string(entry.sha256),
            ])
        }
        let bytes = try JSONCodec().encode(.dictionary(["files": .dictionary(files)]))
        do { try FileIO.writeAtomically(bytes, to: file) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
    }
}
