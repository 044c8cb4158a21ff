import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveToolCLI

struct BackupPrune: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Apply retention alone: keep the last --keep days that have a backup.",
        discussion: """
            A day without a backup uses up no slot. A backup dated after today, and any file \
            that is not a savetool bundle, are never deleted.

            Examples:
              savetool backup prune --repo /var/backups/saves --keep 7 --dry-run
              savetool backup prune --repo /var/backups/saves --keep 30
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RepositoryOptions

    @Option(parsing: .unconditional, help: ArgumentHelp("How many distinct days with a backup to keep.", valueName: "days"))
    var keep = 7

    @Flag(help: "List what would be deleted, and delete nothing.")
    var dryRun = false

    func validate() throws {
        guard keep >= 1 else { throw ValidationError("--keep \(keep), expected a number of days of 1 or more") }
    }

    func run() throws {
        try Failure.reporting {
            if let remote = try options.remote(warningThrough: global) {
                try remote.checkExists()
                let report = try remote.prune(keep: keep, today: .today(), dryRun: dryRun)
                let place = remote.storage.location + "/"
                let deleted = report.deleted.map { place + $0.object }, strays = report.strayObjectsRemoved.map { place + $0 }
                if global.json {
                    // The backups deleted, as a folder repository's prune gives them; what cut
                    // runs left is said on standard error.
                    try Console.outputJSON(.array(deleted.map { .string($0) }))
                    for stray in strays where !global.quiet { Console.error("savetool: \(dryRun ? "would remove" : "removed") what a cut run left: \(stray)") }
                } else if !global.quiet {
                    let (verb, removal) = dryRun ? ("would delete", "would remove what a cut run left") : ("deleted", "removed what a cut run left")
                    let lines = strays.map { "\(removal): \($0)" } + deleted.map { "\(verb): \($0)" }
                    Console.outputLines(lines.isEmpty ? ["nothing to delete"] : lines)
                }
                return
            }
            var engine = options.engine()
            let printer = global
            engine.warn = { printer.warn($0) }
            let deleted = try engine.prune(keep: keep, today: .today(), dryRun: dryRun)
            if global.json {
                try Console.outputJSON(.array(deleted.map { .string($0.path) }))
            } else if !global.quiet {
                let verb = dryRun ? "would delete" : "deleted"
                Console.outputLines(deleted.isEmpty ? ["nothing to delete"] : deleted.map { "\(verb): \($0.path)" })
            }
        }
    }
}
