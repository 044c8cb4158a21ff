import ArgumentParser
import Foundation
import SaveArchive
import SaveStorageS3
import SaveKit
import SaveToolCLI

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Restore a bundle into a directory, checking every byte before anything lands.",
        discussion: """
            Every file lands. A file surely of an older version of a save kind (claimed by its \
            path under files/ or by a fingerprint, never by a version field alone) is migrated \
            to the current version on the way in, and listed. A save that is invalid for its \
            schema, cannot be migrated, or is from a newer version lands byte for byte as it was, \
            with a warning naming it and why (exit 0); --strict refuses the whole import \
            instead (exit 65, nothing written). Files no kind claims always land exactly. \
            --no-migrate is an exact restore. --dry-run lists what would be migrated and warned \
            about.

            The bundle's manifest comes first; every file in it is checked against its size and \
            SHA-256 while being written into a staging directory beside the destination, which \
            then takes the destination's place in one atomic step: a crash leaves the old \
            contents or the new ones, never a mix. What the destination held is first saved as \
            a bundle (beside it, or in --backup-repo), and its path printed; when it held what \
            no bundle holds (a FIFO, a link leading out), its old contents are kept whole as a \
            folder beside it instead of removed, and --dry-run names those first.

            What the folder held comes back: folders with their modes and times, links, hard \
            links, extended attributes, sparse files, and owners when run as root (as tar -p; \
            --no-same-owner opts out). setuid and setgid are dropped, with a warning.

            Refused, with exit 65 and nothing written: absolute paths, '..', links leading out \
            of the folder or written through, devices and FIFOs, duplicates (also in another \
            Unicode normalisation), entries not in the manifest or missing from the bundle, \
            sizes or checksums that differ, an unknown manifest format, and bundles past the \
            limits below.

            Restoring a daily backup (savetool backup) is importing its file.

            Examples:
              savetool import /var/backups/saves/Documents-2026-11-20.tar.gz --into Documents
              savetool import prefs-backup.tar.gz --into ~/Library/Preferences --dry-run
              savetool import saves.zip --into Documents --strict --backup-repo /var/backups/saves
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The bundle (.tar.gz, .tar.zst, .tar.xz, .tar or .zip), or - for standard input.", transform: PathArgument.named)
    var bundle: String

    @Option(help: ArgumentHelp("The save directory to restore into (created if missing, with its parents).", valueName: "dir"), transform: PathArgument.named)
    var into: String

    @Flag(help: "Verify the whole bundle and write nothing.")
    var dryRun = false

    @Flag(help: "Import files as they are, without migrating them to their kind's current version.")
    var noMigrate = false

    @Flag(help: "Leave restored files to whoever imports, even as root (by default root restores the recorded owners, as tar -p does).")
    var noSameOwner = false

    @Flag(help: "Refuse the whole import when a save is invalid, cannot be migrated or is from a newer version.")
    var strict = false

    @Option(help: ArgumentHelp("Where to save the directory's previous contents (default: beside it).", valueName: "dir"), transform: PathArgument.named)
    var backupRepo: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("The most bytes the files may total.", valueName: "bytes"))
    var maxBytes: Int64 = BundleImporter.Limits().maxTotalBytes

    @Option(parsing: .unconditional, help: ArgumentHelp("The most entries (files, folders and links) a bundle may hold.", valueName: "count"))
    var maxEntries: Int = BundleImporter.Limits().maxEntries

    @Option(parsing: .unconditional, help: ArgumentHelp("The most bytes of files per byte of bundle, for bundles that write more than 256 MiB.", valueName: "ratio"))
    var maxRatio: Double = BundleImporter.Limits().maxCompressionRatio

    func validate() throws {
        if let backupRepo, S3Location.isRemote(backupRepo) {
            throw ValidationError("--backup-repo \(backupRepo): an s3:// location, expected a folder, where the import keeps what it replaces (back a folder up to S3 with backup create)")
        }
        let limits = [("--max-bytes", "\(maxBytes)", maxBytes >= 1), ("--max-entries", "\(maxEntries)", maxEntries >= 1), ("--max-ratio", "\(maxRatio)", maxRatio > 0)]
        if let (flag, value, _) = limits.first(where: { !$0.2 }) { throw ValidationError("\(flag) \(value), expected a number above 0") }
    }

    func run() throws {
        try Failure.reporting {
            var importer = BundleImporter(createdBy: "savetool \(SaveTool.version)")
            importer.backupDirectory = backupRepo
            importer.limits.maxTotalBytes = maxBytes
            importer.limits.maxEntries = maxEntries
            importer.limits.maxCompressionRatio = maxRatio
            importer.strict = strict
            importer.restoresOwners = !noSameOwner
            if !noMigrate { importer.pipeline = try SavePipeline(kinds: try global.kinds(), registry: global.registry()) }
            let bar = ProgressBar(dryRun ? "verifying" : "importing", global: global)
            importer.progress = bar.update
            let outcome: BundleImporter.Outcome
            do {
                defer { bar.finish() }
                // s3://bucket/prefix/<name>-<date>.tar.gz: a marked backup, downloaded first and
                // then imported exactly as a file on disk is, with every check.
                // What would stop the import where the bundle is not to blame, before a byte
                // of it is downloaded or read.
                try importer.checkPlace(for: into)
                var local = bundle
                var scratch: String?
                defer { if let scratch { try? FileManager.default.removeItem(atPath: scratch) } }
                if S3Location.isRemote(bundle) {
                    let (repository, object) = try RemoteRepository.s3(object: bundle)
                    scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/import")
                    local = try repository.fetch(object, into: scratch!)
                } else if bundle == "-" {
                    // Standard input (`… | savetool import - --into dir`, as `tar -xf -`): kept
                    // in a temporary file first, since every byte is checked before any lands.
                    guard isatty(STDIN_FILENO) == 0 else { throw SaveError(.usage, file: "<stdin>", "standard input is a terminal, expected a bundle piped in") }
                    scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/import")
                    local = scratch! + "/standard-input"
                    let output = try AtomicFileOutput(path: local, durable: false)
                    try FileIO.readChunks(of: STDIN_FILENO, path: "standard input") { try output.write($0) }
                    try output.commit()
                }
                do {
                    outcome = try importer.restore(local, into: into, dryRun: dryRun)
                } catch let error as any CategorizedError where bundle == "-" && Self.names(error, local) {
                    // About the bundle: named as the user named it, not by the temporary file
                    // it was kept in. (Errors about --into keep their own paths.)
                    throw SaveError(error.category, file: "<stdin>", "\(error)".replacingOccurrences(of: local + ": ", with: "").replacingOccurrences(of: local, with: "<stdin>"), hint: error.hint, cause: error)
                }
            }
            let count = outcome.summary.fileCount
            for note in outcome.notes { global.warn("\(into): \(note)") }
            for warning in outcome.warnings {
                global.warn("\(bundle): files/\(ExactFileName.printable(warning.path)): \(warning.result.status.rawValue): \(warning.result.problem ?? ""); \(dryRun ? "would land" : "landed") as it was")
            }
            if global.json {
                func file(_ item: (path: String, result: FileResult)) -> SaveValue {
                    var value: SaveValue = ["path": .string(item.path), "status": .string(item.result.status.rawValue)]
                    if let kind = item.result.kind { try? value.setValue(.string(kind), at: JSONPointer(tokens: ["kind"])) }
                    if let from = item.result.from { try? value.setValue(.int(UInt64(from)), at: JSONPointer(tokens: ["from"])) }
                    if let to = item.result.to { try? value.setValue(.int(UInt64(to)), at: JSONPointer(tokens: ["to"])) }
                    if let problem = item.result.problem { try? value.setValue(.string(problem), at: JSONPointer(tokens: ["problem"])) }
                    return value
                }
                var summary: SaveValue = [
                    "bundle": .string(bundle), "into": .string(into), "files": .int(UInt64(count)), "dryRun": .bool(dryRun),
                    "migrated": .array(outcome.migrated.map(file)), "warnings": .array(outcome.warnings.map(file)),
                ]
                if let previous = outcome.previousContents { try summary.setValue(.string(previous), at: JSONPointer(tokens: ["previousContents"])) }
                try Console.outputJSON(summary)
            } else if !global.quiet {
                let migrated = outcome.migrated.map { item in
                    let result = item.result
                    // A holder whose own version stays may still have had an embedded save
                    // migrated: its steps say which ("/gameSave: blocks.gamesave 1→2").
                    let change = result.from == result.to && !result.steps.isEmpty
                        ? result.steps.joined(separator: ", ") : "from version \(result.from ?? 0) to \(result.to ?? 0)"
                    return "\(dryRun ? "would migrate" : "migrated") \(ExactFileName.printable(item.path)) (\(result.kind ?? "")) \(change)"
                }
                let files = "\(count) file\(count == 1 ? "" : "s")"
                let previous = outcome.previousContents.map { ["previous contents saved in \($0)"] } ?? []
                Console.outputLines(dryRun
                    ? ["verified \(files) in \(bundle); nothing written"] + migrated
                    : ["restored \(files) into \(into)"] + migrated + previous)
            }
        }
    }

    /// Whether `error` is about the file `path` (the bundle), not about the destination.
    private static func names(_ error: any Error, _ path: String) -> Bool {
        switch error {
        case let error as ArchiveError: error.archive == path
        case let error as BundleImportError: error.path == path
        case let error as SaveError: error.file == path || error.message.contains(path)
        default: false
        }
    }
}
