import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveToolCLI

struct BackupVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-read backups and check every checksum; exit 65 naming any bad file and entry.",
        discussion: """
            Without backups named, every backup in the repository is checked.

            Examples:
              savetool backup verify --repo /var/backups/saves
              savetool backup verify --repo /var/backups/saves Documents-2026-11-20.tar.gz
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RepositoryOptions

    @Argument(help: "Backups to check (file names or paths); all when none are given.", transform: PathArgument.named)
    var backups: [String] = []

    func run() throws {
        let bar = ProgressBar("verifying", global: global)
        // Each backup to check: its name as printed, and how to check it (in a folder, or on S3).
        // (`nil`: the backup was removed since the listing, by a prune or a create's retention.)
        let checks: [(place: String, verify: () throws -> BundleSummary?)]
        if var remote = try Failure.reporting({ try options.remote(warningThrough: global) }) {
            remote.progress = bar.update
            let all = try Failure.reporting { try remote.backups(requiringRepository: true) }
            // A backup named by its object, or by its whole s3:// path as list --json prints it.
            let named = backups.map { String($0.split(separator: "/").last ?? "") }
            if let unknown = named.first(where: { name in !all.contains { $0.object == name } }) {
                try Failure.reporting { throw SaveError(.notFound, file: remote.storage.location + "/" + unknown, "no complete backup of that name, expected one that backup list shows") }
            }
            let repository = remote
            checks = (backups.isEmpty ? all : all.filter { named.contains($0.object) }).map { backup in
                (repository.storage.location + "/" + backup.object, { try repository.verify(backup) })
            }
        } else {
            var engine = options.engine()
            engine.progress = bar.update
            try Failure.reporting { try options.repository.checkExists() }
            let listed = backups.isEmpty
            let paths = listed
                ? try Failure.reporting { try options.repository.backups().map(\.path) }
                : backups.map { $0.contains("/") ? $0 : options.repo + "/" + $0 }
            let local = engine
            checks = paths.map { path in
                (path, {
                    do {
                        return try local.verify(path)
                    } catch where listed && access(path, F_OK) != 0 && errno == ENOENT {
                        return nil
                    }
                })
            }
        }
        // Every backup is checked; the exit code is the first failure's (66 for a backup named
        // that is not there, 65 for one that fails its checks).
        var firstFailure: ExitCode?
        var results: [SaveValue] = []
        for check in checks {
            do {
                guard let summary = try Failure.reporting({
                    defer { bar.finish() }
                    return try check.verify()
                }) else {
                    results.append(["path": .string(check.place), "ok": true, "gone": true])
                    if !global.quiet && !global.json { Console.outputLines(["gone: \(check.place) (removed since the listing, by another run's retention)"]) }
                    continue
                }
                results.append(["path": .string(check.place), "ok": true, "files": .integer(Int64(summary.fileCount))])
                if !global.quiet && !global.json { Console.outputLines(["ok: \(check.place) (\(summary.fileCount) file\(summary.fileCount == 1 ? "" : "s"))"]) }
            } catch let exit as ExitCode {
                results.append(["path": .string(check.place), "ok": false, "exitCode": .integer(Int64(exit.rawValue))])
                firstFailure = firstFailure ?? exit  // the message naming the file and entry is already on stderr
            }
        }
        if global.json { try Console.outputJSON(.array(results)) }
        // Said, not silent: a verify that checked nothing is not a verify that passed.
        if checks.isEmpty && !global.quiet && !global.json { Console.outputLines(["no backups to verify in \(options.repo)"]) }
        if let firstFailure { throw firstFailure }
    }
}
