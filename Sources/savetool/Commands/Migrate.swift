import ArgumentParser
import Foundation
import OrderedCollections
import SaveArchive
import SaveKit
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#endif

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate save files to the current (or --to) version of their kind, in batch.",
        discussion: """
            Files and directories (recursively) are read and their kind recognised, never \
            guessed: a kind claims a file by its path (its files patterns) or by a fingerprint \
            of its content, never by a version field alone; other files are skipped untouched. \
            Each step of the kind's migrations is applied, the schema checked after every step. \
            One bad file never stops the batch: it is reported and left untouched. Files \
            already at the target version are checked, not rewritten.

            --out <dir> writes each migrated file at the same relative path under <dir>; \
            --in-place replaces the files, after saving exactly the files that will change in \
            a new bundle beside each argument, <name>-before-migrate-<time>.tar.gz, never \
            over an earlier one (its path printed; --no-backup opts out). --check writes nothing and exits 1 when \
            any file would be migrated, naming each, for CI.

            The last line: N migrated, N unchanged, N skipped, N failed ("N would be migrated" \
            with --dry-run or --check; none with -q). --report writes one \
            JSON line per file: file, kind, from, to, status, steps, error, sha256Before, \
            sha256After.

            Examples:
              savetool migrate Documents --in-place
              savetool migrate Documents/current_tournament.json --to 2 --out migrated
              savetool migrate Documents --check
              savetool migrate old-saves --kind kape.tournament --dry-run --report migrate.jsonl
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Files and directories to migrate.", transform: PathArgument.named)
    var paths: [String]

    @Option(help: ArgumentHelp("Treat every file as this kind (see `savetool formats list`).", valueName: "kind"))
    var kind: String?

    @Option(help: ArgumentHelp("The target version, or latest.", valueName: "N|latest"))
    var to = "latest"

    @Flag(help: "Replace the files themselves.")
    var inPlace = false

    @Option(help: ArgumentHelp("Write the migrated files under this directory instead.", valueName: "dir"), transform: PathArgument.named)
    var out: String?

    @Flag(help: "Report what would happen and write nothing.")
    var dryRun = false

    @Flag(help: "Write nothing; exit 1 when any file would be migrated.")
    var check = false

    @Flag(help: "With --in-place, do not save the originals as a bundle first.")
    var noBackup = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Files to migrate at once.", valueName: "N"))
    var jobs = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: ArgumentHelp("Write one JSON line per file here.", valueName: "file.jsonl"), transform: PathArgument.named)
    var report: String?

    private let directories = DirectoryMaker()

    private enum CodingKeys: String, CodingKey {
        case global, paths, kind, to, inPlace, out, dryRun, check, noBackup, jobs, report
    }

    func validate() throws {
        guard !(inPlace && out != nil) else { throw ValidationError("--in-place and --out do not go together, expected one of them") }
        guard check || dryRun || inPlace || out != nil else {
            throw ValidationError("say where the results go: --in-place or --out <dir> (or --dry-run, --check)")
        }
        guard to == "latest" || Int(to).map({ $0 >= 1 }) == true else { throw ValidationError("--to \(to), expected a version number or latest") }
        guard jobs >= 1 else { throw ValidationError("--jobs \(jobs), expected 1 or more") }
    }

    /// What one file came to, with the migrated bytes dropped once written (memory stays flat).
    struct Outcome {
        var file: FileWalk.File
        var result: FileResult
    }

    func run() throws {
        var files = FileWalk(paths: distinctPaths())
        let pipeline = try Failure.reporting { () throws -> SavePipeline in
            try files.checkPathsExist()
            var found = stat()
            if let out, stat(out, &found) == 0, found.st_mode & S_IFMT != S_IFDIR {
                throw SaveError(.cannotCreate, file: out, "\(FileIO.describeType(found.st_mode)), expected a folder for the migrated copies, or a path where nothing is yet")
            }
            // A folder that cannot be made is said once, now, not for every file.
            if let out, stat(out, &found) != 0 {
                var existing = FileIO.parentDirectory(of: out)
                while stat(existing, &found) != 0, existing != "/", existing != "." { existing = FileIO.parentDirectory(of: existing) }
                if stat(existing, &found) == 0, found.st_mode & S_IFMT != S_IFDIR {
                    throw SaveError(.cannotCreate, file: out, "\(existing) is \(FileIO.describeType(found.st_mode)), expected a folder in which the folder for the migrated copies can be made")
                }
                if !(dryRun || check), access(existing, W_OK | X_OK) != 0 {
                    throw SaveError(.cannotCreate, file: out, "\(FileError.reason(errno)) in \(existing), expected a place where the folder for the migrated copies can be made")
                }
            }
            // Copies written over their originals, or into the folder being walked, would be an
            // in-place migration without the bundle of originals that --in-place keeps.
            if let out, let place = Self.resolvedPath(out) {
                for index in files.paths.indices {
                    guard let root = FileIO.realPath(files.root(of: index)) else { continue }
                    // A file's copy goes to --out/<its name>: only its own folder is its place,
                    // and the file it may lead to through a link.
                    let isFolder = files.root(of: index) == files.paths[index]
                    let inside = place == root || (isFolder && (root == "/" || place.hasPrefix(root + "/")))
                    let name = URL(fileURLWithPath: files.paths[index]).lastPathComponent
                    let overFile = !isFolder && Self.resolvedPath(place + "/" + name) == FileIO.realPath(files.paths[index])
                    if inside || overFile {
                        throw ValidationError("--out \(out) would write among the files migrated from \(files.paths[index]), expected a folder outside them (or --in-place, which keeps the originals in a bundle first)")
                    }
                }
            }
            return try SavePipeline(kinds: try global.kinds(), registry: global.registry(), kind: kind, target: Int(to))
        }
        let writes = !(dryRun || check)
        if let report, report != "-" { try Failure.reporting { try checkReportPlace(report) } }
        // Opened before any file is touched: a report that cannot be written stops the run here.
        let reportFile = try report.map { path in try Failure.reporting { try ReportFile(path: path) } }
        if let reportFile, let report, let identity = reportFile.identity {
            files.leavesOut.append((String(report.split(separator: "/").last ?? Substring(report)), identity))
        }
        do {
            try migrate(files, pipeline: pipeline, writes: writes, reportFile: reportFile)
        } catch {
            reportFile?.abandon()
            throw error
        }
    }

    private func migrate(_ files: FileWalk, pipeline: SavePipeline, writes: Bool, reportFile: ReportFile?) throws {
        var files = files
        // In place, the originals of every file that will change are saved first, in one bundle
        // per argument, durable before the first file is replaced; a file that changes between
        // that pass and its rewrite is left alone.
        let kept = writes && inPlace && !noBackup ? try saveOriginals(files, pipeline: pipeline) : nil
        files.removesAbandonedTemporaryFiles = writes && inPlace
        let showsProgress = !global.quiet && !global.json && isatty(STDERR_FILENO) == 1
        let progress = Progress(total: showsProgress ? try files.count() : 0, visible: showsProgress)
        var summary = Summary()
        // Two arguments may lead to one path under --out (two folders holding the same names):
        // the second is a failure, never a silent overwrite of the first one's copy. This alone
        // grows with the count (a path per file), and only when several arguments share --out.
        var placed: [String: String]? = out != nil && files.paths.count > 1 ? [:] : nil
        // The lines are made only for someone to read.
        let lines = reportFile != nil || global.json ? ReportLines(file: reportFile, toStandardOutput: global.json, jobs: jobs) : nil
        var done = 0
        // A file named on the command line is written through its link, as `set` writes; one
        // found in a folder only through a link that stays inside the folder.
        let named = files.paths, roots = files.paths.indices.map { files.root(of: $0) }
        // --out, if made, is as private as the most private folder migrated into it.
        let outMode = roots.reduce(mode_t(0o777)) { mode, root in
            var info = stat()
            return stat(root, &info) == 0 ? mode & info.st_mode & 0o777 : mode
        } | 0o700
        let links = { @Sendable (file: FileWalk.File) -> LinkPolicy in
            named[file.argument] == file.path ? .follow : .followWithin(roots[file.argument])
        }
        try inBatches(files, growing: true) { batch in
            var batch = batch
            if let out, placed != nil {
                var again: [Int] = []
                for index in batch.indices where batch[index].problem == nil {
                    let file = batch[index]
                    if let first = placed![file.relative] {
                        // The same file reached twice (a folder and a file in it) is migrated once.
                        if let real = FileIO.realPath(first), real == FileIO.realPath(file.path) {
                            global.warn("\(file.path): named already as \(first); migrated once")
                            again.append(index)
                            continue
                        }
                        batch[index].problem = "its copy would go to \(out)/\(file.relative), where the copy of \(first) goes, expected inputs whose paths under --out differ"
                    } else {
                        placed![file.relative] = file.path
                    }
                }
                for index in again.reversed() { batch.remove(at: index) }
            }
            let first = done
            done += batch.count
            let files = batch
            let outcomes: [Outcome] = (try? Array(files.indices).parallelMap(jobs: jobs) { index -> Outcome in
                defer { progress.advance() }
                let file = files[index]
                lines?.waitForTurn(first + index)
                let outcome = migrateOne(
                    file, pipeline: pipeline, writes: writes, kept: kept, links: links(file), sourceRoot: roots[file.argument], outMode: outMode)
                // Each file's line goes out as soon as it and the files before it are done: a run
                // that is killed leaves a line for every file it wrote but those in hand at that
                // moment (one per job), and the lines keep the walk's order.
                lines?.add(outcome, at: first + index)
                return outcome
            }) ?? []  // the transform cannot throw
            try Failure.reporting { try lines?.check() }
            count(outcomes, into: &summary)
        }
        progress.finish()
        // Everything written under --out on disk before the summary says it was written.
        // (Nothing to flush when nothing was written and --out was never made.)
        if writes, let out, FileManager.default.fileExists(atPath: out) { try Failure.reporting { try FileIO.syncFileSystem(containing: out) } }
        try Failure.reporting { try reportFile?.finish() }
        if global.json {
            // JSON Lines, a line per file as it is done (memory stays flat at any count), then
            // this summary as the last line.
            let counts: SaveValue = .dictionary([
                "migrated": .integer(Int64(summary.migrated)), "unchanged": .integer(Int64(summary.unchanged)),
                "skipped": .integer(Int64(summary.skipped)), "failed": .integer(Int64(summary.failed)),
            ])
            Console.output(try Console.jsonLine(.dictionary(["summary": counts])))
        } else if !global.quiet {
            // A run that writes nothing says what it would do: "16 migrated" read as done.
            let migrated = writes ? "\(summary.migrated) migrated" : "\(summary.migrated) would be migrated"
            Console.output("\(migrated), \(summary.unchanged) unchanged, \(summary.skipped) skipped, \(summary.failed) failed\n")
        }
        if summary.failed > 0 || (check && summary.migrated > 0) { throw ExitCode(Failure.Code.negative) }
    }

    struct Summary {
        var migrated = 0, unchanged = 0, skipped = 0, failed = 0
    }

    /// Files are found one directory at a time and handled in batches whose results are
    /// reported, then dropped: memory stays flat whatever the count.
    /// `growing` starts with small batches and doubles them: the first report lines come soon,
    /// even when each file takes a while (a plugin codec), and a long run still waits between
    /// batches rarely.
    private func inBatches(_ files: FileWalk, growing: Bool = false, _ body: ([FileWalk.File]) throws -> Void) throws {
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

    private static func parallelMap<T: Sendable>(_ items: [FileWalk.File], jobs: Int, _ transform: @escaping @Sendable (FileWalk.File) -> T) -> [T] {
        (try? items.parallelMap(jobs: jobs, transform)) ?? []  // the transform cannot throw
    }

    /// The first pass of `--in-place`: finds the files that will change and saves them. Returns
    /// the checksum each had, by path.
    private func saveOriginals(_ files: FileWalk, pipeline: SavePipeline) throws -> [String: String] {
        var changing: [Int: [(relative: String, path: String, sha256: String)]] = [:]
        try inBatches(files) { batch in
            let results = Self.parallelMap(batch, jobs: jobs) { file -> FileResult? in
                guard file.problem == nil, let bytes = try? FileIO.read(file.path) else { return nil }
                return pipeline.process(bytes, path: file.claimPath)
            }
            for (file, result) in zip(batch, results) where result?.output != nil {
                changing[file.argument, default: []].append((file.relative, file.path, result!.sha256Before))
            }
        }
        var kept: [String: String] = [:]
        let keeper = OriginalsKeeper(createdBy: "savetool \(SaveTool.version)", purpose: "migrate")
        for argument in files.paths.indices {
            let entries = changing[argument] ?? []
            let root = files.root(of: argument)
            let absolute = URL(fileURLWithPath: files.paths[argument]).standardizedFileURL.path
            // Beside the directory or file given, named after it.
            let (directory, name) = (FileIO.parentDirectory(of: absolute), URL(fileURLWithPath: absolute).lastPathComponent)
            // Called for every argument: it also removes what a killed run left unfinished.
            let bundle = try Failure.reporting { try keeper.keep(entries.map(\.relative), under: root, in: directory, name: name) }
            if let bundle, !global.quiet {
                Console.error("savetool: originals of \(entries.count) file\(entries.count == 1 ? "" : "s") in \(files.paths[argument]) saved in \(bundle)")
            }
            for entry in entries { kept[entry.path] = entry.sha256 }
        }
        return kept
    }

    /// A report never takes the place of a save: not of a file that holds one (it would be
    /// emptied for the report, and the bundle of originals keeps only files that change), nor
    /// of a path under --out, where a migrated copy may land.
    private func checkReportPlace(_ report: String) throws {
        var info = stat()
        let exists = stat(report, &info) == 0
        // A device or FIFO (/dev/stdout, a pipe) is written as a stream, and holds no save.
        guard !exists || info.st_mode & S_IFMT == S_IFREG else { return }
        if let out, let place = Self.resolvedPath(report), let folder = Self.resolvedPath(out), place.hasPrefix(folder == "/" ? "/" : folder + "/") {
            throw ValidationError("--report \(report) is inside --out \(out), where the migrated copies go, expected a report path outside it")
        }
        guard exists, info.st_size > 0, info.st_size < 1 << 26, let bytes = try? FileIO.read(report) else { return }
        // Recognised as the kinds recognise any file, not as --kind's: that takes every file for
        // its kind, an earlier report included.
        let recognising = try SavePipeline(kinds: try global.kinds(), registry: global.registry(), kind: nil, target: nil)
        let result = recognising.process(bytes, path: FileWalk.File.claimPath(of: report))
        if let kind = result.kind, result.status != .failed, result.status != .unrecognized {
            throw ValidationError("--report \(report) holds a save (\(kind)), expected a path for the report where no save is")
        }
    }

    /// The arguments, each file once: a path named twice, or (except with --out, where each
    /// argument has its own place) a file or folder inside a folder also named, is migrated,
    /// counted and backed up once.
    private func distinctPaths() -> [String] {
        func isFolder(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }
        let named = paths.map { (path: $0, real: FileIO.realPath($0), isFolder: isFolder($0)) }
        var distinct: [String] = []
        for (index, argument) in named.enumerated() {
            guard let real = argument.real else { distinct.append(argument.path); continue }
            if let earlier = named[..<index].first(where: { $0.real == real }) {
                global.warn("\(argument.path): named already as \(earlier.path); migrated once")
                continue
            }
            if out == nil, let folder = named.first(where: { other in
                other.isFolder && other.real.map { Self.walk(from: $0, reaches: real) } == true
            }) {
                global.warn("\(argument.path): inside \(folder.path), also named; migrated once")
                continue
            }
            distinct.append(argument.path)
        }
        return distinct
    }

    /// Whether the walk of the real folder `folder` visits the real path `inside`: it lies
    /// under it through folders (not links to them), and no name on the way starts with `.`.
    /// Only then is an argument inside a folder also named the same file twice; otherwise it
    /// is migrated on its own, never dropped unseen.
    private static func walk(from folder: String, reaches inside: String) -> Bool {
        let prefix = folder == "/" ? "/" : folder + "/"
        guard inside.hasPrefix(prefix) else { return false }
        var place = folder == "/" ? "" : folder
        let names = inside.dropFirst(prefix.count).split(separator: "/")
        for (index, name) in names.enumerated() {
            guard !name.hasPrefix(".") else { return false }
            place += "/" + name
            var info = stat()
            guard lstat(place, &info) == 0 else { return false }
            let type = info.st_mode & S_IFMT
            guard type == S_IFDIR || (index == names.count - 1 && type == S_IFREG) else { return false }
        }
        return true
    }

    /// A path made real as far as it exists, with the rest (folders --out will make) after it.
    private static func resolvedPath(_ path: String) -> String? {
        var existing = URL(fileURLWithPath: path).standardizedFileURL.path, rest: [String] = []
        while FileIO.realPath(existing) == nil, existing != "/" {
            rest.insert(URL(fileURLWithPath: existing).lastPathComponent, at: 0)
            existing = FileIO.parentDirectory(of: existing)
        }
        return FileIO.realPath(existing).map { ([$0 == "/" ? "" : $0] + rest).joined(separator: "/") }
    }

    private func migrateOne(
        _ file: FileWalk.File, pipeline: SavePipeline, writes: Bool, kept: [String: String]?, links: LinkPolicy, sourceRoot: String, outMode: mode_t
    ) -> Outcome {
        if let problem = file.problem {
            var result = FileResult(status: .failed, sha256Before: "")
            result.problem = problem
            return Outcome(file: file, result: result)
        }
        let (bytes, mode): ([UInt8], mode_t)
        do {
            (bytes, mode) = try FileIO.readFile(file.path)
        } catch {
            var result = FileResult(status: .failed, sha256Before: "")
            result.problem = "\(error)"
            return Outcome(file: file, result: result)
        }
        var result = pipeline.process(bytes, path: file.claimPath)
        guard let output = result.output else { return Outcome(file: file, result: result) }
        result.output = nil
        if writes {
            if let kept, kept[file.path] != result.sha256Before {
                result.status = .failed
                result.problem = "changed after its original was saved; left as it is (run again)"
                return Outcome(file: file, result: result)
            }
            let destination = out.map { $0 + "/" + file.relative } ?? file.path
            do {
                if let out {
                    let folder = file.relative.contains("/") ? FileIO.parentDirectory(of: file.relative) : ""
                    try directories.make(folder, under: out, modesFrom: sourceRoot, rootMode: outMode)
                }
                // --out leaves the originals untouched, so one flush at the end is enough;
                // --in-place replaces each file durably (the originals are in a bundle first).
                // Either way the file keeps its original's mode: a private save stays private.
                try FileIO.writeAtomically(output, to: destination, durable: out == nil, mode: mode, links: out == nil ? links : .replace)
            } catch {
                result.status = .failed
                // The copy's own place is named where it is not the file's (under --out).
                result.problem = error.path == file.path ? "\(error)" : "\(error.path): \(error)"
            }
        }
        return Outcome(file: file, result: result)
    }

    /// The report lines of a batch (and its problems on stderr), counted into `counts`.
    /// Counts a batch's files, and names on stderr each one with a problem.
    private func count(_ outcomes: [Outcome], into counts: inout Summary) {
        for outcome in outcomes {
            let result = outcome.result
            switch result.status {
            case .migrated: counts.migrated += 1
            case .unchanged: counts.unchanged += 1
            case .unrecognized: counts.skipped += 1
            case .ambiguous, .future, .invalid, .failed: counts.failed += 1
            }
            if let problem = result.problem, !global.quiet {
                Console.error("savetool: \(outcome.file.path): \(result.status.rawValue): \(problem)")
            }
            // --check is a lint: each file it fails for is named, as a linter names each line.
            if check, result.status == .migrated, !global.json {
                // A holder whose own version stays (its embedded save moves on) names what moves.
                let what = result.from != nil && result.from == result.to && !result.steps.isEmpty
                    ? "\(result.kind ?? "?") \(result.steps.joined(separator: ", "))"
                    : "\(result.kind ?? "?") version \(result.from.map(String.init) ?? "?") to \(result.to.map(String.init) ?? "?")"
                Console.error("savetool: \(outcome.file.path): would be migrated (\(what))")
            }
        }
    }

    /// Where the report's lines go, from every job as each file is done.
    final class ReportLines: @unchecked Sendable {
        private let file: ReportFile?
        private let toStandardOutput: Bool
        private let turns = NSCondition()
        private var failure: (any Error)?
        /// The number of the next line to go out, and the lines done before their turn.
        private var next = 0
        private var waiting: [Int: String] = [:]
        private let jobs: Int

        init(file: ReportFile?, toStandardOutput: Bool, jobs: Int) {
            (self.file, self.toStandardOutput, self.jobs) = (file, toStandardOutput, jobs)
        }

        /// Waits until the `number`th file is fewer than `jobs` files past the first one whose
        /// line has not gone out: a slow file holds the others back to that, so a run that is
        /// killed has never rewritten more than one file per job without its line. (The file
        /// `next` is always in some job's hands, and that job never waits: no deadlock.)
        func waitForTurn(_ number: Int) {
            turns.lock()
            while number >= next + jobs { turns.wait() }
            turns.unlock()
        }

        /// The line of the `number`th file of the walk.
        func add(_ outcome: Outcome, at number: Int) {
            let line: String
            var made: (any Error)?
            do { line = try Self.line(outcome) } catch {
                made = error
                line = ""
            }
            turns.lock()
            defer { turns.unlock() }
            failure = failure ?? made
            waiting[number] = line
            while let ready = waiting.removeValue(forKey: next) {
                next += 1
                guard failure == nil, !ready.isEmpty else { continue }
                do { try file?.write(ready) } catch { failure = error }
                if toStandardOutput { Console.output(ready) }
            }
            turns.broadcast()
        }

        /// The first failure to write a line, once the batch is done.
        func check() throws {
            turns.lock()
            defer { turns.unlock() }
            if let failure { throw failure }
        }

        static func line(_ outcome: Outcome) throws -> String {
            let result = outcome.result
            var line: OrderedDictionary<String, SaveValue> = ["file": .string(outcome.file.path)]
            if let kind = result.kind { line["kind"] = .string(kind) }
            if let from = result.from { line["from"] = .int(UInt64(from)) }
            if let to = result.to { line["to"] = .int(UInt64(to)) }
            line["status"] = .string(result.status.rawValue)
            if !result.steps.isEmpty { line["steps"] = .array(result.steps.map(SaveValue.string)) }
            if let problem = result.problem { line["error"] = .string(problem) }
            if !result.sha256Before.isEmpty { line["sha256Before"] = .string(result.sha256Before) }
            if let after = result.sha256After, result.status == .migrated { line["sha256After"] = .string(after) }
            return try Console.jsonLine(.dictionary(line))
        }
    }
}

/// A progress bar on stderr, drawn only on a terminal.
final class Progress: @unchecked Sendable {
    private let total: Int
    private let visible: Bool
    private var done = 0
    private var lastDrawn = -1
    private let lock = NSLock()

    init(total: Int, visible: Bool) {
        self.total = total
        self.visible = visible
    }

    func advance() {
        guard visible else { return }
        lock.withLock {
            done += 1
            let filled = total == 0 ? 30 : done * 30 / total
            guard filled != lastDrawn || done == total else { return }
            lastDrawn = filled
            FileHandle.standardError.write(Data("\r[\(String(repeating: "#", count: filled))\(String(repeating: " ", count: 30 - filled))] \(done)/\(total)".utf8))
        }
    }

    func finish() {
        if visible { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
