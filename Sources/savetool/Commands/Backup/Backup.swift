import ArgumentParser
import Foundation
import SaveArchive
import SaveStorageS3
import SaveKit
import SaveToolCLI

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Daily backups of a save directory: one bundle a day, the last seven kept.",
        discussion: """
            A repository (--repo) is a directory holding one bundle per source per day, named \
            <name>-<YYYY-MM-DD>.tar.gz: <name> is the source directory's name unless --name \
            gives another, and --compression changes the extension. Each bundle is an \
            ordinary archive with a manifest of checksums; restoring one is importing it.

            create backs up today (local time), then keeps the backups of the last --keep \
            days that have one (default 7) and deletes older ones; a backup dated after today, \
            and any file that is not a savetool bundle, are never deleted. Run again on the \
            same day, it replaces that day's backup when files changed and writes nothing when \
            they did not, so it is safe to run every hour from cron, a systemd timer or launchd.

            Only one savetool works on a repository at a time: each holds the lock file \
            .savetool-lock, and another run waits three seconds, then exits 75 (try again \
            later). More in docs/backups.md of the source repository.

            A repository may also be on S3-compatible object storage: --repo \
            s3://bucket/prefix, with credentials, region and endpoint from AWS_ACCESS_KEY_ID, \
            AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION and AWS_ENDPOINT_URL. There a \
            backup counts once a small marker object naming it and its SHA-256 is written, \
            last; list shows only those, and verify downloads each and checks it. The bundle \
            goes up as it is made, never written to a temporary file. Each run holds a lock \
            object of its own (.savetool-lock-<id>, renewed while it runs, stale after 30 \
            minutes without renewal); another run waits up to ten seconds, then exits 75. \
            Refused credentials exit 77, a missing bucket 66, a server that does not answer 75.

            Examples:
              savetool backup create ~/Library/Preferences --repo /var/backups/saves
              savetool backup create Documents --repo s3://qa-saves/devices/pixel-7
              savetool backup list --repo /var/backups/saves
              savetool import /var/backups/saves/Preferences-2026-11-20.tar.gz --into ~/Library/Preferences
            """,
        subcommands: [BackupCreate.self, BackupList.self, BackupVerify.self, BackupPrune.self]
    )
}

/// Options the backup commands share.
struct RepositoryOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The backup repository: a directory, or s3://bucket/prefix (credentials and endpoint from AWS_* variables).", valueName: "dir|s3://…"), transform: PathArgument.named)
    var repo: String

    var repository: BackupRepository { BackupRepository(directory: repo) }

    func engine() -> BackupEngine {
        BackupEngine(repository: repository, createdBy: "savetool \(SaveTool.version)")
    }

    /// The repository on an object store, or `nil` for a directory; its warnings (a marker
    /// that is not counted, a stale lock taken over) go where `global` prints them.
    func remote(warningThrough global: GlobalOptions) throws -> RemoteRepository? {
        guard S3Location.isRemote(repo) else { return nil }
        var remote = try RemoteRepository.s3(repo)
        remote.warn = { global.warn($0) }
        return remote
    }
}

extension RemoteRepository {
    /// `s3://bucket/prefix`, with the credentials and endpoint of the standard AWS variables.
    static func s3(_ text: String) throws -> RemoteRepository {
        let storage = S3Storage(try S3Location(parsing: text), environment: try AWSEnvironment.current(), forOneRun: true)
        return RemoteRepository(storage: storage, createdBy: "savetool \(SaveTool.version)")
    }

    /// `s3://bucket/prefix/<object>`: the repository it is in, and the object's name.
    static func s3(object text: String) throws -> (repository: RemoteRepository, object: String) {
        // `s3://bucket/exports/` names a prefix, not an object: its key would be `exports/`.
        guard let slash = text.lastIndex(of: "/"), text.distance(from: text.startIndex, to: slash) > "s3:/".count, slash != text.index(before: text.endIndex) else {
            throw SaveError(.usage, file: text, "no object name, expected s3://bucket/prefix/<name>.tar.gz")
        }
        let name = String(text[text.index(after: slash)...])
        guard !text[..<slash].hasSuffix("/"), name != ".", name != ".." else {
            throw SaveError(.usage, file: text, "an empty or dot name before the object's (// . ..), expected names separated by single slashes")
        }
        return (try s3(String(text[..<slash])), name)
    }
}

extension BackupRepository.Day: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
