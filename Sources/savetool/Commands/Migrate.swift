import ArgumentParser
import CSystem
import Foundation
import SaveArchive
import SaveKit

#if canImport(Glibc)
import Glibc
#endif

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate save files to the current (or --to) version of their kind, in batch.",
        discussion: """
            Files and directories (recursively) are read, their kind and version recognised \
            (the version field, else the kind's fingerprints), and each step of the kind's \
            migrations applied, the schema checked after every step. One bad file never stops \
            the batch: it is reported and left untouched. Files already at the target version \
            are not rewritten.

            --out <dir> writes each migrated file at the same relative path under <dir>; \
            --in-place replaces the files, after saving the input directories as bundles \
            (their paths printed; --no-backup opts out). --check writes nothing and exits 1 when \
            any file would be migrated, for CI.

            The last line: N migrated, N unchanged, N skipped, N failed. --report writes one \
            JSON line per file: file, kind, from, to, status, steps, error, sha256Before, \
            sha256After.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Files and directories to migrate.")
    var paths: [String]

    @Option(help: ArgumentHelp("Treat every file as this kind.", valueName: "kind"))
    var kind: String?

    @Option(help: ArgumentHelp("The target version, or latest.", valueName: "N|latest"))
    var to = "latest"

    @Flag(help: "Replace the files themselves.")
    var inPlace = false

    @Option(help: ArgumentHelp("Write the migrated files under this directory instead.", valueName: "dir"))
    var out: String?

    @Flag(help: "Report what would happen and write nothing.")
    var dryRun = false

    @Flag(help: "Write nothing; exit 1 when any file would be migrated.")
    var check = false

    @Flag(help: "With --in-place, do not save the originals as a bundle first.")
    var noBackup = false

    @Option(help: ArgumentHelp("Files to migrate at once.", valueName: "N"))
    var jobs = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: ArgumentHelp("Write one JSON line per file here.", valueName: "file.jsonl"))
    var report: String?

    private let directories = DirectoryMaker()

    private enum CodingKeys: String, CodingKey {
        case global, paths, kind, to, inPlace, out, dryRun, check, noBackup, jobs, report
    }

    func validate() throws {
        guard check || dryRun || inPlace != (out != nil) else {
            throw ValidationError("say where the results go: --in-place or --out <dir> (or --dry-run, --check)")
        }
        guard to == "latest" || Int(to).map({ $0 >= 1 }) == true else { throw ValidationError("--to \(to), expected a version number or latest") }
        guard jobs >= 1 else { throw ValidationError("--jobs \(jobs), expected 1 or more") }
    }

    struct Result {
        /// The outcome, with any migrated value dropped once written (memory stays flat).
        var outcome: Migrator.Outcome?
        var error: String?
        var before: String
        var after: String?
        var wrote = false
    }

    func run() throws {
        let files = FileWalk(paths: paths)
        let (migrator, registry) = try Failure.reporting { () throws -> (Migrator, CodecRegistry) in
            try files.checkPathsExist()
            return (Migrator(kinds: try global.kinds()), global.registry())
        }
        let writes = !(dryRun || check)
        if writes && inPlace && !noBackup {
            for directory in Set(files.roots).sorted() {
                let backup = try Failure.reporting { try saveOriginals(directory) }
                if !global.quiet { Console.error("savetool: originals of \(directory) saved in \(backup)") }
            }
        }
        let target = Int(to)
        let showsProgress = !global.quiet && !global.json && isatty(STDERR_FILENO) == 1
        let progress = Progress(total: showsProgress ? try files.count() : 0, visible: showsProgress)
        var summary = Summary()
        let reportOutput = try report.map { path in try Failure.reporting { try AtomicFileOutput(path: path) } }
        // Files are found one directory at a time and migrated in batches whose results are
        // reported, then dropped: memory stays flat whatever the count.
        let batchSize = 1000
        var batch: [FileWalk.File] = []
        func migrate(_ batch: [FileWalk.File]) throws {
            final class Results: @unchecked Sendable {
                var values: [Result?]
                let lock = NSLock()
                init(_ count: Int) { values = Array(repeating: nil, count: count) }
            }
            let results = Results(batch.count)
            let workers = min(jobs, batch.count)
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                for index in stride(from: worker, to: batch.count, by: workers) {
                    let result = migrateOne(batch[index], migrator: migrator, registry: registry, target: target, writes: writes)
                    results.lock.withLock { results.values[index] = result }
                    progress.advance()
                }
            }
            let lines = try report(batch, results.values.map { $0! }, into: &summary)
            if let reportOutput { try Failure.reporting { try Array(lines.utf8).withUnsafeBytes { try reportOutput.write($0) } } }
            if global.json { Console.output(lines) }
        }
        try files.forEach { file in
            batch.append(file)
            if batch.count == batchSize {
                try migrate(batch)
                batch.removeAll(keepingCapacity: true)
            }
            return true
        }
        if !batch.isEmpty { try migrate(batch) }
        progress.finish()
        if writes, let out { Self.flush(out) }
        try Failure.reporting { try reportOutput?.commit() }
        if !global.json {
            Console.output("\(summary.migrated) migrated, \(summary.unchanged) unchanged, \(summary.skipped) skipped, \(summary.failed) failed\n")
        }
        if summary.failed > 0 || (check && summary.migrated > 0) { throw ExitCode(Failure.Code.negative) }
    }

    struct Summary {
        var migrated = 0, unchanged = 0, skipped = 0, failed = 0
    }

    /// Puts everything written under `--out` on disk in one call (its file system's syncfs).
    private static func flush(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = savetool_sync_file_system(descriptor)
        close(descriptor)
    }

    private func migrateOne(_ item: FileWalk.File, migrator: Migrator, registry: CodecRegistry, target: Int?, writes: Bool) -> Result {
        guard let bytes = try? FileIO.read(item.path) else { return Result(error: "cannot read", before: "") }
        let before = Checksum.sha256(bytes)
        guard let codec = registry.codec(sniffing: bytes) ?? registry.codec(forPath: item.path), !(codec is ArchiveCodec) else {
            return Result(outcome: .unrecognized, before: before)
        }
        do {
            let (outcome, output) = try migrator.migrate(file: bytes, codec: codec, path: item.relative, kind: kind, to: target, registry: registry)
            guard let output, case .migrated(let kind, let from, let to, let steps, _) = outcome else { return Result(outcome: outcome, before: before) }
            if writes {
                let destination = out.map { $0 + "/" + item.relative } ?? item.path
                if out != nil { try directories.make(FileIO.parentDirectory(of: destination)) }
                // --out leaves the originals untouched, so one flush at the end is enough;
                // --in-place replaces each file durably (the originals are in a bundle too).
                try FileIO.writeAtomically(output, to: destination, durable: out == nil)
            }
            // The migrated value is not kept: only what the report needs.
            return Result(outcome: .migrated(kind: kind, from: from, to: to, steps: steps, value: .null), before: before, after: Checksum.sha256(output), wrote: writes)
        } catch {
            return Result(error: "\(error)", before: before)
        }
    }

    /// The report lines of a batch (and its problems on stderr), counted into `counts`.
    private func report(_ items: [FileWalk.File], _ results: [Result], into counts: inout Summary) throws -> String {
        var lines: [String] = []
        for (item, result) in zip(items, results) {
            var entry: [String: SaveValue] = ["file": .string(item.path), "sha256Before": .string(result.before)]
            var status = "failed"
            var message = result.error
            if let outcome = result.outcome, result.error == nil {
                status = outcome.status
                switch outcome {
                case .migrated(let kind, let from, let to, let steps, _):
                    entry["kind"] = .string(kind); entry["from"] = .int(UInt64(from)); entry["to"] = .int(UInt64(to))
                    entry["steps"] = .array(steps.map(SaveValue.string))
                    counts.migrated += 1
                case .unchanged(let kind, let version):
                    entry["kind"] = .string(kind); entry["from"] = .int(UInt64(version)); entry["to"] = .int(UInt64(version))
                    counts.unchanged += 1
                case .unrecognized:
                    counts.skipped += 1
                case .ambiguous(let kind, let versions):
                    entry["kind"] = .string(kind)
                    message = "matches the fingerprints of versions \(versions.map(String.init).joined(separator: ", ")), expected exactly one"
                    counts.failed += 1
                case .future(let kind, let version):
                    entry["kind"] = .string(kind); entry["from"] = .int(UInt64(version))
                    message = "version \(version) is newer than this savetool knows; left as it is"
                    counts.failed += 1
                case .invalid(let kind, let version, let violations):
                    entry["kind"] = .string(kind); entry["from"] = .int(UInt64(version))
                    message = violations.prefix(3).map(\.description).joined(separator: "; ")
                    counts.failed += 1
                case .failed(let kind, let from, let error):
                    entry["kind"] = .string(kind); entry["from"] = .int(UInt64(from))
                    message = error.description
                    counts.failed += 1
                }
            } else {
                counts.failed += 1
            }
            entry["status"] = .string(status)
            if let message {
                entry["error"] = .string(message)
                if !global.quiet { Console.error("savetool: \(item.path): \(status): \(message)") }
            }
            if let after = result.after { entry["sha256After"] = .string(after) }
            var line: SaveValue = [:]
            for key in ["file", "kind", "from", "to", "status", "steps", "error", "sha256Before", "sha256After"] {
                if let value = entry[key] { try line.setValue(value, at: JSONPointer(tokens: [key])) }
            }
            var compact = EncodingOptions()
            compact.pretty = false
            lines.append(String(decoding: try JSONCodec().encode(line, options: compact), as: UTF8.self))
        }
        return lines.joined()
    }

    private func saveOriginals(_ directory: String) throws -> String {
        let name = URL(fileURLWithPath: directory).standardizedFileURL.lastPathComponent
        let stamp = RFC3339.format(Date(timeIntervalSinceReferenceDate: Date().timeIntervalSinceReferenceDate.rounded(.down))).replacingOccurrences(of: ":", with: "")
        let bundle = "\(FileIO.parentDirectory(of: URL(fileURLWithPath: directory).standardizedFileURL.path))/\(name)-before-migrate-\(stamp).tar.gz"
        var exporter = BundleExporter(createdAt: Date(), createdBy: "savetool \(SaveTool.version)")
        exporter.label = "before migrate"
        try exporter.export(directory: directory, to: bundle)
        return bundle
    }
}

/// Output directories made once each, whichever worker needs one first.
final class DirectoryMaker: @unchecked Sendable {
    private var made = Set<String>()
    private let lock = NSLock()

    func make(_ path: String) throws {
        if lock.withLock({ made.contains(path) }) { return }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        lock.withLock { _ = made.insert(path) }
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
