import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveToolCLI

struct BackupCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Back up a save directory for today (or --date), then apply retention.",
        discussion: """
            Writes <repo>/<name>-YYYY-MM-DD.tar.gz under a temporary name, flushes it and renames \
            it into place; only then are backups past --keep days deleted. Run again on the same \
            day, it replaces the day's backup if files changed and writes nothing if not \
            ('unchanged'), so it is safe to run every hour. A backup dated after today is never \
            deleted, nor is any file that is not a savetool bundle. Another source already \
            backed up under the same name is refused: give this one a --name.

            Examples:
              savetool backup create Documents --repo /var/backups/saves
              savetool backup create ~/Library/Preferences --repo /var/backups/saves --name prefs --keep 14
              savetool backup create Documents --repo /var/backups/saves --date 2026-11-19 -q
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RepositoryOptions

    @Argument(help: "The save directory.", transform: PathArgument.named)
    var source: String

    @Option(parsing: .unconditional, help: ArgumentHelp("How many distinct days with a backup to keep.", valueName: "days"))
    var keep = 7

    @Option(help: ArgumentHelp("The day of this backup (default: today, local time); for backfills.", valueName: "YYYY-MM-DD"))
    var date: BackupRepository.Day?

    @Option(help: ArgumentHelp("The backup name (default: the source directory's name).", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("Compression of the bundle.", valueName: "gzip|zstd|xz|none"))
    var compression: ArchiveFormat.Compression = .gzip

    func validate() throws {
        guard keep >= 1 else { throw ValidationError("--keep \(keep), expected a number of days of 1 or more") }
        // The name starts each backup's file name in the repository.
        if let name, !BackupRepository.isBackupName(name) {
            throw ValidationError("--name \(name), expected a file name: not empty, no /, not starting with .")
        }
    }

    func run() throws {
        try Failure.reporting {
            let today = BackupRepository.Day.today()
            let printer = global
            let bar = ProgressBar("backing up", global: global)
            // Either repository's report, as it is printed.
            let (outcome, backup, files, deleted, unfinished): (String, String, Int, [String], [String])
            var createdRepository = false
            if var remote = try options.remote(warningThrough: global) {
                remote.progress = bar.update
                let report: RemoteRepository.CreateReport
                do {
                    defer { bar.finish() }
                    report = try remote.create(
                        source: source, name: name, day: date ?? today, today: today, keep: keep, format: .tar(compression), createdAt: Export.creationTime())
                }
                let place = remote.storage.location + "/"
                (outcome, backup, files) = ("\(report.outcome)", place + report.object, report.files)
                (deleted, unfinished) = (report.deleted.map { place + $0.object }, report.strayObjectsRemoved.map { place + $0 })
            } else {
                var engine = options.engine()
                engine.warn = { printer.warn($0) }
                engine.progress = bar.update
                let report: BackupEngine.CreateReport
                do {
                    defer { bar.finish() }
                    report = try engine.create(
                        source: source, name: name, day: date ?? today, today: today, keep: keep, format: .tar(compression),
                        createdAt: Export.creationTime())
                }
                (outcome, backup, files) = ("\(report.outcome)", report.backup.path, report.files)
                (deleted, unfinished, createdRepository) = (report.deleted.map(\.path), report.strayFilesRemoved, report.createdRepository)
            }
            if global.json {
                try Console.outputJSON([
                    "backup": .string(backup), "outcome": .string(outcome), "files": .int(UInt64(files)), "deleted": .array(deleted.map { .string($0) }),
                ])
            } else if !global.quiet {
                var lines = createdRepository ? ["created repository \(options.repo)"] : []
                // In the order it happened: what a cut run left went first, and may bear the
                // name of the backup made after it.
                lines += unfinished.map { "removed what a cut run left: \($0)" }
                lines.append("\(outcome): \(backup) (\(files) file\(files == 1 ? "" : "s"))")
                lines += deleted.map { "deleted: \($0)" }
                Console.outputLines(lines)
            }
        }
    }
}
