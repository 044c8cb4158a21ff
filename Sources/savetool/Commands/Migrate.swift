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
            over an earlier one (its path printed; --no-backup opts out); a JSON file migrated \
            in place changes only where the migration changed it. --check writes nothing and \
            exits 1 when any file would be migrated, naming each, for CI.

            The last line: N migrated, N unchanged, N skipped, N failed ("N would be migrated" \
            with --dry-run or --check; none with -q). --report writes one \
            JSON line per file: file, kind, from, to, status, steps, error, sha256Before, \
            sha256After, and dryRun when nothing is written.

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

    func validate() throws {
        guard !(inPlace && out != nil) else { throw ValidationError("--in-place and --out do not go together, expected one of them") }
        guard check || dryRun || inPlace || out != nil else {
            throw ValidationError("say where the results go: --in-place or --out <dir> (or --dry-run, --check)")
        }
        guard to == "latest" || Int(to).map({ $0 >= 1 }) == true else { throw ValidationError("--to \(to), expected a version number or latest") }
        guard jobs >= 1 else { throw ValidationError("--jobs \(jobs), expected 1 or more") }
    }

    func run() throws {
        let global = global
        let destination: BatchMigration.Destination =
            if let out { .folder(out) } else if inPlace {
                .inPlace(keepingOriginals: noBackup ? nil : OriginalsKeeper(createdBy: "savetool \(SaveTool.version)", purpose: "migrate"))
            } else { .nowhere }
        var batch = try Failure.reporting {
            let pipeline = try SavePipeline(kinds: try global.kinds(), registry: global.registry(), kind: kind, target: Int(to))
            return BatchMigration(paths: paths, pipeline: pipeline, destination: destination, jobs: jobs) { notice in
                switch notice {
                case .warning(let message): global.warn(message)
                case .originalsKept(let files, let argument, let place):
                    if !global.quiet { Console.error("savetool: originals of \(files) file\(files == 1 ? "" : "s") in \(argument) saved in \(place)") }
                }
            }
        }
        batch.dryRun = dryRun || check
        // A report's lines go out as each file is done, so that a killed run leaves one for
        // every file it rewrote but those in hand.
        batch.handsOutcomesOnAtOnce = report != nil || global.json
        try Failure.reporting { try batch.checkPlaces() }
        if let report, report != "-" { try Failure.reporting { try batch.checkReportPlace(report) } }
        // Opened before any file is touched: a report that cannot be written stops the run here.
        let reportFile = try report.map { path in try Failure.reporting { try ReportFile(path: path) } }
        if let reportFile, let report, let identity = reportFile.identity {
            batch.leavesOut.append((String(report.split(separator: "/").last ?? Substring(report)), identity))
        }
        let summary: BatchMigration.Summary
        // A report on standard output with --json is the same lines: written once.
        let (check, json, dryRun) = (check, global.json, batch.dryRun)
        let reportLines = json && Self.isStandardOutput(report) ? nil : reportFile
        do {
            let showsProgress = !global.quiet && !global.json && isatty(STDERR_FILENO) == 1
            let progress = Progress(total: showsProgress ? try batch.fileCount() : 0, visible: showsProgress)
            batch.fileDone = { progress.advance() }
            summary = try Failure.reporting {
                try batch.run { outcome in
                    // A line per file as it is done (memory stays flat at any count): a run that
                    // is killed leaves a line for every file it wrote but those in hand then.
                    if reportLines != nil || json {
                        let line = try Self.line(outcome, dryRun: dryRun)
                        try reportLines?.write(line)
                        if json { Console.output(line) }
                    }
                    Self.tell(outcome, check: check, global: global)
                }
            }
            progress.finish()
            try Failure.reporting { try reportFile?.finish() }
        } catch {
            reportFile?.abandon()
            throw error
        }
        if global.json {
            // After the lines, this summary as the last line.
            var counts: OrderedDictionary<String, SaveValue> = [
                "migrated": .integer(Int64(summary.migrated)), "unchanged": .integer(Int64(summary.unchanged)),
                "skipped": .integer(Int64(summary.skipped)), "failed": .integer(Int64(summary.failed)),
            ]
            if dryRun { counts["dryRun"] = true }
            Console.output(try Console.jsonLine(.dictionary(["summary": .dictionary(counts)])))
        } else if !global.quiet {
            // A run that writes nothing says what it would do: "16 migrated" read as done.
            let migrated = dryRun ? "\(summary.migrated) would be migrated" : "\(summary.migrated) migrated"
            let text = "\(migrated), \(summary.unchanged) unchanged, \(summary.skipped) skipped, \(summary.failed) failed"
            // A report on standard output stays JSON Lines: the summary goes to stderr then.
            if Self.isStandardOutput(report) { Console.error(text) } else { Console.output(text + "\n") }
        }
        if summary.failed > 0 || (check && summary.migrated > 0) { throw ExitCode(Failure.Code.negative) }
    }

    /// Whether the report goes to standard output: `-`, or a path that leads to the same file
    /// (`/dev/stdout`, `/dev/fd/1`), whatever standard output is.
    private static func isStandardOutput(_ report: String?) -> Bool {
        guard let report else { return false }
        if report == "-" { return true }
        var path = stat(), output = stat()
        return stat(report, &path) == 0 && fstat(STDOUT_FILENO, &output) == 0 && path.st_dev == output.st_dev && path.st_ino == output.st_ino
    }

    /// Names on stderr a file with a problem, and with --check each file that would be migrated.
    private static func tell(_ outcome: BatchMigration.Outcome, check: Bool, global: GlobalOptions) {
        let result = outcome.result
        if let problem = result.problem, !global.quiet {
            // cli.md's shape, `<file>:<where>: …`, where the decoder said where.
            if let decoding = result.decodingError, let place = decoding.location {
                Console.error("savetool: \(outcome.file.path):\(place): \(result.status.rawValue): \(decoding.problem)")
            } else {
                Console.error("savetool: \(outcome.file.path): \(result.status.rawValue): \(problem)")
            }
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

    /// A file's line of the report (cli.md): file, kind, from, to, status, steps, error,
    /// sha256Before, sha256After, and `dryRun: true` when nothing was written ("migrated"
    /// then says what would be).
    static func line(_ outcome: BatchMigration.Outcome, dryRun: Bool) throws -> String {
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
        if dryRun { line["dryRun"] = true }
        return try Console.jsonLine(.dictionary(line))
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
