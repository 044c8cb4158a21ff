import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Migrates every save under some folders and files: what `savetool migrate` does, for any
/// program that moves years of snapshots to the current schema (a CI job, a server's store).
///
/// Each file goes through a ``SavePipeline``; one bad file never stops the batch, it is counted
/// as failed and left untouched. Files are found one folder at a time and handled in batches
/// that are counted and dropped, so memory stays flat whatever the count.
///
/// ```swift
/// let pipeline = try SavePipeline(kinds: kinds, registry: .builtIn)
/// let batch = BatchMigration(paths: ["snapshots"], pipeline: pipeline, destination: .folder("migrated"))
/// try batch.checkPlaces()
/// let summary = try batch.run { outcome in
///     if let problem = outcome.result.problem { print("\(outcome.file.path): \(problem)") }
/// }
/// print("\(summary.migrated) migrated, \(summary.failed) failed")
/// ```
public struct BatchMigration: Sendable {
    /// Where the migrated files go.
    public enum Destination: Sendable {
        /// Nowhere: each file is only looked at (a dry run, a check in CI).
        case nowhere
        /// Over the files themselves, each replaced durably once it is migrated. The originals
        /// of every file that will change are given to `keepingOriginals` first, in one call
        /// per folder or file given (`nil`: not kept).
        case inPlace(keepingOriginals: (any OriginalsKeeping)?)
        /// A copy of each migrated file at its relative path under this folder, made as
        /// `cp -r` makes folders; the originals stay as they are. Flushed to disk once, at the end.
        case folder(String)
    }

    /// Something besides the files' outcomes, for the person running the batch.
    public enum Notice: Sendable, Equatable {
        /// Said and gone on: a path named twice, migrated once.
        case warning(String)
        /// The originals of `files` files under `argument` were kept; `place` says where.
        case originalsKept(files: Int, argument: String, place: String)
    }

    /// What one file came to. The migrated bytes are dropped once written (``FileResult/output``
    /// is `nil`), so a batch holds no file's content longer than it takes to write it.
    public struct Outcome: Sendable {
        public var file: FileWalk.File
        public var result: FileResult
    }

    /// The counts the last line of `savetool migrate` gives.
    public struct Summary: Sendable, Equatable {
        /// Migrated (or, in a dry run, that would be migrated).
        public var migrated = 0
        public var unchanged = 0
        /// Recognised by no kind: not saves of any kind known, left alone.
        public var skipped = 0
        /// Saves with a problem (ambiguous, from the future, invalid, unreadable), left untouched.
        public var failed = 0

        public init() {}

        mutating func count(_ status: FileResult.Status) {
            switch status {
            case .migrated: migrated += 1
            case .unchanged: unchanged += 1
            case .unrecognized: skipped += 1
            case .ambiguous, .future, .invalid, .failed: failed += 1
            }
        }
    }

    public let pipeline: SavePipeline
    /// The folders and files to migrate, each once (see ``init(paths:pipeline:destination:jobs:notify:)``).
    public let paths: [String]
    public let destination: Destination
    /// Write nothing, and report what would be done.
    public var dryRun = false
    /// Files migrated at once.
    public var jobs: Int
    /// Hand each outcome on as soon as the file and those before it are done, rather than once
    /// its batch (up to 1,000 files) is: for a report that a killed run must leave complete but
    /// for the files in hand. It holds the jobs to the walk's order, which on fast storage costs
    /// about a third of the batch's time.
    public var handsOutcomesOnAtOnce = false
    /// Files the walk leaves out, by name and identity: a report being written among the files.
    public var leavesOut: [(name: String, identity: FileWalk.Identity)] = []
    public var notify: @Sendable (Notice) -> Void
    /// Called by the job that did it after each file, in any order: for a progress bar, which
    /// should move per file whenever outcomes are handed on.
    public var fileDone: @Sendable () -> Void = {}
    private let directories = DirectoryMaker()

    /// A batch over `paths`, each file once: a path named twice, or (except into a folder,
    /// where each path has its own place) a file or folder inside a folder also named, is
    /// migrated, counted and kept once, with a ``Notice/warning(_:)``.
    public init(
        paths: [String], pipeline: SavePipeline, destination: Destination,
        jobs: Int = ProcessInfo.processInfo.activeProcessorCount, notify: @escaping @Sendable (Notice) -> Void = { _ in }
    ) {
        var pipeline = pipeline
        if case .inPlace = destination { pipeline.keepsUnchangedText = true }
        self.pipeline = pipeline
        self.destination = destination
        self.jobs = max(1, jobs)
        self.notify = notify
        self.paths = Self.distinct(paths, intoFolder: destination.folder != nil, notify: notify)
    }

    var writes: Bool {
        if case .nowhere = destination { return false }
        return !dryRun
    }

    /// How many files the batch will look at (for a progress bar's total): a walk of its own.
    public func fileCount() throws -> Int {
        var walk = FileWalk(paths: paths)
        walk.leavesOut = leavesOut
        return try walk.count()
    }

    /// Migrates every file, and hands each one's outcome to `each` in the walk's order, one at
    /// a time, once its batch is done, or with ``handsOutcomesOnAtOnce`` as soon as it and the
    /// files before it are done (a run that is killed has then done at most one file per job
    /// that `each` has not seen). An error thrown by `each` stops the run: no file is started
    /// after it (no batch, without ``handsOutcomesOnAtOnce``), and it is thrown from here once
    /// the files in hand are done.
    ///
    /// Throws before any file is read when the places are wrong (``checkPlaces()``), before any
    /// file is replaced when the originals cannot be kept, and after the files when a folder
    /// destination cannot be flushed to disk.
    public func run(each: @escaping @Sendable (Outcome) throws -> Void = { _ in }) throws -> Summary {
        // Cheap, and what keeps copies from landing over their originals: never skipped.
        try checkPlaces()
        var files = FileWalk(paths: paths)
        files.leavesOut = leavesOut
        var keeping: [String: String]?
        if writes, case .inPlace(let keeper?) = destination { keeping = try keepOriginals(files, keeper: keeper) }
        let kept = keeping
        if writes, case .inPlace = destination { files.removesAbandonedTemporaryFiles = true }
        var summary = Summary()
        let out = destination.folder
        // Two paths may lead to one place in the folder (two folders holding the same names):
        // the second is a failure, never a silent overwrite of the first one's copy. This alone
        // grows with the count (a path per file), and only when several paths share the folder.
        var placed: [String: String]? = out != nil && files.paths.count > 1 ? [:] : nil
        let named = files.paths, roots = files.paths.indices.map { files.root(of: $0) }
        // The folder, if made, is as private as the most private folder migrated into it.
        let outMode = roots.reduce(mode_t(0o777)) { mode, root in
            var info = stat()
            return stat(root, &info) == 0 ? mode & info.st_mode & 0o777 : mode
        } | 0o700
        let inTurn = handsOutcomesOnAtOnce ? InTurn<Outcome>(jobs: jobs, consumer: each) : nil
        var done = 0
        try Self.inBatches(files, growing: true) { batch in
            var batch = batch
            if let out, placed != nil {
                var again: [Int] = []
                for index in batch.indices where batch[index].problem == nil {
                    let file = batch[index]
                    if let first = placed![file.relative] {
                        // The same file reached twice (a folder and a file in it) is migrated once.
                        if let real = FileIO.realPath(first), real == FileIO.realPath(file.path) {
                            notify(.warning("\(file.path): named already as \(first); migrated once"))
                            again.append(index)
                            continue
                        }
                        batch[index].problem = "its copy would go to \(out)/\(file.relative), where the copy of \(first) goes, expected inputs whose paths under \(out) differ"
                    } else {
                        placed![file.relative] = file.path
                    }
                }
                for index in again.reversed() { batch.remove(at: index) }
            }
            let first = done
            done += batch.count
            let files = batch
            let outcomes = (try? Array(files.indices).parallelMap(jobs: jobs) { index -> Outcome? in
                let file = files[index]
                if let inTurn, !inTurn.waitForTurn(first + index) {
                    inTurn.add(nil, at: first + index)
                    return nil
                }
                let links = Self.links(for: file, named: named, roots: roots)
                let outcome = migrate(file, kept: kept, links: links, sourceRoot: roots[file.argument], outMode: outMode)
                fileDone()
                inTurn?.add(outcome, at: first + index)
                return outcome
            }) ?? []  // the transform cannot throw
            if inTurn == nil {
                for outcome in outcomes { if let outcome { try each(outcome) } }
            }
            try inTurn?.check()
            for outcome in outcomes { if let outcome { summary.count(outcome.result.status) } }
        }
        // Everything written into the folder is on disk before the summary says it was written.
        // (Nothing to flush when nothing was written and the folder was never made.)
        if writes, let out, FileManager.default.fileExists(atPath: out) { try FileIO.syncFileSystem(containing: out) }
        return summary
    }

    /// A file named itself is written through its link, as `set` writes; one found in a folder
    /// only through a link that stays inside the folder.
    private static func links(for file: FileWalk.File, named: [String], roots: [String]) -> LinkPolicy {
        named[file.argument] == file.path ? .follow : .followWithin(roots[file.argument])
    }

    /// Files are found one directory at a time and handled in batches whose results are
    /// counted, then dropped: memory stays flat whatever the count. `growing` starts with small
    /// batches and doubles them: the first outcomes come soon, even when each file takes a
    /// while (a plugin codec), and a long run still waits between batches rarely.
    private static func inBatches(_ files: FileWalk, growing: Bool = false, _ body: ([FileWalk.File]) throws -> Void) throws {
        var batchSize = growing ? 16 : 1000
        var batch: [FileWalk.File] = []
        try files.forEach { file in
            batch.append(file)
            if batch.count == batchSize {
                try body(batch)
                batch.removeAll(keepingCapacity: true)
                batchSize = min(batchSize * 2, 1000)
            }
            return true
        }
        if !batch.isEmpty { try body(batch) }
    }

    /// The first pass of a migration in place: finds the files that will change and has them
    /// kept. Returns the checksum each had, by path: a file that changes between this pass and
    /// its rewrite is left alone.
    private func keepOriginals(_ files: FileWalk, keeper: any OriginalsKeeping) throws -> [String: String] {
        var changing: [Int: [(relative: String, path: String, sha256: String, identity: FileWalk.Identity?, isLink: Bool)]] = [:]
        let named = files.paths, roots = files.paths.indices.map { files.root(of: $0) }
        try Self.inBatches(files) { batch in
            let results = (try? batch.parallelMap(jobs: jobs) { file -> FileResult? in
                // Only what will be rewritten: not a file behind a link that leads out of its folder.
                let links = Self.links(for: file, named: named, roots: roots)
                guard file.problem == nil, (try? FileIO.destination(of: file.path, links: links)) != nil,
                    let bytes = try? FileIO.read(file.path)
                else { return nil }
                return pipeline.process(bytes, path: file.claimPath)
            }) ?? []  // the transform cannot throw
            for (file, result) in zip(batch, results) where result?.output != nil {
                var own = stat(), info = stat()
                let isLink = lstat(file.path, &own) == 0 && own.st_mode & S_IFMT == S_IFLNK
                let identity = isLink && stat(file.path, &info) == 0 ? FileWalk.Identity(info) : nil
                changing[file.argument, default: []].append((file.relative, file.path, result!.sha256Before, identity, isLink))
            }
        }
        // A link to a file the walk also meets by its own path is not kept: the file is kept by
        // its path, and a link kept as the file it leads to would come back as a copy of it.
        // Every other path is kept, hard links each by their own name.
        var ownPaths = Set<FileWalk.Identity>()
        let hasLinks = changing.values.joined().contains { $0.isLink }
        for entry in changing.values.joined() where hasLinks && !entry.isLink {
            var info = stat()
            if stat(entry.path, &info) == 0 { ownPaths.insert(FileWalk.Identity(info)) }
        }
        var kept: [String: String] = [:]
        for argument in files.paths.indices {
            let changed = changing[argument] ?? []
            let entries = changed.filter { entry in !(entry.isLink && entry.identity.map(ownPaths.contains) == true) }
            let absolute = URL(fileURLWithPath: files.paths[argument]).standardizedFileURL.path
            // Beside the folder or file given, named after it. Called for every path: a keeper
            // also tidies what a killed run left unfinished.
            let place = try keeper.keep(
                entries.map(\.relative), under: files.root(of: argument),
                in: FileIO.parentDirectory(of: absolute), name: URL(fileURLWithPath: absolute).lastPathComponent)
            if let place { notify(.originalsKept(files: entries.count, argument: files.paths[argument], place: place)) }
            // A link left out still has its checksum: what it leads to is kept.
            for entry in changed { kept[entry.path] = entry.sha256 }
        }
        return kept
    }

    private func migrate(_ file: FileWalk.File, kept: [String: String]?, links: LinkPolicy, sourceRoot: String, outMode: mode_t) -> Outcome {
        func failed(_ problem: String) -> Outcome {
            var result = FileResult(status: .failed, sha256Before: "")
            result.problem = problem
            return Outcome(file: file, result: result)
        }
        if let problem = file.problem { return failed(problem) }
        let (bytes, mode): ([UInt8], mode_t)
        do {
            (bytes, mode) = try FileIO.readFile(file.path)
        } catch {
            return failed("\(error)")
        }
        var result = pipeline.process(bytes, path: file.claimPath)
        guard let output = result.output else { return Outcome(file: file, result: result) }
        result.output = nil
        guard writes else { return Outcome(file: file, result: result) }
        // Not kept: changed since, or behind a link out of its folder, which the write refuses below.
        if let kept, kept[file.path] != result.sha256Before, (try? FileIO.destination(of: file.path, links: links)) != nil {
            result.status = .failed
            result.problem = "changed after its original was kept; left as it is (run again)"
            return Outcome(file: file, result: result)
        }
        let out = destination.folder
        do {
            if let out {
                let folder = file.relative.utf8.contains(UInt8(ascii: "/")) ? FileIO.parentDirectory(of: file.relative) : ""
                try directories.make(folder, under: out, modesFrom: sourceRoot, rootMode: outMode)
            }
            // Into a folder the originals stay untouched, so one flush at the end is enough; in
            // place each file is replaced durably (its original kept first). Either way the file
            // keeps its original's mode: a private save stays private.
            try FileIO.writeAtomically(output, to: out.map { $0 + "/" + file.relative } ?? file.path, durable: out == nil, mode: mode, links: out == nil ? links : .replace)
        } catch {
            result.status = .failed
            // The copy's own place is named where it is not the file's (in the folder).
            result.problem = error.path == file.path ? "\(error)" : "\(error.path): \(error)"
        }
        return Outcome(file: file, result: result)
    }
}

extension BatchMigration.Destination {
    /// The folder the copies go to, if they go to one.
    var folder: String? {
        if case .folder(let folder) = self { return folder }
        return nil
    }
}
