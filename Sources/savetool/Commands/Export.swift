import ArgumentParser
import Foundation
import SaveArchive
import SaveStorageS3
import SaveKit
import SaveToolCLI

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a save directory into one bundle: an archive with a manifest of checksums.",
        discussion: """
            The bundle holds manifest.json (the size, SHA-256, mode and time of every file, and \
            the codec of those savetool recognises) and then each file under files/. It is an \
            ordinary archive that tar or unzip opens: .tar.gz by default, or as --compression, \
            --zip or the output's extension say.

            The same files give the same bytes: set SOURCE_DATE_EPOCH to fix the manifest's \
            creation time as well. Everything the folder holds is kept: folders (empty ones \
            too) with their modes and times, links inside it, hard links, extended attributes, \
            sparse files, owners, names that are not UTF-8 (byte for byte; not in a zip). \
            FIFOs, sockets, devices and links leading out of the folder are left out with a \
            warning; a name import would refuse (a backslash, NFC and NFD twins) fails the \
            export with its path. The bundle is written under a \
            temporary name and renamed into place when complete; with -o - it goes to \
            standard output as it is made (as tar -cf -), so a failed export leaves a cut \
            stream there, and the exit code says so.

            Examples:
              savetool export Library/Preferences -o prefs-backup.tar.gz --label "before update"
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The save directory.", transform: PathArgument.named)
    var source: String

    @Option(name: .shortAndLong, help: ArgumentHelp("The bundle to write (.tar.gz, .tar.zst, .tar.xz, .tar or .zip), or - for standard output.", valueName: "bundle"), transform: PathArgument.named)
    var output: String

    @Option(help: ArgumentHelp("Compression of a tar bundle.", valueName: "gzip|zstd|xz|none"))
    var compression: ArchiveFormat.Compression?

    @Flag(help: "Write a zip archive instead of tar.")
    var zip = false

    @Option(help: ArgumentHelp("A label stored in the manifest.", valueName: "text"))
    var label: String?

    func run() throws {
        try Failure.reporting {
            var exporter = BundleExporter(createdAt: try Self.creationTime(), createdBy: "savetool \(SaveTool.version)")
            exporter.format = try format()
            exporter.label = label
            exporter.destinationLinks = .follow  // -o names the bundle: a link there is written through
            exporter.registry = global.registry()
            let options = global
            exporter.warn = { options.warn($0) }
            let bar = ProgressBar("exporting", global: global)
            exporter.progress = bar.update
            let summary: BundleSummary
            if S3Location.isRemote(output) {
                // s3://bucket/prefix/<name>: uploaded as it is made, then marked complete (as a
                // backup is), so that `import s3://…` takes it and a cut upload never counts.
                let remote = try RemoteRepository.s3(object: output)
                var manifest: SaveValue?
                do {
                    defer { bar.finish() }
                    summary = try remote.repository.store(directory: source, with: exporter, as: remote.object, manifest: global.json ? { manifest = $0 } : nil)
                }
                if let manifest { try Console.outputJSON(manifest) }
            } else {
                if output == "-" {
                    // As gzip and zstd do: compressed bytes on a terminal help no one.
                    guard isatty(STDOUT_FILENO) == 0 else { throw SaveError(.usage, file: "-", "standard output is a terminal, expected a pipe or a file for the bundle") }
                    guard !global.json else { throw SaveError(.usage, file: "-", "the bundle goes to standard output, where --json would go too; expected one of them") }
                }
                do {
                    defer { bar.finish() }
                    summary = try exporter.export(directory: source, to: output)
                }
                // A bundle that import's default limits would refuse (a folder mostly of zeros
                // compresses past them) is said now, with the flag that restores it.
                var written = stat()
                if output != "-", stat(output, &written) == 0, let needed = BundleImporter.ratioNeeded(for: summary, bundleSize: Int64(written.st_size)) {
                    global.warn("\(output): its files write \(summary.byteCount) bytes from a \(written.st_size)-byte bundle, more than import lets in by default (--max-ratio 200); restore it with --max-ratio \(needed)")
                }
                // The manifest as written, read back from the bundle.
                if global.json { try Console.outputJSON(BundleImporter(createdBy: "").manifest(of: output).value) }
            }
            if !global.json && !global.quiet {
                let line = "exported \(summary.fileCount) file\(summary.fileCount == 1 ? "" : "s") (\(summary.byteCount) bytes) from \(source) to \(output == "-" ? "standard output" : output)"
                // The bundle itself is on standard output: the summary goes beside it, on stderr.
                if output == "-" { Console.error(line) } else { Console.outputLines([line]) }
            }
        }
    }

    /// The format from the flags and the output's name, which must agree: a `.tar.gz` holding
    /// zstd, or gzip under `.tar.bz2`, would mislead every tool that opens it.
    private func format() throws -> ArchiveFormat {
        let named = ArchiveFormat(path: output)
        if named == nil, let written = ArchiveCodec.readOnlyExtension(of: output) {
            throw ValidationError("-o \(output): savetool reads .\(written) archives but does not write them, expected .tar.gz, .tar.zst, .tar.xz, .tar or .zip")
        }
        // `-o save.json` by a slip of the fingers would put a bundle in place of the save. A
        // bundle there (last night's, named without an extension) is replaced, as tar -cf
        // replaces; a FIFO or a device (`-o /dev/null`) is written through.
        var existing = stat()
        if named == nil, output != "-", !S3Location.isRemote(output), stat(output, &existing) == 0, existing.st_mode & S_IFMT == S_IFREG,
            !BackupRepository.isBundle(output)
        {
            throw ValidationError("-o \(output) is there already, is not a bundle and is not named as one, and export would write over it whole; expected a name ending .tar.gz, .tar.zst, .tar.xz, .tar or .zip (or remove it first)")
        }
        if zip {
            guard compression == nil else { throw ValidationError("--zip and --compression do not go together: zip compresses each file itself") }
            if let named, named != .zip { throw ValidationError("--zip and -o \(output) disagree, expected a .zip name") }
            return .zip
        }
        if let compression {
            if let named, named != .tar(compression) {
                throw ValidationError("--compression \(compression.rawValue) and -o \(output) disagree, expected a .\(ArchiveFormat.tar(compression).fileExtension) name (or no --compression)")
            }
            return .tar(compression)
        }
        return named ?? .tar(.gzip)
    }

    /// `SOURCE_DATE_EPOCH` when set (reproducible builds' convention), else now. A value that
    /// is no time (not whole seconds, or past the year 9999) is refused: ignored, it would make
    /// a bundle that is not the reproducible one asked for.
    static func creationTime() throws -> Date {
        guard let text = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"] else { return Date() }
        guard let seconds = Int64(text), (0...253_402_300_799).contains(seconds) else {
            throw ValidationError("SOURCE_DATE_EPOCH=\(text), expected whole seconds since 1970 (0 to 253402300799)")
        }
        return Date(timeIntervalSince1970: Double(seconds))
    }
}

extension ArchiveFormat.Compression: ExpressibleByArgument {}
