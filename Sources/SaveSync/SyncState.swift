import Foundation
import OrderedCollections
import SaveKit

/// What `savetool sync` remembers of each file between runs: the server and space it syncs
/// with, its slot, and the version it last synced with that version's SHA-256 as written
/// locally. Kept in `.savetool-sync/state.json` in the folder synced (or beside the file).
///
/// The SHA-256 tells whether the file changed since; the version is the base of its next push.
///
/// A push the server took while the app saved the file again leaves a *pending base*: the
/// bytes that were pushed, which the file's newer changes are relative to (the server merged
/// them into `version`). They are kept in `.savetool-sync/bases/<sha256>` until the next sync
/// has merged the file's newer changes with the server's copy, so that nothing pushed is
/// counted twice.
///
/// The bytes of a push are kept the same way (*in flight*) from before it is sent until its
/// answer is remembered: a run stopped in between sends them again first, and the server, which
/// knows a push sent twice, answers with what it made of it.
public struct SyncState: Sendable {
    public struct Entry: Sendable, Equatable {
        public var server: String
        public var space: String
        public var slot: String
        public var version: Int
        public var sha256: String
        public var pendingBase: [UInt8]?
        /// A push whose answer is not known yet; its base is `version` (0: the slot's first push).
        public var inFlight: [UInt8]?
        /// The device it was sent as: sent again, it must be the same push of the same device
        /// (the server tells a push sent again by its device), whatever the device is called by
        /// then (a folder moved to another file system makes a new mark).
        public var inFlightDevice: String?

        public init(
            server: String, space: String, slot: String, version: Int, sha256: String, pendingBase: [UInt8]? = nil, inFlight: [UInt8]? = nil,
            inFlightDevice: String? = nil
        ) {
            (self.server, self.space, self.slot, self.version, self.sha256) = (server, space, slot, version, sha256)
            (self.pendingBase, self.inFlight, self.inFlightDevice) = (pendingBase, inFlight, inFlightDevice)
        }
    }

    /// By the file's path relative to the folder holding the state.
    public var entries: OrderedDictionary<String, Entry> = [:]
    public let file: String
    /// The pending bases this state has named on disk (read, or written by ``save()``): only
    /// those are removed once no file waits on them, never one that another sync of the same
    /// folder, running at the same time, has just written.
    private var knownBases: Set<String> = []

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
                var entry = Entry(
                    server: try read.string("server"), space: try read.string("space"), slot: try read.string("slot"), version: try read.int("version"),
                    sha256: try read.string("sha256"))
                for (key, keep) in [("pendingBase", \Entry.pendingBase), ("inFlight", \Entry.inFlight)] {
                    guard let base = value.dictionaryValue?[key]?.stringValue else { continue }
                    let stored = Self.basePath(folder: folder, sha256: base)
                    guard let bytes = try? FileIO.read(stored), Checksum.sha256(bytes) == base else {
                        throw SaveError(.badData, file: stored, "missing or changed, expected the bytes last pushed; remove \(file) to sync every file again as new")
                    }
                    entry[keyPath: keep] = bytes
                    knownBases.insert(base)
                }
                if entry.inFlight != nil { entry.inFlightDevice = value.dictionaryValue?["inFlightDevice"]?.stringValue }
                entries[path] = entry
            } catch let error as SaveError where error.file != nil {
                throw error
            } catch {
                throw SaveError(.badData, file: file, location: "/files/\(path)", "\(error); remove the file to sync every file again as new")
            }
        }
    }

    /// The state that remembers `file` as `slot` (any slot, when `nil`) of `space` on `server`,
    /// its key there and the slot:
    /// that of the file's own folder, or of a folder above it that a folder sync remembered it
    /// in. Synced alone, a file then merges against the base its folder's sync left, rather
    /// than without one (which would bring back what this device deleted). `nil` when no
    /// state remembers it so. The search stops where the folders stop being this user's own
    /// (another owner, a shared folder such as /tmp, another file system): a state found there
    /// could be anyone's.
    public static func remembering(file: String, slot: String?, space: String, server: String) -> (folder: String, key: String, slot: String)? {
        guard let real = FileIO.realPath(file) else { return nil }
        var folder = FileIO.parentDirectory(of: real)
        var key = String(real.split(separator: "/").last ?? "")
        var device: dev_t?
        func ownedHere(_ path: String, device: dev_t?) -> stat? {
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
                info.st_mode & (S_ISVTX | S_IWOTH) == 0, device == nil || info.st_dev == device
            else { return nil }
            return info
        }
        while true {
            guard let info = ownedHere(folder, device: device) else { return nil }
            device = info.st_dev
            if ownedHere(folder + "/" + folderName, device: device) != nil, let state = try? SyncState(folder: folder),
                let entry = state.entries[key], slot == nil || entry.slot == slot, entry.space == space, entry.server == server
            {
                return (folder, key, entry.slot)
            }
            guard folder != "/" else { return nil }
            key = String(folder.split(separator: "/").last ?? "") + "/" + key
            folder = FileIO.parentDirectory(of: folder)
        }
    }

    /// Makes sure the state can be written, before anything is pushed: a push the server takes
    /// but that this device cannot remember would come back as a conflict with itself.
    public func prepare() throws {
        let folder = FileIO.parentDirectory(of: file)
        if access(folder, F_OK) != 0, mkdir(folder, 0o755) != 0, errno != EEXIST {
            throw SaveError(.cannotCreate, file: folder, "\(FileError.reason(errno)), expected a folder where sync can remember what it synced")
        }
        var info = stat()
        guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw SaveError(.cannotCreate, file: folder, "\(FileIO.describeType(info.st_mode)), expected a folder where sync can remember what it synced")
        }
        for place in [folder, folder + "/bases"] where access(place, F_OK) == 0 {
            guard access(place, W_OK) == 0 else {
                throw SaveError(.cannotCreate, file: place, "\(FileError.reason(errno)), expected a folder where sync can remember what it synced")
            }
        }
    }

    /// Written whole and flushed after each file, so that a run cut short keeps what it did.
    public mutating func save() throws {
        try prepare()
        let folder = FileIO.parentDirectory(of: file)
        var files: OrderedDictionary<String, SaveValue> = [:]
        var bases: Set<String> = []
        for (path, entry) in entries {
            var fields: OrderedDictionary<String, SaveValue> = [
                "server": .string(entry.server), "space": .string(entry.space), "slot": .string(entry.slot),
                "version": .integer(Int64(entry.version)), "sha256": .string(entry.sha256),
            ]
            if entry.inFlight != nil, let device = entry.inFlightDevice { fields["inFlightDevice"] = .string(device) }
            for (key, kept) in [("pendingBase", entry.pendingBase), ("inFlight", entry.inFlight)] {
                guard let base = kept else { continue }
                // On disk before the state that names it.
                let sha256 = Checksum.sha256(base)
                let stored = Self.basePath(folder: FileIO.parentDirectory(of: folder), sha256: sha256)
                let baseFolder = FileIO.parentDirectory(of: stored)
                if access(baseFolder, F_OK) != 0, mkdir(baseFolder, 0o755) != 0, errno != EEXIST {
                    throw SaveError(.cannotCreate, file: baseFolder, FileError.reason(errno))
                }
                if access(stored, F_OK) != 0 {
                    do { try FileIO.writeAtomically(base, to: stored) } catch { throw SaveError(error.category, file: stored, error.description, cause: error) }
                }
                fields[key] = .string(sha256)
                bases.insert(sha256)
            }
            files[path] = .dictionary(fields)
        }
        let bytes = try JSONCodec().encode(.dictionary(["files": .dictionary(files)]))
        do { try FileIO.writeAtomically(bytes, to: file) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
        // Bases no file waits on any more.
        for name in knownBases.subtracting(bases) { unlink(folder + "/bases/" + name) }
        knownBases = bases
    }

    /// This folder's own mark, made once and kept in `.savetool-sync/device-id`: the default
    /// device name is the host name with it (`qa-01-3f2a9c1e`), so that two machines of one
    /// name, or two copies of a save folder on one machine, are never taken for one device.
    /// The server tells a push sent again by its device.
    ///
    /// The mark is kept with the device and inode of the folder that holds it (`3f2a9c1e
    /// 2049:1835012`): a copy of the save folder (`cp -a`, a QA farm cloning a device, a file
    /// system snapshot) copies the file but not the folder's identity, and makes a mark of its
    /// own; else the copy's first push, equal to the original's, would be taken for that push
    /// sent again, and its changes lost. A file system whose inodes change between mounts makes
    /// a new mark too, which costs only a new name in the history: a push in flight is sent
    /// again as the device it was first sent as (``Entry/inFlightDevice``). A mark written
    /// without the identity (by an earlier savetool) is taken as this folder's own.
    public func deviceMark() throws -> String {
        let folder = FileIO.parentDirectory(of: file)
        let path = folder + "/device-id"
        var info = stat()
        let identity = stat(folder, &info) == 0 ? "\(info.st_dev):\(info.st_ino)" : ""
        func write(_ mark: String) throws(SaveError) {
            do { try FileIO.writeAtomically(Array((mark + " " + identity + "\n").utf8), to: path) } catch { throw SaveError(error.category, file: path, error.description, cause: error) }
        }
        if let bytes = try? FileIO.read(path) {
            let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
            if let mark = words.first, mark.count == 8, mark.allSatisfy(\.isHexDigit) {
                if words.count == 1 {
                    try write(mark)
                    return mark
                }
                if words.count == 2, words[1] == identity { return mark }
            }
        }
        var generator = SystemRandomNumberGenerator()
        let random = String(UInt32.random(in: 0...UInt32.max, using: &generator), radix: 16)
        let mark = String(repeating: "0", count: 8 - random.count) + random
        try write(mark)
        return mark
    }

    /// Where a pending base is kept, for the state of `folder` (the folder synced).
    static func basePath(folder: String, sha256: String) -> String {
        folder + "/" + folderName + "/bases/" + sha256
    }
}
