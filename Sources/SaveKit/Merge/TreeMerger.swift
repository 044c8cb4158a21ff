import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Merges two save folders (and their base): every file present on both sides is merged by
/// its kind (``SaveMerger``); a file on one side only is kept, unless the base shows the other
/// side removed it unchanged; a file removed on one side and changed on the other is a conflict.
///
/// The result is written, file by file, into a staging folder, so memory stays flat whatever
/// the number of files; installing it (and keeping what it replaces) is the caller's part.
/// Only regular files are merged: links and special files are left out of the result.
public struct TreeMerger: Sendable {
    public var merger: SaveMerger
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
        let bases = try base.map { try Self.files(under: $0) } ?? []
        let locals = try Self.files(under: local), remotes = try Self.files(under: remote)
        let paths = Set(bases).union(locals).union(remotes).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let trees = Trees(base: base, local: local, remote: remote, inBase: Set(bases), inLocal: Set(locals), inRemote: Set(remotes))
        let directories = DirectoryMaker()
        for start in stride(from: 0, to: paths.count, by: Self.batchSize) {
            let batch = Array(paths[start..<Swift.min(start + Self.batchSize, paths.count)])
            let outcomes = try batch.parallelMap(jobs: jobs) { path in
                let (outcome, output) = try mergeFile(path, in: trees)
                if let output, let staging { try Self.write(output, to: staging + "/" + path, directories: directories) }
                return outcome
            }
            for outcome in outcomes { try each(outcome) }
        }
    }

    /// The three folders and the files each holds.
    struct Trees: Sendable {
        var base: String?, local: String, remote: String
        var inBase: Set<String>, inLocal: Set<String>, inRemote: Set<String>
    }

    /// One file's outcome, and its merged bytes (`nil` when it is not in the result).
    private func mergeFile(_ path: String, in trees: Trees) throws -> (FileOutcome, [UInt8]?) {
        func copy(_ root: String, _ present: Set<String>) throws -> SaveMerger.Copy? {
            guard present.contains(path) else { return nil }
            let name = root + "/" + path
            do { return SaveMerger.Copy(bytes: try FileIO.read(name), path: path, name: name) } catch {
                throw SaveError(error.category, file: name, error.description, cause: error)
            }
        }
        let base = trees.base
        let baseCopy = try base.flatMap { try copy($0, trees.inBase) }
        let localCopy = try copy(trees.local, trees.inLocal), remoteCopy = try copy(trees.remote, trees.inRemote)
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
                outcome.decisions = [MergeDecision(path: .root, policy: "onOneSideOnly", result: nil, why: why, isConflict: false)]
            } else if baseCopy!.bytes == only.bytes {
                outcome.decisions = [MergeDecision(path: .root, policy: "changedOnOneSide", result: nil, why: "removed on the \(other) side only", isConflict: false)]
            } else {
                let reason = "removed on the \(other) side and changed on the \(side.rawValue) side"
                let conflict = MergeConflict(path: .root, base: nil, local: nil, remote: nil, reason: reason)
                if let (resolution, by) = resolve?(path, conflict), case .take(let taken) = resolution {
                    output = taken == side ? only.bytes : taken == .base ? baseCopy!.bytes : nil
                    outcome.decisions = [MergeDecision(path: .root, policy: "answer", result: nil, why: "\(reason); the \(taken.rawValue) side, settled by \(by)", isConflict: false)]
                } else {
                    output = side == .local ? only.bytes : nil
                    outcome.decisions = [MergeDecision(path: .root, policy: "deleteAgainstEdit", result: nil, why: reason, isConflict: true)]
                }
            }
            outcome.changesLocal = side == .local ? output == nil : output != nil
        case (nil, nil):
            outcome.decisions = [MergeDecision(path: .root, policy: "changedOnOneSide", result: nil, why: "removed on both sides", isConflict: false)]
        }
        outcome.isPresent = output != nil
        return (outcome, output)
    }

    /// The regular files under `root`, as relative paths; a missing root is an error.
    static func files(under root: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw SaveError(.notFound, file: root, "no such folder, expected a save folder")
        }
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            let entries: [(bytes: [UInt8], type: UInt8)]
            do { entries = try FileIO.entries(in: directory) } catch { throw SaveError(.notFound, file: directory, error.description, cause: error) }
            for (bytes, type) in entries {
                let name = String(decoding: bytes, as: UTF8.self)
                guard !FileIO.isTemporaryName(name) else { continue }
                guard Array(name.utf8) == bytes else { throw SaveError(.badData, file: directory, "a name that is not UTF-8, expected UTF-8 file names") }
                let path = relative.isEmpty ? name : relative + "/" + name
                var kind = type
                if kind == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    guard lstat(root + "/" + path, &info) == 0 else { continue }
                    kind = info.st_mode & S_IFMT == S_IFDIR ? UInt8(DT_DIR) : info.st_mode & S_IFMT == S_IFREG ? UInt8(DT_REG) : UInt8(DT_UNKNOWN)
                }
                if kind == UInt8(DT_DIR) { pending.append(path) } else if kind == UInt8(DT_REG) { found.append(path) }
            }
        }
        return found
    }

    /// A file of the staging folder: new, in a folder of the caller's own, so written in place
    /// (the whole folder is flushed once before it is put in place).
    private static func write(_ bytes: [UInt8], to path: String, directories: DirectoryMaker) throws {
        let parent = FileIO.parentDirectory(of: path)
        do { try directories.make(parent) } catch {
            throw SaveError(.cannotCreate, file: parent, "cannot be created: \(error.localizedDescription)")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SaveError(.cannotCreate, file: path, FileError.reason(errno)) }
        defer { close(descriptor) }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        guard failure == 0 else { throw SaveError(.io, file: path, FileError.reason(failure)) }
    }
}
