import Foundation
import SaveKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `savetool merge` from start to end: two copies of a save (files, folders or bundles) and
/// their base, merged by ``TreeMerger`` and ``SaveMerger``, and the result written only when no
/// conflict is left open.
///
/// What the result replaces is kept first (``OriginalsKeeper``): a merge never destroys the
/// losing copy. A folder's result is staged beside its destination and put in place at the end;
/// a file's is written atomically.
public struct MergeJob: Sendable {
    public var tree: TreeMerger
    public var createdBy: String
    /// Keep what the result replaces in a bundle beside it (off for a git merge driver, whose
    /// inputs git keeps).
    public var keepsOriginals = true
    public var dryRun = false
    /// The path kinds' `files` patterns see for a single file (git's `%P`); else the file's own path.
    public var recognitionPath: String?
    /// Run by git as a merge driver: three files, and an empty base means the file has none
    /// (added on both branches).
    public var isGitDriver = false

    public init(tree: TreeMerger, createdBy: String) { (self.tree, self.createdBy) = (tree, createdBy) }

    public struct Outcome: Sendable {
        public var conflicts = 0
        public var files = 0
        /// Files whose result differs from the local copy.
        public var changed = 0
        /// Whether the result was written to the output.
        public var wrote = false
        /// The bundle holding what the result replaced, when anything was.
        public var keptOriginals: String?
    }

    /// Refuses places that would write over or into what a merge reads: a `report` that is one
    /// of the copies or the merged output, or lies inside a copy given as a folder; a merged
    /// `output` folder inside a copy's folder (the next merge would take it for new files).
    /// A report on standard output (`-`), a device or a FIFO is written as a stream and passes.
    public static func checkPlaces(base: String?, local: String, remote: String, output: String?, report: String?) throws {
        let copies = [("the local copy", local), ("the remote copy", remote), ("the base", base)].compactMap { role, path in path.map { (role, $0) } }
        // An output that exists is refused by the merge itself, unless it is the local copy.
        if let output, !samePlace(output, local), !FileManager.default.fileExists(atPath: output) {
            for (role, copy) in copies where isFolder(copy) && FileIO.isInside(output, copy) {
                throw SaveError(.usage, file: output, "inside \(role) \(copy), expected a place for the merged copy outside the copies")
            }
        }
        guard let report, report != "-" else { return }
        var info = stat()
        if stat(report, &info) == 0, info.st_mode & S_IFMT != S_IFREG, info.st_mode & S_IFMT != S_IFDIR { return }
        for (role, path) in copies + (output.map { [("the merged copy", $0)] } ?? []) {
            let same = samePlace(report, path)
            if same || (isFolder(path) && FileIO.isInside(report, path)) {
                throw SaveError(.usage, file: report, "\(same ? "is" : "inside") \(role) \(path), expected a path for the report that none of the copies holds")
            }
        }
    }

    /// Merges and, unless ``dryRun`` or a conflict is left, writes `output`; `each` sees every
    /// file's outcome as it is decided.
    public func run(base: String?, local: String, remote: String, output: String, each: (TreeMerger.FileOutcome) throws -> Void) throws -> Outcome {
        var outcome = Outcome()
        func count(_ file: TreeMerger.FileOutcome) throws {
            outcome.files += 1
            outcome.conflicts += file.conflicts.count
            if file.changesLocal { outcome.changed += 1 }
            try each(file)
        }
        let inputs = [base, local, remote].compactMap { $0 }
        for input in inputs where !FileManager.default.fileExists(atPath: input) {
            throw SaveError(.notFound, file: input, "no such file or folder, expected a copy of the save")
        }
        let singleFile = !Self.isFolder(local) && !BackupRepository.isBundle(local)
        if isGitDriver, let folder = inputs.first(where: { Self.isFolder($0) || BackupRepository.isBundle($0) }) {
            throw SaveError(.usage, file: folder, "a folder or bundle, expected the three files git gives a merge driver")
        }
        // A new file's place is checked before merging, so that no decision is printed for a
        // result that has nowhere to go.
        if singleFile && !dryRun && !Self.samePlace(output, local) {
            if FileManager.default.fileExists(atPath: output) {
                throw SaveError(.cannotCreate, file: output, "exists, expected a new file for the merged copy, or the local copy itself")
            }
            if !Self.isFolder(FileIO.parentDirectory(of: Self.absolute(output))) {
                let folder = FileIO.parentDirectory(of: output)
                let found = FileManager.default.fileExists(atPath: folder) ? "not a folder" : "no such folder"
                throw SaveError(.cannotCreate, file: folder, "\(found), expected the existing folder the merged copy goes in")
            }
        }
        if singleFile {
            let file = try mergeFile(base: base, local: local, remote: remote, output: output)
            try count(file.outcome)
            guard !dryRun, outcome.conflicts == 0, file.writes else { return outcome }
            outcome.keptOriginals = try write(file.bytes, to: output, modeOf: local)
            outcome.wrote = true
            return outcome
        }
        var extracted: [String] = []
        defer { for folder in extracted { FileIO.removeTree(folder) } }
        func folder(_ input: String) throws -> String {
            if Self.isFolder(input) { return input }
            guard BackupRepository.isBundle(input) else {
                throw SaveError(.usage, file: input, "a file, expected a folder or a bundle like the local copy \(local)")
            }
            let scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/merge")
            extracted.append(scratch)
            var importer = BundleImporter(createdBy: createdBy)
            importer.backupDirectory = scratch
            try importer.restore(input, into: scratch + "/files")
            tree.labels[scratch + "/files"] = input
            return scratch + "/files"
        }
        var tree = self.tree
        let (baseFolder, localFolder, remoteFolder) = (try base.map(folder), try folder(local), try folder(remote))
        let toBundle = Self.looksLikeBundle(output)
        let inPlace = !toBundle && Self.samePlace(output, local)
        // The local bundle itself: written again whole, the one it replaces kept first.
        let bundleInPlace = toBundle && Self.samePlace(output, local)
        if !dryRun, !inPlace, !bundleInPlace, FileManager.default.fileExists(atPath: output) {
            throw SaveError(.cannotCreate, file: output, "exists, expected a new folder (or bundle) for the merged copy, or the local folder itself")
        }
        let staging = dryRun ? nil : try FileIO.makeTemporaryDirectory(beside: toBundle ? output : inPlace ? local : output)
        defer { if let staging { FileIO.removeTree(staging) } }
        // In place, only what changes is staged and remembered; a new output gets every file.
        var changed: [(path: String, present: Bool)] = []
        tree.writesUnchanged = !inPlace
        var changesLocal = false
        // Each merged file holds what its copies held: a bundle of them is as private as they.
        var copies: Set<String> = []
        try tree.merge(base: baseFolder, local: localFolder, remote: remoteFolder, into: staging) { file in
            if toBundle {
                // The file in each copy, and the folders on its way there.
                for root in [localFolder, remoteFolder] + (baseFolder.map { [$0] } ?? []) {
                    var path = file.path
                    while !path.isEmpty && path != "." && copies.insert(root + "/" + path).inserted {
                        path = path.contains("/") ? FileIO.parentDirectory(of: path) : ""
                    }
                }
            }
            if inPlace && file.changesLocal { changed.append((file.path, file.isPresent)) }
            changesLocal = changesLocal || file.changesLocal
            try count(file)
        }
        guard let staging, outcome.conflicts == 0 else { return outcome }
        if toBundle {
            var exporter = BundleExporter(createdAt: Date(), createdBy: createdBy)
            exporter.label = "merged"
            // The staging folder is private by making; the copies merged say who may read.
            exporter.readersLimitedBy = [local, remote] + (base.map { [$0] } ?? []) + copies.sorted()
            exporter.sourceName = Self.name(of: local)
            // In the format its name says (a .tar.zst stays zstd, a .zip a zip).
            exporter.format = ArchiveFormat(path: output) ?? .tar(.gzip)
            if bundleInPlace {
                guard changesLocal else { return outcome }
                outcome.keptOriginals = try keepOriginal(output)
                // The bundle it replaces was private: so is the merged one, from its first moment.
                var info = stat()
                if stat(output, &info) == 0 { exporter.mode = info.st_mode & 0o7777 }
                exporter.destinationLinks = .follow  // a link to the bundle stays a link
            }
            _ = try exporter.export(directory: staging, to: output, replacing: bundleInPlace)
        } else if inPlace {
            guard !changed.isEmpty else { return outcome }
            // The walk merges files and folders only: a link, FIFO or device where a merged file
            // goes is something the merge never read, and a rename would drop it unseen; a link
            // where one of its folders goes would lead the file out of the local copy.
            for (path, _) in changed {
                var place = local
                let names = path.split(separator: "/")
                for (index, name) in names.enumerated() {
                    place += "/" + name
                    var found = stat()
                    guard lstat(place, &found) == 0 else { break }  // missing: made by the merge
                    let expected: mode_t = index == names.count - 1 ? S_IFREG : S_IFDIR
                    guard found.st_mode & S_IFMT != expected else { continue }
                    throw SaveError(
                        .cannotCreate, file: place,
                        "\(FileIO.describeType(found.st_mode)) where the merge writes \(FileIO.describeType(expected)), expected \(FileIO.describeType(expected)) or nothing; nothing was changed")
                }
            }
            if keepsOriginals {
                let existing = changed.map(\.path).filter { FileManager.default.fileExists(atPath: local + "/" + $0) }
                outcome.keptOriginals = try OriginalsKeeper(createdBy: createdBy, purpose: "merge")
                    .keep(existing, under: local, in: FileIO.parentDirectory(of: Self.absolute(local)), name: Self.name(of: local))
            }
            try Self.flush(staging)
            // File by file: a failure part way leaves some files merged, and says where the
            // copies they replaced are kept.
            let kept = outcome.keptOriginals.map { "; what it replaced is kept in \($0)" } ?? ""
            for (path, present) in changed {
                let target = local + "/" + path
                if present {
                    do { try FileManager.default.createDirectory(atPath: FileIO.parentDirectory(of: target), withIntermediateDirectories: true) } catch {
                        throw SaveError(.cannotCreate, file: FileIO.parentDirectory(of: target), "cannot be created: \(FileError.reason(of: error))\(kept)")
                    }
                    // The merged file keeps the mode of the one it replaces (a private save stays private).
                    var replaced = stat()
                    if lstat(target, &replaced) == 0 { chmod(staging + "/" + path, replaced.st_mode & 0o7777) }
                    guard rename(staging + "/" + path, target) == 0 else { throw SaveError(.io, file: target, FileError.reason(errno) + kept) }
                } else if unlink(target) != 0 && errno != ENOENT {
                    throw SaveError(.io, file: target, "cannot be removed: \(FileError.reason(errno))\(kept)")
                }
            }
            try Self.flush(local)
        } else {
            // The new folder is as open as the local one: the staging folder is private by making.
            var localFolderInfo = stat()
            if stat(localFolder, &localFolderInfo) == 0, chmod(staging, localFolderInfo.st_mode & 0o7777) != 0 {
                throw SaveError(.cannotCreate, file: output, "cannot be given the local folder's permissions: \(FileError.reason(errno))")
            }
            try Self.flush(staging)
            guard rename(staging, output) == 0 else { throw SaveError(.cannotCreate, file: output, FileError.reason(errno)) }
            FileIO.syncDirectory(FileIO.parentDirectory(of: Self.absolute(output)))
        }
        outcome.wrote = true
        return outcome
    }

    /// One file's merge: its outcome, the merged bytes, and whether they need writing.
    private func mergeFile(base: String?, local: String, remote: String, output: String) throws -> (outcome: TreeMerger.FileOutcome, bytes: [UInt8], writes: Bool) {
        for input in [base, remote].compactMap({ $0 }) where Self.isFolder(input) {
            throw SaveError(.usage, file: input, "a folder, expected a file like the local copy \(local)")
        }
        // Under git the copies are temporary files of git's own: named by the path in the
        // repository and the side, where a message names them.
        func copy(_ path: String, side: String) throws -> SaveMerger.Copy {
            let shown = isGitDriver ? recognitionPath.map { "\($0) (\(side))" } ?? path : path
            do { return SaveMerger.Copy(bytes: try FileIO.read(path), path: recognitionPath ?? path, name: shown) } catch {
                throw SaveError(error.category, file: shown, error.description, cause: error)
            }
        }
        var merger = tree.merger
        let name = recognitionPath ?? Self.name(of: local)
        if let resolve = tree.resolve { merger.resolve = { resolve(name, $0) } }
        // git gives an empty base when the file was added on both branches: no base, then.
        let baseCopy = try base.map { try copy($0, side: "the common ancestor") }.flatMap { isGitDriver && $0.bytes.isEmpty ? nil : $0 }
        let result = try merger.merge(base: baseCopy, local: try copy(local, side: "ours"), remote: try copy(remote, side: "theirs"))
        let outcome = TreeMerger.FileOutcome(path: name, kind: result.kind, decisions: result.decisions, isPresent: true, changesLocal: result.changesLocal)
        return (outcome, result.output, result.changesLocal || !FileManager.default.fileExists(atPath: output) || !Self.samePlace(output, local))
    }

    /// Writes a merged file over `output`, keeping what was there first; returns where it is kept.
    private func write(_ bytes: [UInt8], to output: String, modeOf local: String) throws -> String? {
        let kept = try FileManager.default.fileExists(atPath: output) ? keepOriginal(output) : nil
        // A new output gets the local copy's permissions: a private save stays private.
        var localInfo = stat()
        let mode = stat(local, &localInfo) == 0 ? localInfo.st_mode & 0o7777 : nil
        do { try FileIO.writeAtomically(bytes, to: output, mode: FileManager.default.fileExists(atPath: output) ? nil : mode, links: .follow) } catch {
            throw SaveError(error.category, file: output, error.description, cause: error)
        }
        return kept
    }

    /// Keeps the file about to be replaced in a bundle beside it (unless ``keepsOriginals`` is
    /// off, as for git, which keeps its own); returns the bundle's path.
    private func keepOriginal(_ output: String) throws -> String? {
        guard keepsOriginals else { return nil }
        let folder = FileIO.parentDirectory(of: Self.absolute(output))
        return try OriginalsKeeper(createdBy: createdBy, purpose: "merge").keep([Self.name(of: output)], under: folder, in: folder, name: Self.name(of: output))
    }

    // MARK: - Paths

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    static func looksLikeBundle(_ path: String) -> Bool {
        [".tar.gz", ".tgz", ".tar.zst", ".tar.xz", ".tar", ".zip"].contains { path.hasSuffix($0) }
    }

    static func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

    static func name(of path: String) -> String { URL(fileURLWithPath: absolute(path)).lastPathComponent }

    /// Whether two paths name the same file or folder (through links and `..`).
    static func samePlace(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return absolute(a) == absolute(b) }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Everything written under `folder` on disk, before the rename that makes it count.
    static func flush(_ folder: String) throws {
        do { try FileIO.syncFileSystem(containing: folder) } catch { throw SaveError(error.category, file: folder, error.description, cause: error) }
    }
}
