import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Merges two save folders (and their base): every file present on both sides is merged by
/// its kind (``SaveMerger``); a file on one side only is kept, unless the base shows that the
/// other side removed it and this side left it unchanged (then it is removed); a file removed on
/// one side and changed on the other is a conflict. Merged files keep the mode of the local copy
/// (of the remote one for a file only there).
///
/// The result is written, file by file, into a staging folder, so memory stays flat whatever
/// the number of files; installing it (and keeping what it replaces) is the caller's part.
/// Only regular files are merged: links and special files are left out of the result.
public struct TreeMerger: Sendable {
    public var merger: SaveMerger
    /// How errors name a folder's files, by the folder's path: a bundle unpacked to a scratch
    /// folder is named as `<bundle>:` rather than by a path that is gone after the merge.
    public var labels: [String: String] = [:]
    /// Settles a file's conflicts; given the file's path relative to the folders.
    public var resolve: (@Sendable (_ file: String, MergeConflict) -> (resolution: ConflictResolution, by: String)?)?

    public init(merger: SaveMerger, resolve: (@Sendable (_ file: String, MergeConflict) -> (resolution: ConflictResolution, by: String)?)? = nil) {
        (self.merger, self.resolve) = (merger, resolve)
    }

    /// What happened to one file.
    public struct FileOutcome: Sendable {
        public var path: String
        public var kind: String?
        public var decisions: [MergeDecision]
        /// Whether the file is in the result.
        public var isPresent: Bool
        /// Whether the result differs from the local folder's file (or its absence).
        public var changesLocal: Bool
        public var conflicts: [MergeDecision] { decisions.filter(\.isConflict) }

        public init(path: String, kind: String?, decisions: [MergeDecision], isPresent: Bool, changesLocal: Bool) {
            (self.path, self.kind, self.decisions, self.isPresent, self.changesLocal) = (path, kind, decisions, isPresent, changesLocal)
        }
    }

    /// Files merged at once, on ``jobs`` threads; their outcomes are reported in order, then dropped.
    static let batchSize = 256

    /// Threads merging files; 1 when a conflict may be asked on a terminal.
    public var jobs = ProcessInfo.processInfo.activeProcessorCount

    /// Merges `local` and `remote` (with `base`, when given) into `staging`, an empty folder,
    /// calling `each` with every file's outcome in path order.
    public func merge(base: String?, local: String, remote: String, into staging: String?, each: (FileOutcome) throws -> Void) throws {
        for root in [base, local, remote].compactMap({ $0 }) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw SaveError(.notFound, file: root, "no such folder, expected a save folder")
            }
        }
        let trees = Trees(base: base, local: local, remote: remote)
        let directories = DirectoryMaker()
        var batch: [(path: String, presence: Presence)] = []
        func mergeBatch() throws {
            let outcomes = try batch.parallelMap(jobs: jobs) { path, presence in
                let (outcome, output) = try mergeFile(path, presence: presence, in: trees)
                if let output, let staging, writesUnchanged || outcome.changesLocal {
                    let source = (presence.local ? trees.local : trees.remote) + "/" + path
                    try Self.write(output, to: staging + "/" + path, mode: Self.mode(of: source), directories: directories)
                }
                return outcome
            }
            batch.removeAll(keepingCapacity: true)
            for outcome in outcomes { try each(outcome) }
        }
        try Self.walk("", in: trees) { path, presence in
            batch.append((path, presence))
            if batch.count == Self.batchSize { try mergeBatch() }
        }
        try mergeBatch()
    }

    /// Whether the staging folder gets every file of the result, or only those that differ from
    /// the local copy (for a merge in place, which then replaces just those).
    public var writesUnchanged = true

    /// The three folders.
    struct Trees: Sendable {
        var base: String?
        var local: String
        var remote: String
    }

    /// Which of the three folders hold a file.
    struct Presence: Sendable {
        var base = false, local = false, remote = false
    }

    /// The regular files of the three folders together, one directory at a time, names in byte
    /// order: memory holds one directory's listings (and their parents'), never every path.
    static func walk(_ relative: String, in trees: Trees, visit: (String, Presence) throws -> Void) throws {
        var names: [String: (file: Presence, folder: Presence)] = [:]
        for (root, side) in [(trees.base, 0), (trees.local, 1), (trees.remote, 2)] {
            guard let root else { continue }
            let directory = relative.isEmpty ? root : root + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            let entries: [(bytes: [UInt8], type: UInt8)]
            do { entries = try FileIO.entries(in: directory) } catch { throw SaveError(.notFound, file: directory, error.description, cause: error) }
            for (bytes, type) in entries {
                let name = String(decoding: bytes, as: UTF8.self)
                guard !FileIO.isTemporaryName(name) else { continue }
                guard Array(name.utf8) == bytes else {
                    let shown = ExactFileName.printable(ExactFileName.string(bytes))
                    throw SaveError(.badData, file: directory + "/" + shown, "a name that is not UTF-8 (a byte that is not UTF-8 shown as \\x and two hex digits), expected UTF-8 file names; rename it to merge the folders")
                }
                var kind = type
                if kind == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    guard lstat(directory + "/" + name, &info) == 0 else { continue }
                    kind = info.st_mode & S_IFMT == S_IFDIR ? UInt8(DT_DIR) : info.st_mode & S_IFMT == S_IFREG ? UInt8(DT_REG) : UInt8(DT_UNKNOWN)
                }
                guard kind == UInt8(DT_DIR) || kind == UInt8(DT_REG) else { continue }  // links and special files are not merged
                var found = names[name] ?? (Presence(), Presence())
                switch (side, kind == UInt8(DT_DIR)) {
                case (0, false): found.file.base = true
                case (1, false): found.file.local = true
                case (2, false): found.file.remote = true
                case (0, true): found.folder.base = true
                case (1, true): found.folder.local = true
                default: found.folder.remote = true
                }
                names[name] = found
            }
        }
        for name in names.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let path = relative.isEmpty ? name : relative + "/" + name
            let (file, folder) = names[name]!
            let isFile = file.base || file.local || file.remote, isFolder = folder.base || folder.local || folder.remote
            if isFile && isFolder {
                throw SaveError(.badData, file: path, "a file in one copy and a folder in another, expected the same on every side")
            }
            if isFile { try visit(path, file) } else { try walk(path, in: trees, visit: visit) }
        }
    }

    /// One file's outcome, and its merged bytes (`nil` when it is not in the result).
    private func mergeFile(_ path: String, presence: Presence, in trees: Trees) throws -> (FileOutcome, [UInt8]?) {
        func copy(_ root: String, _ present: Bool) throws -> SaveMerger.Copy? {
            guard present else { return nil }
            let name = labels[root].map { $0 + ":" + path } ?? root + "/" + path
            do { return SaveMerger.Copy(bytes: try FileIO.read(root + "/" + path), path: path, name: name) } catch {
                throw SaveError(error.category, file: name, error.description, cause: error)
            }
        }
        let base = trees.base
        let baseCopy = try base.flatMap { try copy($0, presence.base) }
        let localCopy = try copy(trees.local, presence.local), remoteCopy = try copy(trees.remote, presence.remote)
        var outcome = FileOutcome(path: path, kind: nil, decisions: [], isPresent: false, changesLocal: false)
        var output: [UInt8]?
        switch (localCopy, remoteCopy) {
        case (let l?, let r?):
            var fileMerger = merger
            if let resolve { fileMerger.resolve = { resolve(path, $0) } }
            let result = try fileMerger.merge(base: baseCopy, local: l, remote: r)
            (outcome.kind, outcome.decisions, outcome.changesLocal) = (result.kind, result.decisions, result.changesLocal)
            output = result.output
        case (let only?, nil), (nil, let only?):
            let side: MergeSide = localCopy != nil ? .local : .remote
            let other = side == .local ? "remote" : "local"
            if base == nil || baseCopy == nil {
                output = only.bytes
                let why = base == nil ? "on the \(side.rawValue) side only; without a base, an addition and a deletion look alike, so it is kept" : "added on the \(side.rawValue) side"
                // With a base, a file it lacks was added on one side: a change on one side only.
                outcome.decisions = [MergeDecision(path: .root, policy: base == nil ? "onOneSideOnly" : "changedOnOneSide", result: nil, why: why, isConflict: false)]
            } else if baseCopy!.bytes == only.bytes {
                outcome.decisions = [MergeDecision(path: .root, policy: "changedOnOneSide", result: nil, why: "removed on the \(other) side only", isConflict: false)]
            } else {
                let reason = "removed on the \(other) side and changed on the \(side.rawValue) side"
                let conflict = MergeConflict(path: .root, base: nil, local: nil, remote: nil, reason: reason)
                if let (resolution, by) = resolve?(path, conflict), case .take(let taken) = resolution, taken != .base || baseCopy != nil {
                    output = taken == side ? only.bytes : taken == .base ? baseCopy!.bytes : nil
                    outcome.decisions = [MergeDecision(path: .root, policy: "answer", result: nil, why: "\(reason); the \(taken.rawValue) side, settled by \(by)", isConflict: false)]
                } else {
                    output = side == .local ? only.bytes : nil
                    outcome.decisions = [MergeDecision(path: .root, policy: "deleteAgainstEdit", result: nil, why: reason, isConflict: true)]
                }
            }
            outcome.changesLocal = side == .local ? output == nil : output != nil
        case (nil, nil):
            outcome.decisions = [MergeDecision(path: .root, policy: "sameOnBothSides", result: nil, why: "removed on both sides", isConflict: false)]
        }
        outcome.isPresent = output != nil
        return (outcome, output)
    }

    /// A file of the staging folder: new, in a folder of the caller's own, so written in place
    /// (the whole folder is flushed once before it is put in place).
    /// A file's permission bits, 0644 when it cannot be read.
    static func mode(of path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o644
    }

    private static func write(_ bytes: [UInt8], to path: String, mode: mode_t, directories: DirectoryMaker) throws {
        let parent = FileIO.parentDirectory(of: path)
        do { try directories.make(parent) } catch {
            throw SaveError(.cannotCreate, file: parent, "cannot be created: \(FileError.reason(of: error))")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SaveError(.cannotCreate, file: path, FileError.reason(errno)) }
        defer { close(descriptor) }
        guard fchmod(descriptor, mode) == 0 else { throw SaveError(.cannotCreate, file: path, FileError.reason(errno)) }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        guard failure == 0 else { throw SaveError(.io, file: path, FileError.reason(failure)) }
    }
}
