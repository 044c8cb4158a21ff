import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveToolCLI

struct BackupList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the backups, newest first, each verified: date, size, files, status.",
        discussion: """
            Exit 65 when any backup fails to verify; 66 when the repository does not exist.

            Examples:
              savetool backup list --repo /var/backups/saves
              savetool backup list --repo /var/backups/saves --json
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RepositoryOptions

    func run() throws {
        try Failure.reporting {
            if let remote = try options.remote(warningThrough: global) {
                // Marked backups, as their markers describe them; `backup verify` downloads and checks them.
                let backups = try remote.backups(requiringRepository: true)
                if global.json {
                    try Console.outputJSON(.array(backups.map { backup in
                        [
                            "name": .string(backup.name), "date": .string(backup.day.description), "path": .string(remote.storage.location + "/" + backup.object),
                            "size": .integer(backup.size), "files": backup.damage == nil ? .int(UInt64(backup.files)) : .null, "complete": .bool(backup.damage == nil),
                            "sha256": backup.damage == nil ? .string(backup.sha256) : .null, "problem": backup.damage.map(SaveValue.string) ?? .null,
                        ]
                    }))
                } else {
                    let lines = backups.map { backup in
                        "\(backup.day)  \(backup.name)  \(backup.size) bytes  "
                            + (backup.damage.map { "?  FAILS: \($0)" } ?? "\(backup.files) file\(backup.files == 1 ? "" : "s")  complete (marked; backup verify checks it)")
                    }
                    Console.outputLines(lines.isEmpty ? ["no backups in \(options.repo)"] : lines)
                }
                let damaged = backups.filter { $0.damage != nil }.count
                if damaged > 0 {
                    Console.error("savetool: \(options.repo): \(damaged) backup\(damaged == 1 ? " is" : "s are") damaged")
                    throw ExitCode(Failure.Code.dataError)
                }
                return
            }
            let engine = options.engine()
            var rows: [SaveValue] = []
            var lines: [String] = []
            var failed = 0
            for backup in try options.repository.backups() {
                let size = (try? FileManager.default.attributesOfItem(atPath: backup.path)[.size] as? NSNumber)??.int64Value ?? 0
                let result = Result { try engine.verify(backup.path) }
                // Removed since the listing, by a prune or a create of another run: no backup now.
                if case .failure = result, access(backup.path, F_OK) != 0, errno == ENOENT { continue }
                let files = (try? result.get())?.fileCount
                let status = files == nil ? "FAILS: \(result.failureDescription)" : "verified"
                if files == nil { failed += 1 }
                rows.append([
                    "name": .string(backup.name), "date": .string(backup.day.description), "path": .string(backup.path),
                    "size": .integer(size), "files": files.map { .int(UInt64($0)) } ?? .null, "verified": .bool(files != nil),
                ])
                lines.append("\(backup.day)  \(backup.name)  \(size) bytes  \(files.map { "\($0) file\($0 == 1 ? "" : "s")" } ?? "?")  \(status)")
            }
            if global.json {
                try Console.outputJSON(.array(rows))
            } else {
                Console.outputLines(lines.isEmpty ? ["no backups in \(options.repo)"] : lines)
            }
            if failed > 0 {
                Console.error("savetool: \(options.repo): \(failed) backup\(failed == 1 ? "" : "s") failed to verify")
                throw ExitCode(Failure.Code.dataError)
            }
        }
    }
}

extension Result where Failure == any Error {
    var failureDescription: String {
        if case .failure(let error) = self { return "\(error)" }
        return ""
    }
}
