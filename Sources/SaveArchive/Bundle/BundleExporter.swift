import CSaveToolSystem
import Crypto
import Foundation
import OrderedCollections
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a save directory as a bundle: `manifest.json`, then each file under `files/`.
///
/// The manifest, with every file's checksum, comes first in the bundle, but is known only
/// once every file is read. A tar bundle is therefore written in one pass, as tar writes: each
/// file is read once, checksummed and compressed into a spool beside the destination, while
/// the manifest's entries are compressed into a second spool; then the bundle is the
/// manifest's tar header and first lines (which declare its totals), compressed on their own,
/// followed by the two spools (a compressed tar is
/// read as one stream across such parts: gzip members, zstd frames and xz streams follow one
/// another). A zip bundle, a bundle sent to an upload as it is made, and a backup compared with
/// the day's before it is written read the files twice: once to describe them, once to copy
/// them; a tar bundle written so has the same three streams, and the same bytes.
///
/// A file that changes while it is read (its size, times or inode differ before and after, or
/// between the two reads; the change time cannot be set back) fails the export rather than
/// landing with a checksum that does not match. The bundle is written under a temporary name
/// beside its destination and renamed into place only when complete. The same files and
/// `createdAt` give the same bytes.
public struct BundleExporter: Sendable {
    public var format: ArchiveFormat = .tar(.gzip)
    public var label: String?
    /// What a replacing write does with a link at the destination: a bundle the user names is
    /// written through it (``LinkPolicy/follow``); a backup repository's own files replace one.
    public var destinationLinks: LinkPolicy = .replace
    /// The manifest's `createdAt`, also the time of the `manifest.json` entry.
    public var createdAt: Date
    public var createdBy: String
    public var registry: CodecRegistry = .builtIn
    /// The manifest's `source`; the source folder's name when `nil`. A bundle made from a
    /// folder savetool staged names what it was made from instead.
    public var sourceName: String?
    /// Recorded in the manifest as `sourcePath` (backups set it).
    public var sourcePath: String?
    /// Paths relative to the source that are left out, with everything below them (a backup
    /// repository inside the folder it backs up).
    public var excluded: Set<String> = []
    /// The files and folders whose modes, besides the entries', limit who may read the bundle:
    /// by default the source folder itself (a 0700 folder gives a 0600 bundle). A bundle of a
    /// folder savetool staged names what it was made from instead (a merge's copies), since the
    /// staging folder's private mode says nothing of what it holds.
    public var readersLimitedBy: [String]?
    /// The bundle file's mode, where the caller decides it (a bundle written over another
    /// keeps that one's); else as ``readersLimitedBy`` says.
    public var mode: mode_t?
    /// Told of what a bundle cannot hold and is left out: FIFOs, sockets, devices.
    public var warn: @Sendable (String) -> Void = { _ in }
    /// Told of the work done, after every entry (first checksumming, then writing).
    public var progress: @Sendable (WorkProgress) -> Void = { _ in }

    public init(createdAt: Date, createdBy: String) {
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    /// Writes everything under `source` as a bundle; with `replacing` false, as ``export(files:under:to:replacing:)`` says.
    @discardableResult
    public func export(directory source: String, to destination: String, replacing: Bool = true) throws -> BundleSummary {
        try FileIO.requireNonEmpty(source, expected: "the save folder to export")
        let root = Self.trimmed(source)
        var walk = try Walk(root: root, exporter: self)
        if let place = Self.place(of: destination, in: source, links: destinationLinks).map(ExactFileName.carried) {
            let parts = place.split(separator: "/", omittingEmptySubsequences: false)
            walk.bundle = (place, parts.dropLast().joined(separator: "/"), "." + parts.last! + ".savetool-")
        }
        return try export(root: root, next: { try walk.next() }, to: destination, replacing: replacing)
    }

    /// Writes the files at the relative `paths` under `root` as a bundle, with the folders
    /// between them and the root (not what else those hold). With `replacing` false
    /// the bundle is created exclusively: an existing file at `destination` is never replaced,
    /// and ``BundleError/exists(_:)`` is thrown instead. A path that is a link to a file is kept
    /// as the file it leads to: these are the originals of files about to be written, and a
    /// write goes through a link.
    @discardableResult
    public func export(files paths: [String], under root: String, to destination: String, replacing: Bool) throws -> BundleSummary {
        // The folders between the root and the files kept others out of the files: a 0644 save
        // in a 0700 folder gives a 0600 bundle.
        var exporter = self
        var folders: Set<String> = []
        for path in paths {
            var folder = FileIO.parentDirectory(of: path)
            while folder != "." && folder != "/" && folders.insert(folder).inserted { folder = FileIO.parentDirectory(of: folder) }
        }
        exporter.readersLimitedBy = (readersLimitedBy ?? [root]) + folders.sorted().map { root + "/" + $0 }
        // Paths from the caller are text; names below the root travel as ExactFileName carries them.
        let root = ExactFileName.carried(root)
        var entries = paths.map { Walked(relative: ExactFileName.carried($0), type: .file, followsLink: true) }
        // The folders on the way are kept too, with their modes, times and attributes: imported
        // into a folder of its own, the bundle then makes them as they were, not as new folders
        // (dated now, as the umask allows) that a `cp -a` of the originals back would spread.
        // A link on the way is followed, as for the files, and not kept.
        for folder in folders {
            let relative = ExactFileName.carried(folder)
            var info = stat()
            guard ExactFileName.withSystemPath(root + "/" + relative, { lstat($0, &info) }) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            entries.append(Walked(relative: relative, type: .directory))
        }
        var sorted = entries.sorted { $0.relative.utf8.lexicographicallyPrecedes($1.relative.utf8) }
        sorted.reverse()
        return try exporter.export(root: root, next: { sorted.popLast() }, to: destination, replacing: replacing)
    }

    /// Writes the entries `next` yields as a bundle at `destination`: in one pass for tar, unless
    /// the destination is a device or a FIFO (`-o /dev/null`), or `-` (standard output, as tar's
    /// `-f -`), which have no room beside them for the one pass's spool: the files are then read
    /// twice.
    private func export(root: String, next: () throws -> Walked?, to destination: String, replacing: Bool) throws -> BundleSummary {
        guard case .tar = format, destination != "-", !FileIO.isSpecialFile(destination) else {
            let described = try describe(root: root, observe: { _ in }, next: next)
            try write(described, to: destination, replacing: replacing)
            return described.summary
        }
        return try writeInOnePass(root: root, next: next, to: destination, replacing: replacing)
    }

    /// Where the bundle lands relative to `root`, when inside it (`export saves -o
    /// saves/backup.tar.gz`): the walk leaves it out, as tar leaves out its own archive, and
    /// its temporary files beside it; else a second export would hold the first.
    static func place(of destination: String, in root: String, links: LinkPolicy) -> String? {
        guard destination != "-", let landing = try? FileIO.destination(of: destination, links: links),
            let folder = FileIO.realPath(FileIO.parentDirectory(of: landing)), let top = FileIO.realPath(root)
        else { return nil }
        let name = landing.split(separator: "/").last.map(String.init) ?? landing
        if folder == top { return name }
        guard folder.hasPrefix(top == "/" ? "/" : top + "/") else { return nil }
        return String(folder.dropFirst(top == "/" ? 1 : top.count + 1)) + "/" + name
    }

    /// The folder to walk, without a final slash, as ``ExactFileName`` carries it (a folder
    /// named by the caller is text; what the walk adds below it is carried so too).
    private static func trimmed(_ source: String) -> String {
        ExactFileName.carried(source.hasSuffix("/") && source.count > 1 ? String(source.dropLast()) : source)
    }

    /// Walks `source` as an export would, reading no file: ``warn`` is told what a bundle of
    /// it would leave out.
    func walk(directory source: String) throws {
        var walk = try Walk(root: Self.trimmed(source), exporter: self)
        while try walk.next() != nil {}
    }

    /// Describes everything under `source` into a spooled manifest, calling `observe` with each
    /// entry in the bundle's order (a backup compares them with its last bundle's as they come).
    func describe(directory source: String, observe: (BundleManifest.File) throws -> Void = { _ in }) throws -> DescribedSource {
        let root = Self.trimmed(source)
        var walk = try Walk(root: root, exporter: self)
        return try describe(root: root, observe: observe, next: { try walk.next() })
    }

    /// A source described: the manifest's bytes (spooled, or compressed as they come), and for
    /// each file, in order, the identity it had when it was checksummed, so that the copy can be
    /// checked against it.
    final class DescribedSource {
        let root: String
        /// The manifest's entries, when they are spooled to be written after the whole source
        /// is described; its header, which declares their totals, is made once they are known.
        private let entriesSpool = Spool()
        private let header: BundleManifest
        /// The manifest's first lines, every member but the entries of `files`; known once
        /// ``finish()`` has run.
        private(set) var headerBytes: [UInt8] = []
        /// The manifest's data, in one pass: compressed as each entry is described, on a thread
        /// of its own, where it was compressed after everything else (7% of an export's time
        /// at 100,000 files, with the other core idle).
        private let stream: TarEntryStream?
        let identities = Spool()
        var summary: BundleSummary
        /// The entries, for the second pass (held, or as records).
        private var builder = ManifestEntries.Builder()
        /// The first path of each file with several links.
        private var firstLinks: [InodeKey: String] = [:]
        /// Who else could read what the bundle holds, where it was: a bundle is never readable
        /// by more people than its contents were (a 0600 save or a 0700 folder gives a 0600
        /// bundle), as `cp` keeps a file's mode.
        private(set) var readableByGroup = true, readableByOthers = true
        /// Likewise who else could change it: a bundle others may rewrite only if they could
        /// rewrite what it holds (a umask of 000 no longer makes a 0640 folder's bundle 0660).
        private(set) var writableByGroup = true, writableByOthers = true

        /// Starts a manifest with `header`'s members; its entries go into `stream` if there is one.
        init(root: String, header: BundleManifest, stream: TarEntryStream? = nil, readersLimitedBy limits: [String] = []) {
            (self.root, self.header, summary, self.stream) = (root, header, header.summary, stream)
            for path in limits {
                var info = stat()
                guard ExactFileName.withSystemPath(path, { stat($0, &info) }) == 0 else { continue }
                noteReaders(of: info.st_mode & S_IFMT == S_IFDIR ? .directory : .file, mode: UInt16(info.st_mode & 0o7777))
            }
        }

        /// The mode of the bundle file: a new file's, less what its contents did not allow.
        var bundleMode: mode_t {
            FileIO.newFileMode & (0o600 | (readableByGroup ? 0o040 : 0) | (readableByGroup && writableByGroup ? 0o020 : 0)
                | (readableByOthers ? 0o004 : 0) | (readableByOthers && writableByOthers ? 0o002 : 0))
        }

        private func noteReaders(of type: BundleManifest.File.EntryType, mode: UInt16) {
            switch type {
            case .file:
                readableByGroup = readableByGroup && mode & 0o040 != 0
                readableByOthers = readableByOthers && mode & 0o004 != 0
                writableByGroup = writableByGroup && mode & 0o020 != 0
                writableByOthers = writableByOthers && mode & 0o002 != 0
            case .directory:
                // A folder others cannot both list and enter keeps what is inside from them.
                readableByGroup = readableByGroup && mode & 0o050 == 0o050
                readableByOthers = readableByOthers && mode & 0o005 == 0o005
                writableByGroup = writableByGroup && mode & 0o020 != 0
                writableByOthers = writableByOthers && mode & 0o002 != 0
            case .symlink, .hardlink:
                break
            }
        }

        private func append(_ bytes: [UInt8]) throws {
            if let stream { try stream.write(bytes) } else { try entriesSpool.append(contentsOf: bytes) }
        }

        /// The manifest's size in bytes, once finished.
        var manifestSize: Int64 { Int64(headerBytes.count) + (stream?.count ?? Int64(entriesSpool.count)) }

        /// The whole manifest, a piece at a time, once finished (without ``stream``).
        func forEachManifestChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
            try headerBytes.withUnsafeBytes(body)
            try forEachEntriesChunk(body)
        }

        /// The manifest after its header, a piece at a time, once finished (without ``stream``).
        func forEachEntriesChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
            try entriesSpool.forEachChunk(body)
        }

        var entries: ManifestEntries { builder.entries }

        /// Makes a later path of a file with several links a hard link to the first, whose
        /// data alone is stored.
        func linkToFirstPath(_ file: inout BundleManifest.File, _ info: stat) {
            guard let target = earlierPath(of: file, info) else { return }
            (file.type, file.target, file.size, file.sha256, file.codec, file.sparse) = (.hardlink, target, 0, "", nil, false)
        }

        /// The path described before that shares this file's data (a hard link), if any; the
        /// first path of each file with several is remembered.
        func earlierPath(of file: BundleManifest.File, _ info: stat) -> String? {
            guard file.type == .file, info.st_nlink > 1 else { return nil }
            let key = InodeKey(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            if let target = firstLinks[key] { return target }
            firstLinks[key] = file.path
            return nil
        }

        /// Adds an entry to the manifest and the totals, and with `keeping`, to the entries a
        /// second pass goes through.
        func add(_ file: BundleManifest.File, keeping: Bool = true) throws {
            try append(BundleManifest.encodedEntry(file, first: summary.entryCount == 0))
            noteReaders(of: file.type, mode: file.mode)
            summary.add(file)
            if keeping { try builder.append(file) }
        }

        /// Ends the manifest (and its stream), and makes its header, with the totals.
        func finish() throws {
            try append(BundleManifest.encodedEnd(empty: summary.entryCount == 0))
            headerBytes = try header.encodedHeader(totals: ManifestTotals(summary))
            try stream?.finish(after: headerBytes.count)
        }
    }

    /// What limits who may read the bundle besides its entries: the paths whose modes limit
    /// the bundle's (the caller's, as text), spelled as ``ExactFileName`` carries them.
    private func readerLimits(root: String) -> [String] {
        readersLimitedBy?.map(ExactFileName.carried) ?? [root]
    }

    private func header(root: String) -> BundleManifest {
        // The folder's name as text (a name holding U+EF80 as itself, a byte that is not UTF-8 as U+FFFD).
        let sourceName = self.sourceName ?? String(decoding: ExactFileName.bytes(of: URL(fileURLWithPath: root).standardizedFileURL.lastPathComponent), as: UTF8.self)
        return BundleManifest(createdAt: createdAt, createdBy: createdBy, label: label, source: sourceName, sourcePath: sourcePath, files: [])
    }

    /// Describes the entries `next` yields, a batch at a time on every core, into the manifest.
    private func describe(root: String, observe: (BundleManifest.File) throws -> Void, next: () throws -> Walked?) throws -> DescribedSource {
        let described = DescribedSource(root: root, header: header(root: root), readersLimitedBy: readerLimits(root: root))
        var batch: [Walked] = []
        var finished = false
        while !finished {
            batch.removeAll(keepingCapacity: true)
            while batch.count < Self.batchSize, let walked = try next() { batch.append(walked) }
            finished = batch.count < Self.batchSize
            for (file, info) in try describeInParallel(batch, root: root) {
                var file = file
                // A zip holds no hard links (libarchive writes an empty file for one, which import
                // then refuses): in a zip, each name of a file is a copy of it.
                if case .tar = format {
                    described.linkToFirstPath(&file, info)
                } else if let first = described.earlierPath(of: file, info) {
                    warn("\(ExactFileName.printable(file.path)): a hard link to \(ExactFileName.printable(first)), kept as a copy (a zip holds no hard links; a .tar.gz or .tar.zst bundle keeps them)")
                }
                if file.type == .file { try described.identities.append(contentsOf: FileIdentity(info).record) }
                try described.add(file)
                try observe(file)
            }
            progress(WorkProgress(phase: .checksumming, entries: described.summary.entryCount, bytes: described.summary.byteCount))
        }
        try described.finish()
        return described
    }

    /// Writes the entries `next` yields as a tar bundle, reading each file once (see the type's
    /// description): the files' entries into a spool beside the destination as they are
    /// described, the manifest's entries into a second one; then the manifest's header, then
    /// the two spools.
    ///
    /// All on this thread, with the compressor on its own. Describing and reading ahead on a
    /// third thread was tried and measured: with both cores busy it gained 0–3% (10,000 and
    /// 100,000 files) for 8–10 MiB more memory.
    private func writeInOnePass(root: String, next: () throws -> Walked?, to destination: String, replacing: Bool) throws -> BundleSummary {
        guard case .tar(let compression) = format else { preconditionFailure("one pass is for tar bundles") }
        // The bundle's own temporary file is made only once the walk is over: a bundle written
        // inside the folder it holds must not find it there. The spools are unlinked at once:
        // nothing to leave behind, even after a kill.
        let (spool, spoolPath) = try Self.temporaryFile(beside: destination)
        unlink(spoolPath)
        defer { close(spool) }
        let (manifestSpool, manifestSpoolPath) = try Self.temporaryFile(beside: destination)
        unlink(manifestSpoolPath)
        defer { close(manifestSpool) }
        let manifestData = try TarEntryStream(
            into: ArchiveOutput(descriptor: manifestSpool, earlyWriteback: false), name: destination, compression: compression, zstdWorker: false)
        let described = DescribedSource(root: root, header: header(root: root), stream: manifestData, readersLimitedBy: readerLimits(root: root))
        let files = try ArchiveWriter(output: ArchiveOutput(descriptor: spool, earlyWriteback: false), name: destination, format: format)
        var written = WorkProgress(phase: .writing, entries: 0, bytes: 0)
        var folders = OpenFolder(root: root)
        defer { folders.close() }
        while let walked = try next() {
            let path = ExactFileName.path(root, walked.relative)
            var file: BundleManifest.File
            if walked.type == .file {
                // Opened by its name in its open folder and described by its descriptor: one
                // short lookup, where a full path for each of lstat, llistxattr and open took
                // 15% of a 100,000-file export's samples.
                let descriptor = try folders.open(walked.relative, path: path, following: walked.followsLink)
                defer { Glibc.close(descriptor) }
                var info: stat
                (file, info) = try entry(opened: descriptor, at: path, as: walked)
                described.linkToFirstPath(&file, info)
                try files.begin(Self.archiveEntry(for: file))
                if file.type == .file { try readContents(of: path, opened: descriptor, into: &file, as: info) { try files.write($0) } }
            } else {
                (file, _) = try entry(at: path, as: walked)
                try files.begin(Self.archiveEntry(for: file))
            }
            try described.add(file, keeping: false)  // no second pass
            written.entries += 1
            written.bytes += file.size
            progress(written)
        }
        try files.close()
        try described.finish()
        try writeFile(at: destination, replacing: replacing, mode: mode ?? described.bundleMode) { descriptor in
            try TarEntryStream.writeHeader(
                manifestEntry(described), followedBy: described.headerBytes, into: ArchiveOutput(descriptor: descriptor), name: destination, compression: compression)
            // The spools' blocks are given back as they are copied: the export never needs much
            // more room than the bundle itself.
            for part in [manifestSpool, spool] {
                let failure = savetool_append_file(part, descriptor, 1)
                guard failure == 0 else { throw BundleError.ioFailure(path: destination, reason: FileError.reason(failure)) }
            }
        }
        return described.summary
    }

    /// A tar bundle's first two streams: the manifest's tar header with the manifest's own
    /// header, then its entries, each compressed on its own (the files' stream after them goes
    /// on with the same archive).
    private func writeManifest(_ described: DescribedSource, into output: ArchiveOutput, name destination: String, compression: ArchiveFormat.Compression) throws {
        try TarEntryStream.writeHeader(manifestEntry(described), followedBy: described.headerBytes, into: output, name: destination, compression: compression)
        let data = try TarEntryStream(into: output, name: destination, compression: compression, zstdWorker: false)
        try described.forEachEntriesChunk { try data.write($0) }
        try data.finish(after: described.headerBytes.count)
    }

    /// The manifest's entry: the archive's first.
    private func manifestEntry(_ described: DescribedSource) -> ArchiveEntryInfo {
        .file("manifest.json", size: described.manifestSize, permissions: 0o644, modified: createdAt)
    }

    /// The manifest as the archive's first entry.
    private func writeManifestEntry(_ described: DescribedSource, with writer: ArchiveWriter) throws {
        try writer.begin(manifestEntry(described))
        try described.forEachManifestChunk { try writer.write($0) }
    }

    /// Entries described together: enough to keep both cores busy, few enough to hold.
    static let batchSize = 512

    // MARK: - Reading the source

    /// One entry found under the source: its path relative to it, and what it is.
    struct Walked: Sendable {
        var relative: String
        var type: BundleManifest.File.EntryType
        /// A file named by the caller (the originals of files about to be written through a
        /// link): its link is followed, and what it leads to is kept.
        var followsLink = false
    }

    /// Every directory, regular file and symbolic link below a root (a link is kept as a link,
    /// never followed), in the bundle's order, by their paths' UTF-8 bytes, one directory
    /// listing held at a time per level. FIFOs, sockets and devices are left out with a
    /// warning, as tar does. A name that `import` would refuse is refused here, with its path: a
    /// bundle is never written that the documented import cannot restore.
    ///
    /// In byte order, a directory `a` comes before `a.b` and `a-b`, but what it holds comes
    /// after them (`a/x` sorts as `a/`): so a directory is two items in its parent's listing,
    /// itself under its name and its contents under its name and a slash.
    struct Walk {
        private enum Item {
            case entry(Walked)
            case contents(String)
        }

        private let root: String
        private let exporter: BundleExporter
        /// ``BundleExporter/excluded``, spelled as the walk spells paths (``ExactFileName``).
        private let excluded: Set<String>
        /// Per level, what is left of a directory's listing, largest key first.
        private var levels: [[Item]]
        /// The bundle being written, when it lands inside `root`: its path relative to `root`,
        /// its folder's, and the start of the names of its temporary files there.
        var bundle: (path: String, folder: String, temporaryPrefix: String)?

        init(root: String, exporter: BundleExporter) throws {
            var info = stat()
            guard ExactFileName.withSystemPath(root, { stat($0, &info) }) == 0 else { throw BundleError.unreadable(path: root, reason: FileError.reason(errno)) }
            guard info.st_mode & S_IFMT == S_IFDIR else { throw BundleError.notADirectory(root) }
            (self.root, self.exporter, levels) = (root, exporter, [[.contents("")]])
            excluded = Set(exporter.excluded.map(ExactFileName.carried))
        }

        mutating func next() throws -> Walked? {
            while !levels.isEmpty {
                guard let item = levels[levels.count - 1].popLast() else {
                    levels.removeLast()
                    continue
                }
                switch item {
                case .entry(let walked): return walked
                case .contents(let relative): levels.append(try listing(of: relative))
                }
            }
            return nil
        }

        /// A directory's items, sorted by key, largest first.
        private func listing(of relative: String) throws -> [Item] {
            let directory = relative.isEmpty ? root : root + "/" + relative
            var items: [(key: [UInt8], item: Item)] = []
            // Swift compares canonically: an NFC and an NFD name collide here. Only a name that
            // another spelling could equal is kept (hashing every name canonically cost more
            // than the rest of the walk).
            var seen = Set<String>()
            var info = stat()
            for (name, direntType) in try BundleExporter.names(in: directory) {
                let child = relative.isEmpty ? name : ExactFileName.path(relative, name)
                var path: String { ExactFileName.path(root, child) }  // for messages and the rare lstat
                if let bundle, child == bundle.path || (relative == bundle.folder && name.hasPrefix(bundle.temporaryPrefix)) {
                    if child == bundle.path { exporter.warn("\(ExactFileName.printable(path)): the bundle being written, left out") }
                    continue
                }
                if let problem = BundleImporter.unsafePathReason(child) { throw BundleError.unsupportedEntry(path: path, kind: problem) }
                if case .zip = exporter.format, ExactFileName.isNotUTF8(name) {
                    // A zip names entries in UTF-8 or in a code page it does not record: no way
                    // to keep these bytes that every reader agrees on.
                    throw BundleError.unsupportedEntry(path: path, kind: "a name that is not UTF-8, which a zip bundle cannot hold; expected UTF-8 names (a .tar.gz or .tar.zst bundle keeps it byte for byte)")
                }
                guard !ManifestChecks.mayEqualAnotherSpelling(name) || seen.insert(name).inserted else {
                    throw BundleError.unsupportedEntry(path: path, kind: "a name that another in its folder equals once Unicode-normalised (NFC and NFD), which many file systems cannot hold apart; expected names that differ (rename one)")
                }
                // The type readdir gave saves an lstat per file; describing checks it again.
                switch direntType {
                case UInt8(DT_REG): info.st_mode = S_IFREG
                case UInt8(DT_DIR): info.st_mode = S_IFDIR
                default: guard ExactFileName.withSystemPath(path, { lstat($0, &info) }) == 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
                }
                switch info.st_mode & S_IFMT {
                case S_IFREG: items.append((Array(name.utf8), .entry(Walked(relative: child, type: .file))))
                case S_IFDIR:
                    guard !excluded.contains(child) else { continue }
                    items.append((Array(name.utf8), .entry(Walked(relative: child, type: .directory))))
                    items.append((Array(name.utf8) + [UInt8(ascii: "/")], .contents(child)))
                case S_IFLNK:
                    // A link that leads out of the folder is no part of it, and import refuses one:
                    // left out, with a warning, rather than failing the whole backup.
                    let target = BundleExporter.linkTarget(path)
                    if let problem = target.flatMap({ BundleImporter.symbolicLinkProblem(child, $0) }) {
                        exporter.warn("\(ExactFileName.printable(path)): \(ExactFileName.oneLine(problem)); left out")
                        continue
                    }
                    if case .zip = exporter.format, let target, ExactFileName.isNotUTF8(target) {
                        throw BundleError.unsupportedEntry(path: path, kind: "a link to a name that is not UTF-8, which a zip bundle cannot hold; expected UTF-8 names (a .tar.gz or .tar.zst bundle keeps it byte for byte)")
                    }
                    items.append((Array(name.utf8), .entry(Walked(relative: child, type: .symlink))))
                case S_IFIFO: exporter.warn("\(ExactFileName.printable(path)): a FIFO, left out (a bundle holds files, folders and links)")
                case S_IFSOCK: exporter.warn("\(ExactFileName.printable(path)): a socket, left out (a bundle holds files, folders and links)")
                default: exporter.warn("\(ExactFileName.printable(path)): a device, left out (a bundle holds files, folders and links)")
                }
            }
            items.sort { $1.key.lexicographicallyPrecedes($0.key) }
            return items.map(\.item)
        }
    }

    /// A symbolic link's target, byte for byte (``ExactFileName``).
    static func linkTarget(_ path: String) -> String? {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = ExactFileName.withSystemPath(path) { readlink($0, &target, target.count - 1) }
        guard count >= 0 else { return nil }
        return ExactFileName.string(target.prefix(count).map { UInt8(bitPattern: $0) })
    }

    /// The names in a directory, byte for byte (``ExactFileName``: a name that is not UTF-8
    /// is kept as it is, as tar keeps it), with the type `readdir` gives (`DT_UNKNOWN` where
    /// the file system does not say).
    static func names(in directory: String) throws -> [(name: String, type: UInt8)] {
        let entries: [(bytes: [UInt8], type: UInt8)]
        do { entries = try FileIO.entries(inExactPath: directory) } catch {
            guard case .unreadable(_, let reason) = error else { throw error }
            throw BundleError.unreadable(path: directory, reason: reason)
        }
        return entries.map { (ExactFileName.string($0.bytes), $0.type) }
    }

    struct InodeKey: Hashable { var device: UInt64, inode: UInt64 }

    /// Checksums the files on every core: the manifest comes first in the bundle, so all of
    /// them are read once before any is written, and that pass is worth sharing out.
    private func describeInParallel(_ paths: [Walked], root: String) throws -> [(file: BundleManifest.File, info: stat)] {
        let exporter = self
        return try paths.parallelMap(jobs: Swift.min(ProcessInfo.processInfo.activeProcessorCount, 8)) { walked in
            try exporter.describe(walked, under: root)
        }
    }

    /// What identifies one version of a file: a write changes the size, the modification or
    /// the change time, and replacing the file changes the inode.
    struct FileIdentity: Equatable, Sendable {
        var device: UInt64, inode: UInt64, size: Int64, links: UInt64
        var modified: timespec, changed: timespec

        init(_ info: stat) {
            links = UInt64(info.st_nlink)
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = info.st_mtim
            changed = info.st_ctim
        }

        /// Sixty-four bytes, as ``DescribedSource/identities`` keeps them.
        var record: [UInt8] {
            withUnsafeBytes(of: (device, inode, size, links, Int64(modified.tv_sec), Int64(modified.tv_nsec), Int64(changed.tv_sec), Int64(changed.tv_nsec))) { Array($0) }
        }
        static let recordSize = 64

        init(record: UnsafeRawBufferPointer) {
            func field<T>(_ index: Int, as type: T.Type) -> T { record.loadUnaligned(fromByteOffset: index * 8, as: T.self) }
            (device, inode, size, links) = (field(0, as: UInt64.self), field(1, as: UInt64.self), field(2, as: Int64.self), field(3, as: UInt64.self))
            modified = timespec(tv_sec: time_t(field(4, as: Int64.self)), tv_nsec: Int(field(5, as: Int64.self)))
            changed = timespec(tv_sec: time_t(field(6, as: Int64.self)), tv_nsec: Int(field(7, as: Int64.self)))
        }

        static func == (a: FileIdentity, b: FileIdentity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    private func describe(_ walked: Walked, under root: String) throws -> (file: BundleManifest.File, info: stat) {
        let path = root + "/" + walked.relative
        if walked.type == .file && ExactFileName.systemLength(of: path) >= PATH_MAX {
            // Too long for one path, as a save folder deep inside another can be: opened by its
            // name in its folder, as the one-pass export opens every file.
            var folders = OpenFolder(root: root)
            defer { folders.close() }
            let descriptor = try folders.open(walked.relative, path: path, following: walked.followsLink)
            defer { close(descriptor) }
            var (file, info) = try entry(opened: descriptor, at: path, as: walked)
            try readContents(of: path, opened: descriptor, into: &file, as: info, copying: nil)
            return (file, info)
        }
        var (file, info) = try entry(at: path, as: walked)
        if walked.type == .file { try readContents(of: path, into: &file, as: info, copying: nil) }
        return (file, info)
    }

    /// An entry as `lstat` and the extended attributes describe it; a file's size, checksum
    /// and codec come from ``readContents(of:into:as:copying:)``.
    private func entry(at path: String, as walked: Walked) throws -> (file: BundleManifest.File, info: stat) {
        var info = stat()
        guard ExactFileName.withSystemPath(path, { walked.followsLink ? stat($0, &info) : lstat($0, &info) }) == 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
        var file = BundleManifest.File(
            path: walked.relative, type: walked.type, mode: UInt16(info.st_mode & 0o7777), modified: Timestamp(info.st_mtim),
            owner: (UInt32(info.st_uid), UInt32(info.st_gid)))
        file.xattrs = try Self.xattrs(of: path)
        switch walked.type {
        case .directory, .hardlink:
            break
        case .symlink:
            guard let text = Self.linkTarget(path) else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
            file.target = text
        case .file:
            guard info.st_mode & S_IFMT == S_IFREG else { throw BundleError.changedDuringExport(path: path) }
            file.size = Int64(info.st_size)
        }
        return (file, info)
    }

    /// A regular file's entry, as `fstat` and the extended attributes of its open descriptor
    /// describe it.
    private func entry(opened descriptor: Int32, at path: String, as walked: Walked) throws -> (file: BundleManifest.File, info: stat) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw BundleError.changedDuringExport(path: path) }
        var file = BundleManifest.File(
            path: walked.relative, type: .file, size: Int64(info.st_size), mode: UInt16(info.st_mode & 0o7777), modified: Timestamp(info.st_mtim),
            owner: (UInt32(info.st_uid), UInt32(info.st_gid)))
        file.xattrs = try Self.xattrs(of: path, descriptor: descriptor)
        return (file, info)
    }

    /// The folder of the files being exported, kept open while the walk is in it, so that each
    /// file is opened by its name alone.
    struct OpenFolder {
        let root: String
        private var relative: Substring?
        private var descriptor: Int32 = -1

        init(root: String) { self.root = root }

        /// Opens the file at `relative` (below the root) for reading, never waiting on a FIFO
        /// that took its place, and never following a link unless `following`.
        mutating func open(_ relative: String, path: String, following: Bool = false) throws -> Int32 {
            let slash = relative.utf8.lastIndex(of: UInt8(ascii: "/"))
            let folder = slash.map { relative[..<$0] } ?? ""
            let name = slash.map { String(relative[relative.utf8.index(after: $0)...]) } ?? relative
            if folder != self.relative {
                close()
                let folderPath = folder.isEmpty ? root : root + "/" + folder
                descriptor = ExactFileName.withSystemPath(folderPath) { Glibc.open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
                guard descriptor >= 0 else { throw BundleError.unreadable(path: folderPath, reason: FileError.reason(errno)) }
                self.relative = folder
            }
            let file = ExactFileName.withSystemPath(name) { openat(descriptor, $0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (following ? 0 : O_NOFOLLOW)) }
            guard file >= 0 else {
                if errno == ELOOP { throw BundleError.changedDuringExport(path: path) }  // a link took its place
                throw BundleError.unreadable(path: path, reason: FileError.reason(errno))
            }
            return file
        }

        mutating func close() {
            if descriptor >= 0 { Glibc.close(descriptor) }
            (descriptor, relative) = (-1, nil)
        }
    }

    /// Reads a file through once, checksumming it and handing each chunk to `copying`; the
    /// file must be the version `info` describes before and after, with as many bytes.
    private func readContents(
        of path: String, opened: Int32? = nil, into file: inout BundleManifest.File, as info: stat, copying: ((UnsafeRawBufferPointer) throws -> Void)?
    ) throws {
        var hasher = SHA256()
        var size: Int64 = 0
        var head: [UInt8] = []
        var sparse = false
        let expected = Int64(info.st_size)
        // Only a file with fewer blocks than its size can have holes: no seek for the others.
        let mayHaveHoles = Int64(info.st_blocks) * 512 < expected
        func consume(_ chunk: UnsafeRawBufferPointer) throws {
            size += Int64(chunk.count)
            guard size <= expected else { throw BundleError.changedDuringExport(path: path) }
            hasher.update(bufferPointer: chunk)
            if head.count < CodecRegistry.sniffLength { head.append(contentsOf: chunk.prefix(CodecRegistry.sniffLength - head.count)) }
            try copying?(chunk)
        }
        if let opened {
            sparse = mayHaveHoles && savetool_has_holes(opened, expected) == 1
            try Self.readChunks(opened, path: path, expecting: FileIdentity(info), consume)
        } else {
            try Self.readChunks(path, expecting: FileIdentity(info), opened: { descriptor in sparse = mayHaveHoles && savetool_has_holes(descriptor, expected) == 1 }, consume)
        }
        guard size == expected else { throw BundleError.changedDuringExport(path: path) }
        (file.size, file.sha256, file.sparse) = (size, Checksum.hex(hasher.finalize()), sparse)
        file.codec = recognisedCodec(head, name: file.path)
    }

    /// A path's extended attributes (not following a final link); none where the file system
    /// has none.
    /// With `descriptor`, those of the file open there (`path` is then for messages).
    static func xattrs(of path: String, descriptor: Int32 = -1) throws -> OrderedDictionary<String, [UInt8]> {
        try ExactFileName.withSystemPath(path) { systemPath in
            let length = savetool_list_xattrs(descriptor, systemPath, nil, 0)
            guard length > 0 else { return [:] }
            var names = [CChar](repeating: 0, count: length)
            let listed = savetool_list_xattrs(descriptor, systemPath, &names, UInt(length))
            guard listed > 0 else { return [:] }
            var result: OrderedDictionary<String, [UInt8]> = [:]
            for raw in names.prefix(listed).split(separator: 0) {
                let name = String(decoding: raw.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let size = savetool_get_xattr(descriptor, systemPath, name, nil, 0)
                guard size >= 0 else { continue }
                var value = [UInt8](repeating: 0, count: size)
                let read = value.withUnsafeMutableBytes { savetool_get_xattr(descriptor, systemPath, name, $0.baseAddress, UInt(size)) }
                guard read >= 0 else { throw BundleError.unreadable(path: path, reason: "extended attribute \(name): \(FileError.reason(errno))") }
                result[name] = Array(value.prefix(read))
            }
            return OrderedDictionary(uniqueKeysWithValues: result.sorted { $0.key < $1.key })
        }
    }

    /// The codec of a file whose first bytes and name agree: a binary plist's magic number is
    /// enough; text needs a matching extension too (a `.txt` starting with `{` is not called
    /// JSON). Decoding every save to be sure would cost more than the whole export.
    private func recognisedCodec(_ head: [UInt8], name: String) -> String? {
        guard let codec = registry.codec(sniffing: head) else { return nil }
        if codec.traits.contains(.conclusiveMagic) { return codec.id }
        return codec.fileExtensions.contains { Self.hasExtension(name, $0) } ? codec.id : nil
    }

    /// Whether `name` ends with a dot and `suffix`, compared in place (a lower-cased copy of
    /// every name cost more than the rest of recognising it): ASCII letters in either case,
    /// other bytes as they are.
    static func hasExtension(_ name: String, _ suffix: String) -> Bool {
        let name = name.utf8, suffix = suffix.utf8
        guard name.count > suffix.count else { return false }
        var index = name.index(name.endIndex, offsetBy: -suffix.count)
        guard name[name.index(before: index)] == UInt8(ascii: ".") else { return false }
        for expected in suffix {
            var byte = name[index]
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) { byte += 0x20 }
            var wanted = expected
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(wanted) { wanted += 0x20 }
            guard byte == wanted else { return false }
            name.formIndex(after: &index)
        }
        return true
    }

    // MARK: - Writing the bundle

    func write(_ described: DescribedSource, to destination: String, replacing: Bool) throws {
        try writeFile(at: destination, replacing: replacing, mode: mode ?? described.bundleMode) { descriptor in
            try write(described, into: ArchiveOutput(descriptor: descriptor), name: destination)
        }
    }

    /// Makes a bundle file: `body` writes it under a temporary name beside `destination`,
    /// which is flushed and then renamed into place (never replacing a file unless `replacing`).
    private func writeFile(at destination: String, replacing: Bool, mode: mode_t, _ body: (Int32) throws -> Void) throws {
        if destination == "-" { return try body(STDOUT_FILENO) }
        // A bundle that replaces one behind a link replaces the file, and the link stays.
        let destination = replacing ? try FileIO.destination(of: destination, links: destinationLinks) : destination
        // A device or FIFO (`-o /dev/null`, a pipe) is written in place, never replaced.
        if replacing, let special = try Self.specialDestination(destination) {
            defer { close(special) }
            return try body(special)
        }
        let (descriptor, temporary) = try Self.temporaryFile(beside: destination)
        var renamed = false
        defer {
            close(descriptor)
            if !renamed { unlink(temporary) }
        }
        try body(descriptor)
        guard fchmod(descriptor, mode) == 0, fsync(descriptor) == 0 else {
            throw BundleError.ioFailure(path: destination, reason: FileError.reason(errno))
        }
        guard (replacing ? rename(temporary, destination) : savetool_rename_noreplace(temporary, destination)) == 0 else {
            if errno == EEXIST && !replacing { throw BundleError.exists(destination) }
            throw BundleError.cannotCreate(path: destination, reason: FileError.reason(errno))
        }
        renamed = true
        FileIO.syncDirectory(FileIO.parentDirectory(of: destination))
    }

    private static func specialDestination(_ destination: String) throws -> Int32? {
        do { return try FileIO.openSpecialDestination(destination) } catch {
            guard case .cannotCreate(_, let reason) = error else { throw BundleError.cannotCreate(path: destination, reason: "\(error)") }
            throw BundleError.cannotCreate(path: destination, reason: reason)
        }
    }

    private static func temporaryFile(beside destination: String) throws -> (descriptor: Int32, path: String) {
        do {
            return try FileIO.makeTemporaryFile(beside: destination)
        } catch {
            guard case .cannotCreate(_, let reason) = error else { throw BundleError.cannotCreate(path: destination, reason: "\(error)") }
            throw BundleError.cannotCreate(path: destination, reason: reason)
        }
    }

    /// How an entry of the manifest is written in the archive, under `files/`.
    static func archiveEntry(for file: BundleManifest.File) -> ArchiveEntryInfo {
        var info = ArchiveEntryInfo(path: ExactFileName.path("files", file.path), kind: .file, size: file.size, permissions: file.mode)
        info.timestamp = file.modified
        info.xattrs = file.xattrs
        switch file.type {
        case .directory: info.kind = .directory
        case .symlink: info.kind = .symbolicLink(target: file.target ?? "")
        case .hardlink: info.kind = .hardLink(target: "files/" + (file.target ?? ""))
        case .file: break
        }
        return info
    }

    /// Writes the described source as a bundle into `output`, in order, as it is read: an
    /// upload takes the bundle as it is made. When libarchive reports a failed write, the
    /// output's own error (an upload's, say) is rethrown as it was; any other error stands.
    func write(_ described: DescribedSource, into output: ArchiveOutput, name destination: String) throws {
        do {
            try writeEntries(described, into: output, name: destination)
        } catch let error as ArchiveError {
            throw output.sinkError ?? error
        }
    }

    private func writeEntries(_ described: DescribedSource, into output: ArchiveOutput, name destination: String) throws {
        // A tar bundle's manifest is a compressed stream of its own, as the one-pass writer
        // makes it: the same files give the same bytes whichever way the bundle was written.
        if case .tar(let compression) = format { try writeManifest(described, into: output, name: destination, compression: compression) }
        let writer = try ArchiveWriter(output: output, name: destination, format: format)
        if case .zip = format { try writeManifestEntry(described, with: writer) }
        let identity = UnsafeMutableRawBufferPointer.allocate(byteCount: FileIdentity.recordSize, alignment: 8)
        defer { identity.deallocate() }
        var identityOffset = 0
        var written = WorkProgress(phase: .writing, entries: 0, bytes: 0, totalEntries: described.summary.entryCount, totalBytes: described.summary.byteCount)
        var folders = OpenFolder(root: described.root)  // each file opened by its name: no path too long
        defer { folders.close() }
        try described.entries.forEach { _, file in
            written.entries += 1
            written.bytes += file.size
            defer { progress(written) }
            let path = described.root + "/" + file.path
            try writer.begin(Self.archiveEntry(for: file))
            guard file.type == .file else { return }
            guard try described.identities.read(at: identityOffset, into: identity) == FileIdentity.recordSize else {
                throw BundleError.changedDuringExport(path: path)
            }
            identityOffset += FileIdentity.recordSize
            var copied: Int64 = 0
            let descriptor = try folders.open(file.path, path: path)
            defer { close(descriptor) }
            try Self.readChunks(descriptor, path: path, expecting: FileIdentity(record: UnsafeRawBufferPointer(identity))) { chunk in
                copied += Int64(chunk.count)
                guard copied <= file.size else { throw BundleError.changedDuringExport(path: path) }
                try writer.write(chunk)
            }
            guard copied == file.size else { throw BundleError.changedDuringExport(path: path) }
        }
        // Every entry described went in: a bundle is never shorter than its manifest.
        guard written.entries == described.summary.entryCount, identityOffset == described.identities.count else {
            throw BundleError.ioFailure(path: destination, reason: "wrote \(written.entries) of the \(described.summary.entryCount) entries described")
        }
        try writer.close()
    }

    /// Calls `body` with each 1 MiB chunk of a file; with `identity`, the file must be that
    /// version once it is read. (Checking before too would add a call per file and catch
    /// nothing more: a file replaced or written since has another inode or change time after.)
    static func readChunks(
        _ path: String, expecting identity: FileIdentity? = nil, opened: (Int32) -> Void = { _ in }, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        // Never waiting on a FIFO that took the file's place (the identity check then fails).
        let descriptor = ExactFileName.withSystemPath(path) { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
        guard descriptor >= 0 else { throw BundleError.unreadable(path: path, reason: FileError.reason(errno)) }
        defer { close(descriptor) }
        opened(descriptor)
        try readChunks(descriptor, path: path, expecting: identity, body)
    }

    /// ``readChunks(_:expecting:opened:_:)`` of a file already open.
    static func readChunks(_ descriptor: Int32, path: String, expecting identity: FileIdentity?, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        // Knowing the version, the read that would find the end is left out: a file that grew
        // has another size or change time after.
        do { try FileIO.readChunks(of: descriptor, path: path, size: identity?.size, body) } catch let error as FileError {
            guard case .ioFailure(_, _, let reason) = error else { throw error }
            throw BundleError.unreadable(path: path, reason: reason)
        }
        guard let identity else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0, FileIdentity(info) == identity else { throw BundleError.changedDuringExport(path: path) }
    }
}

/// Why a bundle could not be written or read.
public enum BundleError: Error, Sendable, Equatable, CustomStringConvertible {
    case notADirectory(String)
    case unreadable(path: String, reason: String)
    case cannotCreate(path: String, reason: String)
    case ioFailure(path: String, reason: String)
    /// A link or special file in a save directory: no import would restore it.
    case unsupportedEntry(path: String, kind: String)
    case changedDuringExport(path: String)
    /// A bundle that must not replace anything found a file at its name.
    case exists(String)

    /// The path, as people read it: on one line, a byte of a name that is not UTF-8 as `\xE9`
    /// (``ExactFileName/printable(_:)``).
    public var path: String { ExactFileName.printable(rawPath) }

    private var rawPath: String {
        switch self {
        case .notADirectory(let path), .exists(let path): path
        case .unreadable(let path, _), .cannotCreate(let path, _), .ioFailure(let path, _): path
        case .unsupportedEntry(let path, _), .changedDuringExport(let path): path
        }
    }

    public var description: String { ExactFileName.oneLine(rawDescription) }

    private var rawDescription: String {
        switch self {
        case .notADirectory: "not a directory, expected the save directory to export"
        case .unreadable(_, let reason): "cannot read: " + FileError.reason(reason, expecting: "a file or folder that can be read")
        case .cannotCreate(_, let reason): "cannot create: \(reason)"
        case .ioFailure(_, let reason): "writing failed: \(reason)"
        case .unsupportedEntry(_, let kind): kind  // each says what it is and what was expected
        case .changedDuringExport: "the file changed while it was being exported, expected it unchanged; try again"
        case .exists: "already exists, expected a new name (an existing file is never replaced)"
        }
    }
}

extension BundleError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .notADirectory, .unreadable: .notFound
        case .cannotCreate, .exists: .cannotCreate
        case .ioFailure, .changedDuringExport: .io
        case .unsupportedEntry: .badData
        }
    }
}
