import ArgumentParser
import Foundation
import SaveArchive
import SaveKit

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Daily backups of a save directory: one bundle a day, the last seven kept.",
        discussion: """
            A repository is a directory of bundles named <name>-YYYY-MM-DD.tar.gz. Restoring \
            one is importing it:
              savetool import backups/kape-2026-11-20.tar.gz --into Documents

            Only one savetool works on a repository at a time (.savetool-lock): another waits \
            a few seconds, then exits 75. See docs/backups.md for cron, systemd and launchd.
            """,
        subcommands: [BackupCreate.self, BackupList.self, BackupVerify.self, BackupPrune.self]
    )
}

/// Options the backup commands share.
struct RepositoryOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The backup repository (a directory).", valueName: "dir"))
    var repo: String

    var repository: BackupRepository { BackupRepository(directory: repo) }

    func engine() -> BackupEngine {
        BackupEngine(repository: repository, createdBy: "savetool \(SaveTool.version)")
    }
}

extension BackupRepository.Day: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
