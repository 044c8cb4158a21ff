import ArgumentParser
import Foundation
import SaveArchive
import SaveKit

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a bundle into a directory, checking every byte before anything lands.",
        discussion: """
            Files a known save kind recognises at an older version are migrated to the current \
            one before they land (--no-migrate imports them as they are); a file that cannot be \
            migrated stops the import.

            The bundle's manifest comes first; every file in it is checked against its size and \
            SHA-256 while being written into a staging directory beside the destination, which \
            then takes the destination's place in one atomic step: a crash leaves the old \
            contents or the new ones, never a mix. What the destination held is first saved as \
            a bundle (beside it, or in --backup-repo), and its path printed.

            Refused, with exit 65 and nothing written: absolute paths, '..', links, devices and \
            FIFOs, duplicates (also in another Unicode normalisation), files not in the manifest \
            or missing from the bundle, sizes or checksums that differ, an unknown manifest \
            format, and bundles past the limits below.

            Restoring a daily backup is importing its file:
              savetool import backups/kape-2026-11-20.tar.gz --into Documents
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The bundle (.tar.gz, .tar.zst, .tar.xz, .tar or .zip).")
    var bundle: String

    @Option(help: ArgumentHelp("The save directory to restore into (created if missing).", valueName: "dir"))
    var into: String

    @Flag(help: "Verify the whole bundle and write nothing.")
    var dryRun = false

    @Flag(help: "Import files as they are, without migrating them to their kind's current version.")
    var noMigrate = false

    @Option(help: ArgumentHelp("Where to save the directory's previous contents (default: beside it).", valueName: "dir"))
    var backupRepo: String?

    @Option(help: ArgumentHelp("The most bytes the files may total.", valueName: "bytes"))
    var maxBytes: Int64 = BundleImporter.Limits().maxTotalBytes

    @Option(help: ArgumentHelp("The most files a bundle may hold.", valueName: "count"))
    var maxEntries: Int = BundleImporter.Limits().maxEntries

    @Option(help: ArgumentHelp("The most bytes of files per byte of bundle.", valueName: "ratio"))
    var maxRatio: Double = BundleImporter.Limits().maxCompressionRatio

    func run() throws {
        try Failure.reporting {
            var importer = BundleImporter(createdBy: "savetool \(SaveTool.version)")
            importer.backupDirectory = backupRepo
            importer.limits.maxTotalBytes = maxBytes
            importer.limits.maxEntries = maxEntries
            importer.limits.maxCompressionRatio = maxRatio
            importer.registry = global.registry()
            if !noMigrate { importer.migrator = Migrator(kinds: try global.kinds()) }
            let outcome = try importer.restore(bundle, into: into, dryRun: dryRun)
            let count = outcome.manifest.files.count
            if global.json {
                var summary: SaveValue = ["bundle": .string(bundle), "into": .string(into), "files": .int(UInt64(count)), "dryRun": .bool(dryRun)]
                if let previous = outcome.previousContents { try summary.setValue(.string(previous), at: JSONPointer(tokens: ["previousContents"])) }
                try Console.outputJSON(summary)
            } else if !global.quiet {
                if dryRun {
                    Console.output("verified \(count) file\(count == 1 ? "" : "s") in \(bundle); nothing written\n")
                } else {
                    Console.output("restored \(count) file\(count == 1 ? "" : "s") into \(into)\n")
                    for file in outcome.migrated { Console.output("migrated \(file.path) from version \(file.from) to \(file.to)\n") }
                    if let previous = outcome.previousContents { Console.output("previous contents saved in \(previous)\n") }
                }
            }
        }
    }
}
