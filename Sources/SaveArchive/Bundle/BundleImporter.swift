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

/// Restores a bundle into a directory, checking everything before anything is swapped in.
///
/// 1. The manifest must come first and be of a known format; every path in it must be
///    relative, without `..`, and unique (also after Unicode normalisation).
/// 2. Each archive entry must be the next one the manifest lists, under `files/` and of the
///    type listed (file, directory, a link that stays inside, a hard link to an earlier file);
///    a file no larger than declared, its SHA-256 matching. Devices and FIFOs are refused.
///    Limits bound the total size, the entry count and the compression ratio. The manifest is
///    read on a thread of its own while the entries land (``ManifestStream``), each entry only
///    once it is checked, and its faults are reported before any found while landing.
/// 3. Files are written into a staging directory beside the destination, flushed to disk, and
///    only then swapped with the destination in one atomic rename: a crash leaves the old
///    contents or the new, never a mix. The old contents are first saved as a bundle.
public struct BundleImporter {
    public struct Limits: Sendable, Equatable {
        // The rule: every limit is checked against what the manifest declares (on the running
        // totals, so that no entry past it is written), and none is so low that savetool's own
        // backup of an ordinary folder would fail to restore: the bytes a bundle may write are
        // bounded by the free space, its entries by the size of its manifest.
        /// Total bytes of the files (`--max-bytes`).
        public var maxTotalBytes: Int64 = 1 << 40
        /// Entries in one bundle (`--max-entries`).
        public var maxEntries = 10_000_000
        /// Bytes written per byte of the bundle (`--max-ratio`): saves compress well, but not a
        /// thousandfold. The holes of sparse files are not written, so they do not count.
        public var maxCompressionRatio: Double = 200
        /// Bytes written that no ratio refuses: a file of padding or zeros compresses a
        /// thousandfold, and up to this size (bounded by the free space anyway) that is an
        /// ordinary folder, not a bomb.
        public var ratioFloor: Int64 = 256 << 20
        /// The manifest is spooled to a temporary file, not held: this bounds that file.
        public var maxManifestBytes = 4 << 30
        public init() {}
    }

    public var limits = Limits()
    /// Where the destination's previous contents are saved; beside the destination when `nil`.
    public var backupDirectory: String?
    public var createdBy: String
    /// Migrates every file surely of an older version of a kind before it lands; `nil` imports
    /// every file exactly as it is.
    public var pipeline: SavePipeline?
    /// Refuses the whole import when a save is invalid, cannot be migrated or is from the future;
    /// by default such a file lands exactly as it was, with a warning.
    public var strict = false
    /// Save files larger than this land as they are, unmigrated (a save is rarely more than a few MiB).
    public var largestMigratedFile = 64 << 20

    public init(createdBy: String) { self.createdBy = createdBy }

    public struct Outcome: Sendable {
        /// The manifest's header and totals.
        public var summary: BundleSummary
        /// The bundle holding what the destination held before, when it held anything.
        public var previousContents: String?
        /// Files migrated on the way in (or, for a dry run, that would be).
        public var migrated: [(path: String, result: FileResult)] = []
        /// Save files that land exactly as they were although something is wrong with them:
        /// invalid, not migratable, from the future. Empty with ``strict``, which refuses them.
        public var warnings: [(path: String, result: FileResult)] = []
        /// What did not come back exactly as the bundle holds it, and why: setuid bits dropped,
        /// owners not restored without root, extended attributes the file system refused.
        public var notes: [String] = []
    }

    /// Restores owners (as `tar -p` does) when running as root; `false` leaves files to the importer.
    public var restoresOwners = true
    /// Told of the work done, after every entry.
    public var progress: @Sendable (WorkProgress) -> Void = { _ in }

    /// Throws, before anything is read, what would stop an import into `destination` (or its
    /// dry run) where the bundle is not to blame: not a folder, a place this user may not write
    /// in beside it (the staging folder goes there) or where its old contents are kept, those
    /// kept inside it. Returns the destination made absolute and the folder the old contents go to.
    @discardableResult
    public func checkPlace(for destination: String, writable: Bool = true) throws -> (destination: String, originals: String) {
        try FileIO.requireNonEmpty(destination, expected: "the folder to restore into")
        // Absolute, so that `--into .` has a parent to stage in and to save the old contents in;
        // a link to a folder is followed, as tar extracts into where it leads: the folder is
        // replaced, and the link stays.
        let destination = try FileIO.destination(of: URL(fileURLWithPath: destination).standardizedFileURL.path, links: .follow)
        var found = stat()
        let exists = lstat(destination, &found) == 0
        if exists, found.st_mode & S_IFMT != S_IFDIR {
            throw SaveError(.cannotCreate, file: destination, "\(FileIO.describeType(found.st_mode)), expected a folder to restore into, or a path where nothing is yet")
        }
        let parent = FileIO.parentDirectory(of: destination)
        let originalsDirectory = URL(fileURLWithPath: backupDirectory ?? parent).standardizedFileURL.path
        guard originalsDirectory != destination && !originalsDirectory.hasPrefix(destination + "/") else {
            throw SaveError(.usage, file: originalsDirectory, "inside the destination \(destination), expected a place the import does not replace for its previous contents")
        }
        guard writable else { return (destination, originalsDirectory) }
        try Self.requireWritable(parent, "the import of \(destination) stages its files beside it")
        if exists, originalsDirectory != parent {
            try Self.requireWritable(originalsDirectory, "the import of \(destination) keeps what the folder held there")
        }
        return (destination, originalsDirectory)
    }

    /// Verifies `bundle` entirely and, unless `dryRun`, replaces the contents of `destination`
    /// with it. `checkingPlace: false` verifies a bundle without a place to restore it to
    /// (`backup verify` of a repository this user may only read).
    @discardableResult
    public func restore(_ bundle: String, into destination: String, dryRun: Bool = false, checkingPlace: Bool = true) throws -> Outcome {
        do {
            return try restore(bundle, into: destination, dryRun: dryRun, checkingPlace: checkingPlace, streaming: true)
        } catch is ManifestReader.CannotStream {
            // A manifest that cannot be landed as it is read (not in export's order, say) is
            // read whole first; what was staged meanwhile is gone.
            return try restore(bundle, into: destination, dryRun: dryRun, checkingPlace: checkingPlace, streaming: false)
        }
    }

    /// `streaming`: entries land while the manifest is still being read (``ManifestStream``).
    private func restore(_ bundle: String, into destination: String, dryRun: Bool, checkingPlace: Bool, streaming: Bool) throws -> Outcome {
        // A place the import may not write in is refused before anything is read (and a dry run
        // is refused too, rather than say "verified" for an import that cannot happen).
        let (destination, originalsDirectory) = try checkPlace(for: destination, writable: checkingPlace)
        Self.removeAbandonedStaging(beside: destination)
        let bundleSize = Int64((try? FileManager.default.attributesOfItem(atPath: bundle)[.size] as? NSNumber)??.int64Value ?? 0)
        let reader = try ArchiveReader(path: bundle)
        var source: ManifestSource
        if streaming {
            source = .spooled(try spoolManifest(reader, bundle: bundle))
        } else {
            source = .read(try readWhole(try spoolManifest(reader, bundle: bundle), bundle: bundle, bundleSize: bundleSize))
        }
        // A place that cannot be made before the manifest is read: a fault of the manifest (or
        // a limit it breaks) is still the one told, as when the manifest was read first.
        func preferringTheManifestsFault(_ placeError: any Error) -> any Error {
            guard case .spooled(let spool) = source else { return placeError }
            do { _ = try readWhole(spool, bundle: bundle, bundleSize: bundleSize) } catch { return error }
            return placeError
        }
        // What the header declares is held to the limits before an entry is read.
        var declared: ManifestTotals?
        if case .spooled(let spool) = source, let totals = ManifestReader.declaredTotals(in: spool) {
            declared = totals
            do { try checkDeclaredLimits(totals, bundle: bundle, bundleSize: bundleSize) } catch { throw preferringTheManifestsFault(error) }
        }
        if dryRun {
            var outcome = try extract(reader, source, bundle: bundle, bundleSize: bundleSize, into: nil, freeSpace: nil)
            // What would stop the real import keeping the old contents stops the dry run too.
            outcome.notes = try Self.unbundled(in: destination).map {
                "\($0); the import would keep the folder's old contents as they are, beside it, since the bundle of what it held cannot hold this"
            } + outcome.notes
            return outcome
        }
        // `--into` a folder whose parents are missing makes them (as `mkdir -p`), and takes
        // them away again when the import fails: a refused import changes nothing.
        let madeParents: [String]
        do { madeParents = try Self.makeParents(of: destination) } catch { throw preferringTheManifestsFault(error) }
        var swapped = false
        defer { if !swapped { for directory in madeParents.reversed() { rmdir(directory) } } }
        let freeSpace = measureFreeSpace(destination)
        if case .spooled(let spool) = source {
            if let declared {
                // The room too is checked against what the header declares, before anything
                // lands; no entry past the declared totals is ever handed over.
                do { try Self.checkFreeSpace(for: declared.writtenBytes, entries: declared.entries, in: freeSpace) } catch {
                    throw preferringTheManifestsFault(error)
                }
            } else if !Self.hasRoom(in: freeSpace, forAnyBundleOf: bundleSize, manifestBytes: spool.count, limits: limits) {
                // Declaring nothing (bundles written before totals were), where the free space
                // could run out: read whole first, so that a bundle too large for it is refused
                // before anything lands rather than part-way.
                source = .read(try readWhole(spool, bundle: bundle, bundleSize: bundleSize))
            }
        }
        readsManifestWholeFirst(source.isRead)
        if case .read(let manifest) = source {
            try Self.checkFreeSpace(for: manifest.writtenBytes, entries: manifest.summary.entryCount, in: freeSpace)
        }
        let staging: String
        do {
            staging = try FileIO.makeTemporaryDirectory(beside: destination)
        } catch {
            throw preferringTheManifestsFault(SaveError(
                .cannotCreate, file: FileIO.parentDirectory(of: destination),
                "\(FileError.reason(of: error)), expected a folder where the import can make the one it stages in"))
        }
        defer { if !swapped { FileIO.removeTree(staging) } }
        var outcome = try extract(reader, source, bundle: bundle, bundleSize: bundleSize, into: staging, freeSpace: freeSpace)
        // The destination's mode, given once the files are in (mkdtemp makes it 0700): a
        // folder its owner may write but not list (0300) is still staged.
        var existing = stat()
        chmod(staging, lstat(destination, &existing) == 0 ? existing.st_mode & 0o7777 : 0o755)
        let leftOut = LeftOut()
        outcome.previousContents = try saveCurrentContents(of: destination, in: originalsDirectory, leftOut: leftOut)
        // What the bundle cannot hold (a FIFO, a link leading out) is never removed: the old
        // contents are then kept whole, as a folder named as their bundle, beside the destination.
        let keptFolder = leftOut.lines.isEmpty ? nil : outcome.previousContents.map {
            let name = URL(fileURLWithPath: $0).lastPathComponent
            return FileIO.parentDirectory(of: destination) + "/" + (name.hasSuffix(".tar.gz") ? String(name.dropLast(7)) : name + ".folder")
        }
        // A backup repository inside the destination is left out of the backups it holds: the
        // restore of one of them leaves it in place (it is in the bundle of the old contents too).
        let repositories = Self.repositories(inside: destination)
        var carried: [String] = []
        let (left, keptAt) = try swap(staging, into: destination, keepingOldAt: keptFolder) { old in
            carried = repositories.map { Self.carry($0, from: old, into: destination) }
        }
        if let keptAt {
            outcome.notes = leftOut.lines.map { "\($0); kept, with the rest of the folder's old contents, in \(keptAt)" } + outcome.notes
        }
        outcome.notes += carried
        if let left { outcome.notes.append(left) }
        swapped = true
        return outcome
    }

    // MARK: - Manifest

    /// The manifest of a bundle with all its entries, read from its first entry without reading
    /// the rest. Its entries are held in memory: for a bundle's totals alone, ``summary(of:)``.
    public func manifest(of bundle: String) throws -> BundleManifest {
        try readManifest(try ArchiveReader(path: bundle), bundle: bundle).whole()
    }

    /// The header and totals of a bundle's manifest, its entries streamed through and checked.
    public func summary(of bundle: String) throws -> BundleSummary {
        try readManifest(try ArchiveReader(path: bundle), bundle: bundle).summary
    }

    /// The bundle's first entry, `manifest.json`, spooled (to a temporary file when it is
    /// large) and checked.
    func readManifest(_ reader: ArchiveReader, bundle: String) throws -> CheckedManifest {
        try ManifestReader.read(try spoolManifest(reader, bundle: bundle), bundle: bundle, maxEntries: limits.maxEntries)
    }

    /// The bundle's first entry, `manifest.json`, spooled (to a temporary file when it is
    /// large), not yet read.
    private func spoolManifest(_ reader: ArchiveReader, bundle: String) throws -> Spool {
        guard let first = try reader.next() else { throw BundleImportError.badManifest(bundle: bundle, reason: "the bundle is empty, expected manifest.json first") }
        guard first.path == "manifest.json", first.kind == .file else {
            throw BundleImportError.badManifest(bundle: bundle, reason: "found \(first.path) first, expected manifest.json as the first entry")
        }
        let spool = Spool()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        // A manifest expands no further than the files do (a few MB of padded JSON must not fill
        // the temporary directory): the compression ratio bounds it too, above 64 MiB.
        let bundleSize = (try? FileManager.default.attributesOfItem(atPath: bundle)[.size] as? NSNumber)?.doubleValue ?? 0
        let ratioBound = limits.maxCompressionRatio * bundleSize
        let limit = Int(min(Double(limits.maxManifestBytes), max(Double(64 << 20), ratioBound.isFinite ? ratioBound : .greatestFiniteMagnitude)))
        while case let count = try reader.read(into: buffer), count > 0 {
            try spool.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            guard spool.count <= limit else {
                throw BundleImportError.limitExceeded(bundle: bundle, reason: "manifest.json is larger than \(limit) bytes (the bundle's size times the compression ratio limit, or 4 GiB)", limit: .compressionRatio)
            }
        }
        return spool
    }

    /// The spooled manifest read whole and checked, with the limits its totals must keep.
    private func readWhole(_ spool: Spool, bundle: String, bundleSize: Int64) throws -> CheckedManifest {
        let manifest = try ManifestReader.read(spool, bundle: bundle, maxEntries: limits.maxEntries)
        try Self.checkLimits(limits, total: manifest.summary.byteCount, written: manifest.writtenBytes, bundle: bundle, bundleSize: bundleSize)
        return manifest
    }

    /// The `--max-ratio` that a bundle of `bundleSize` bytes with these totals needs to be
    /// restored, when `limits` (import's own by default) refuse it; `nil` when they let it in.
    /// An export tells its user so (a folder of more than 256 MiB of zeros compresses past them).
    public static func ratioNeeded(for summary: BundleSummary, bundleSize: Int64, limits: Limits = Limits()) -> Int? {
        let (total, written) = (summary.byteCount, summary.writtenByteCount)
        guard total <= limits.maxTotalBytes, (try? checkLimits(limits, total: total, written: written, bundle: "", bundleSize: bundleSize)) == nil else { return nil }
        return Int((weighed(total: total, written: written) / Double(max(bundleSize, 1))).rounded(.up)) + 1
    }

    /// Throws when the totals a manifest's header declares break a limit: its entries, or
    /// what ``checkLimits(_:total:written:bundle:bundleSize:)`` checks.
    private func checkDeclaredLimits(_ declared: ManifestTotals, bundle: String, bundleSize: Int64) throws {
        guard declared.entries <= limits.maxEntries else {
            throw BundleImportError.limitExceeded(bundle: bundle, reason: "more than \(limits.maxEntries) entries (files, folders and links): its \"totals\" declare \(declared.entries)", limit: .entries)
        }
        try Self.checkLimits(limits, total: declared.bytes, written: declared.writtenBytes, bundle: bundle, bundleSize: bundleSize)
    }

    /// The bytes a bundle's files count for against its compression ratio. Holes compress far
    /// better than data (gzip about a thousandfold, zstd more): a sparse file's bytes count a
    /// fiftieth, so an ordinary sparse file restores and a bomb does not.
    private static func weighed(total: Int64, written: Int64) -> Double {
        Double(written) + Double(total - written) / 50
    }

    /// Throws when the files a manifest lists break a limit: their total size, or the bytes
    /// written for each byte of the bundle. Checked on the running totals too, while entries
    /// are landed as the manifest is read: they only grow, so an entry past the point where
    /// they break a limit is never landed.
    private static func checkLimits(_ limits: Limits, total: Int64, written: Int64, bundle: String, bundleSize: Int64) throws {
        // The holes of sparse files are made, not written: they count toward no limit but the total.
        guard total <= limits.maxTotalBytes else {
            throw BundleImportError.limitExceeded(bundle: bundle, reason: "the files total \(total) bytes, more than \(limits.maxTotalBytes)", limit: .totalBytes)
        }
        guard weighed(total: total, written: written) <= max(limits.maxCompressionRatio * Double(max(bundleSize, 1)), Double(limits.ratioFloor)) else {
            throw BundleImportError.limitExceeded(
                bundle: bundle, reason: "\(written) bytes from a \(bundleSize)-byte bundle, a ratio above \(Int(limits.maxCompressionRatio))", limit: .compressionRatio)
        }
    }

    /// Reads a manifest's bytes one entry at a time (``ManifestReader``), checking each.
    static func manifest(from bytes: [UInt8], bundle: String, maxEntries: Int) throws -> BundleManifest {
        let spool = Spool()
        try spool.append(contentsOf: bytes)
        return try ManifestReader.read(spool, bundle: bundle, maxEntries: maxEntries).whole()
    }

    /// Why a symbolic link at `path` could lead outside the destination, or `nil` when its target,
    /// read from the link's own folder, stays inside.
    public static func symbolicLinkProblem(_ path: String, _ target: String) -> String? {
        if target.hasPrefix("/") { return "a symbolic link to the absolute path \(target), expected a target inside the save directory" }
        // `..` only at the start: after a name it could climb out of what that name links to.
        var depth = path.split(separator: "/").count - 1
        var climbing = true
        for component in target.split(separator: "/", omittingEmptySubsequences: true) where component != "." {
            if component == ".." {
                guard climbing else { return "a symbolic link to \(target), with '..' after a name, expected '..' only at the start" }
                depth -= 1
                if depth < 0 { return "a symbolic link to \(target), which leads outside the save directory, expected a target inside it" }
            } else {
                climbing = false
            }
        }
        return nil
    }

    /// Why an archive entry could reach outside the destination, or `nil`: checked as the path
    /// it lands at, as export checked it (what follows `files/`).
    public static func unsafeEntryReason(_ entryPath: String) -> String? {
        // `files/` found by its bytes: a `/` that a combining mark follows is one Character,
        // and `hasPrefix` would not see the prefix (what lands is still what follows it).
        var entryPath = entryPath
        return entryPath.withUTF8 { bytes in
            let prefix = "files/".utf8
            let landing = bytes.starts(with: prefix) ? UnsafeBufferPointer(rebasing: bytes[prefix.count...]) : bytes
            return unsafePathReason(bytes: landing)
        }
    }

    /// Why a relative path could reach outside its directory, or `nil` when it cannot.
    public static func unsafePathReason(_ path: String) -> String? {
        var path = path
        return path.withUTF8(unsafePathReason(bytes:))
    }

    private static func unsafePathReason(bytes: UnsafeBufferPointer<UInt8>) -> String? {
        // One pass over the bytes, as a buffer (a String's UTF-8 view a byte at a time cost
        // as much again): this runs for every entry of a manifest, for every archive entry that
        // is not the one listed next, and at export.
        if bytes.isEmpty { return "an empty path, expected a relative path" }
        if bytes.first == UInt8(ascii: "/") { return "an absolute path, expected a path relative to the save directory" }
        // `index` counts the bytes on disk: a byte of a name that is not UTF-8 is one there,
        // though three here (``ExactFileName``: EE BE xx or EE BF xx).
        var componentStart = 0, index = 0, dots = 0, previous: UInt8 = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"): return "a backslash, expected '/' between components"
            case 0: return "a NUL byte in the path, expected none"
            default: break
            }
            if byte == UInt8(ascii: "/") {
                if let problem = componentProblem(length: index - componentStart, dots: dots) { return problem }
                (componentStart, dots) = (index + 1, 0)
            } else if byte == UInt8(ascii: ".") {
                dots += 1
            } else if previous == 0xEE && (byte == 0xBE || byte == 0xBF) {
                index -= 2
            }
            previous = byte
            index += 1
        }
        if index > 4096 { return "a path longer than 4096 bytes" }
        return componentProblem(length: index - componentStart, dots: dots)
    }

    private static func componentProblem(length: Int, dots: Int) -> String? {
        if length == 2 && dots == 2 { return "a '..' component, expected a path that stays inside the save directory" }
        if length == 0 || (length == 1 && dots == 1) { return "an empty or '.' component, expected a plain relative path" }
        if length > 255 { return "a name longer than 255 bytes" }
        return nil
    }

    // MARK: - Entries

    /// A bundle's manifest, read and checked whole, or spooled to be read while its entries land.
    private enum ManifestSource {
        case read(CheckedManifest)
        case spooled(Spool)

        var isRead: Bool {
            if case .read = self { return true }
            return false
        }
    }

    /// Told, for each import, whether the manifest is read whole before anything lands (rather
    /// than while entries land); for tests.
    var readsManifestWholeFirst: @Sendable (Bool) -> Void = { _ in }

    /// Where ``extract(_:listed:bundle:into:outcome:)`` takes the manifest's entries from.
    private enum ListedEntries {
        case read(CheckedManifest)
        case streamed(ManifestStream)
    }

    /// Lands (or, for a dry run, reads through) every entry after the manifest, which is
    /// either read already or read on a thread of its own while the entries land.
    private func extract(
        _ reader: ArchiveReader, _ source: ManifestSource, bundle: String, bundleSize: Int64, into staging: String?, freeSpace: FreeSpace?
    ) throws -> Outcome {
        var outcome = Outcome(summary: BundleSummary(createdAt: Date(timeIntervalSince1970: 0), createdBy: "", label: nil, source: "", sourcePath: nil))
        switch source {
        case .read(let manifest):
            outcome.summary = manifest.summary
            try extract(reader, listed: .read(manifest), bundle: bundle, into: staging, outcome: &outcome)
        case .spooled(let spool):
            let stream = ManifestStream()
            nonisolated(unsafe) let spool = spool  // the reading thread's alone from here on
            let (limits, maxEntries) = (limits, limits.maxEntries)
            Thread.detachNewThread {
                stream.finish(Result {
                    let manifest = try ManifestReader.read(spool, bundle: bundle, maxEntries: maxEntries) { batch, summary in
                        // Running totals only grow: once they break a limit, the whole manifest does.
                        let written = summary.writtenByteCount
                        let holds = (try? Self.checkLimits(limits, total: summary.byteCount, written: written, bundle: bundle, bundleSize: bundleSize)) != nil
                            && (try? Self.checkFreeSpace(for: written, entries: summary.entryCount, in: freeSpace)) != nil
                        if !holds { stream.halt() }
                        stream.post(reversed: batch)
                    }
                    try Self.checkLimits(limits, total: manifest.summary.byteCount, written: manifest.writtenBytes, bundle: bundle, bundleSize: bundleSize)
                    try Self.checkFreeSpace(for: manifest.writtenBytes, entries: manifest.summary.entryCount, in: freeSpace)
                    return manifest
                })
            }
            do {
                try extract(reader, listed: .streamed(stream), bundle: bundle, into: staging, outcome: &outcome)
            } catch {
                // A fault of the manifest (or a limit it breaks) is told before one found while
                // landing, as when the manifest was read first.
                stream.abandon()
                if case .failure(let manifestFault) = stream.result() { throw manifestFault }
                throw error
            }
            outcome.summary = try stream.result().get().summary
        }
        return outcome
    }

    /// Reads every remaining entry, checking it against the manifest; writes them under
    /// `staging` (or nowhere, for a dry run), then gives directories their modes and times.
    ///
    /// This thread decompresses, checks and migrates each entry; a second one lands them in
    /// order (the writes, the attributes), so that on two cores an import of many small saves
    /// takes about as long as the slower half rather than the sum.
    private func extract(_ reader: ArchiveReader, listed: ListedEntries, bundle: String, into staging: String?, outcome: inout Outcome) throws {
        // The archive holds the manifest's entries in the manifest's order (export writes them
        // so): each is checked against the next one listed, with no table of all the paths.
        var readEntries: ManifestEntries.Iterator?
        var stream: ManifestStream?
        /// The manifest's totals, once known (from the start, unless it is still being read).
        var summary: BundleSummary?
        switch listed {
        case .read(let manifest): (readEntries, summary) = (manifest.entries.makeIterator(), manifest.summary)
        case .streamed(let manifestStream): stream = manifestStream
        }
        func nextListed() throws -> BundleManifest.File? {
            if let stream { return try stream.next() }
            return try readEntries!.next()
        }
        var next = try nextListed()
        var entryCount = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        let lander = Lander(importer: self, bundle: bundle, tree: try staging.map(StagingTree.init(root:)),
                            landing: Landing(restoresOwners: restoresOwners && geteuid() == 0))
        // Whatever happens, nothing is left running against the staging tree.
        defer { lander.queue.sync {} }
        var report = Report()
        /// The entry before, which a second copy of it is told by.
        var previous = ""
        var done = WorkProgress(
            phase: staging == nil ? .verifying : .restoring, entries: 0, bytes: 0,
            totalEntries: summary?.entryCount, totalBytes: summary?.byteCount)
        while let entry = try reader.next() {
            entryCount += 1
            if summary == nil, entryCount & 255 == 0, let manifest = stream?.manifestIfRead {
                summary = manifest.summary
                (done.totalEntries, done.totalBytes) = (manifest.summary.entryCount, manifest.summary.byteCount)
            }
            guard entryCount <= limits.maxEntries + 64 else {
                throw BundleImportError.limitExceeded(bundle: bundle, reason: "more than \(limits.maxEntries) entries", limit: .entries)
            }
            let entryPath = entry.exactPath  // a name that is not UTF-8, byte for byte
            // Compared as bytes: one spelling of a name, and no Unicode comparison for every entry.
            // An entry that is the one listed next has the listed path, which the manifest's
            // reader found safe; any other is checked before anything else is said of it.
            guard let listedPath = next?.path, Self.entry(entryPath, holds: listedPath) else {
                if let problem = Self.unsafeEntryReason(entryPath) {
                    throw BundleImportError.unsafeEntry(bundle: bundle, entry: entryPath, reason: problem)
                }
                if entryPath == "files", entry.kind == .directory { continue }
                if entry.kind == .directory && entryPath.hasPrefix("files/") {
                    // Whether the manifest lists files alone is known once it is read whole.
                    if summary == nil, let stream {
                        guard let manifest = stream.manifestIfRead else { throw ManifestReader.CannotStream() }
                        summary = manifest.summary
                    }
                    if let summary, summary.fileCount == summary.entryCount {
                        continue  // a bundle of files alone: their directories are made as the files need them
                    }
                }
                let reason = entryPath == previous ? "a second copy of the entry before it, expected each entry once"
                    : next.map { "where the manifest lists files/\(ExactFileName.printable($0.path)) next, expected the entries it lists, each once, in its order" }
                    ?? "after every entry the manifest lists, expected only the entries it lists"
                throw BundleImportError.unsafeEntry(bundle: bundle, entry: entryPath, reason: reason)
            }
            let file = next.take()!  // moved, not copied: a retain and release of each of its members
            next = try nextListed()
            previous = entryPath
            done.entries += 1
            done.bytes = done.bytes.addingSaturated(file.size)
            defer { progress(done) }
            switch (entry.kind, file.type) {
            case (.file, .file):
                if let declared = entry.size, declared != file.size {
                    throw BundleImportError.mismatch(bundle: bundle, entry: entryPath, reason: "the archive declares \(declared) bytes, expected the manifest's \(file.size)")
                }
                if file.size <= Lander.largestHandedOver && !file.sparse {
                    // Checked and migrated here, written there: the two halves weigh about the same.
                    let (contents, digest) = try readChecked(entry: entryPath, file: file, from: reader, buffer: buffer, bundle: bundle, into: lander.buffers)
                    if let migrated = try migrated(contents, file: file, digest: digest, entry: entryPath, bundle: bundle, report: &report) {
                        // The migrated bytes land (the report keeps them too); the buffer read is free again.
                        lander.buffers.reuse(contents)
                        try lander.enqueue(weighing: migrated.count) { try $0.land(file, contents: migrated, keepsTime: false, reusable: false) }
                    } else {
                        let handedOver = HandedOverContents(contents)
                        try lander.enqueue(weighing: contents.count) { try $0.land(file, contents: handedOver.take(), keepsTime: true, reusable: true) }
                    }
                } else {
                    try lander.drain()
                    try copy(entry: entryPath, file: file, from: reader, buffer: buffer, lander: lander, report: &report)
                }
            case (.directory, .directory):
                try lander.enqueue { lander in
                    try lander.tree?.makeDirectory(file.path)
                    lander.landing.directories.append(file)
                }
            case (.symbolicLink(let target), .symlink) where target == file.target:
                try lander.enqueue { lander in
                    try lander.tree?.makeSymbolicLink(file.path, to: target)
                    try lander.tree?.setAttributes(of: file.path, mode: nil, time: file.modified, owner: lander.landing.owner(file))
                }
            case (.hardLink(let target), .hardlink) where target == "files/" + (file.target ?? ""):
                // Its target is a file listed, and so landed, before it (the manifest's reader checks).
                try lander.enqueue { try $0.tree?.makeHardLink(file.path, to: file.target!) }
            case (.special(let kind), _):
                throw BundleImportError.unsafeEntry(bundle: bundle, entry: entryPath, reason: "a \(kind), expected files, directories and links only")
            default:
                throw BundleImportError.mismatch(
                    bundle: bundle, entry: entryPath, reason: "a \(ArchiveCodec.typeName(entry.kind)) in the archive, expected the \(file.type.rawValue) the manifest lists\(file.target.map { " (to \($0))" } ?? "")")
            }
        }
        try lander.drain()
        if let missing = next {
            throw BundleImportError.mismatch(bundle: bundle, entry: "files/" + missing.path, reason: "listed in the manifest but not in the bundle")
        }
        var landing = lander.landing
        if let tree = lander.tree {
            // Deepest first, so that a read-only folder is closed only after what it holds is in.
            for directory in landing.directories.reversed() {
                try tree.setAttributes(of: directory.path, mode: landing.mode(directory), time: directory.modified, owner: landing.owner(directory))
                for name in tree.setExtendedAttributes(of: directory.path, directory.xattrs) {
                    landing.notes.append("\(ExactFileName.printable(directory.path)): the extended attribute \(name) could not be set here")
                }
            }
        } else {
            for directory in landing.directories { _ = landing.mode(directory) }  // as a dry run's files
        }
        if landing.ownersNotRestored > 0 {
            landing.notes.append("owners of \(landing.ownersNotRestored) entr\(landing.ownersNotRestored == 1 ? "y" : "ies") not restored: only root can give files to others (as tar -p)")
        }
        (outcome.migrated, outcome.warnings, outcome.notes) = (report.migrated, report.warnings, landing.notes)
        // Every staged file and directory on disk before the swap makes them the destination.
        if let staging {
            do { try FileIO.syncFileSystem(containing: staging) } catch { throw BundleImportError.io(path: staging, reason: error.description) }
        }
    }

    /// Whether the archive's entry `entryPath` is `files/` and `path`, byte for byte (one
    /// `memcmp`: the generic comparison of two UTF-8 views cost 4,000 instructions an entry).
    static func entry(_ entryPath: String, holds path: String) -> Bool {
        var (entryPath, path) = (entryPath, path)
        return entryPath.withUTF8 { entry in
            path.withUTF8 { path in
                entry.count == path.count + 6 && memcmp(entry.baseAddress!, "files/", 6) == 0
                    && (path.isEmpty || memcmp(entry.baseAddress! + 6, path.baseAddress!, path.count) == 0)
            }
        }
    }

    /// What landing entries needs across them: directories to finish last, whose owners to set,
    /// and what the outcome reports.
    private struct Landing {
        var restoresOwners: Bool
        var directories: [BundleManifest.File] = []
        var ownersNotRestored = 0
        var notes: [String] = []
        let user = (getuid(), getgid())
        /// The owner of a file this process creates.
        let creator = (uid: geteuid(), gid: getegid())

        init(restoresOwners: Bool) { self.restoresOwners = restoresOwners }

        /// The owner to set, when running as root; counts the entries whose owner cannot be.
        mutating func owner(_ file: BundleManifest.File) -> (uid: UInt32, gid: UInt32)? {
            guard let owner = file.owner else { return nil }
            if restoresOwners { return owner }
            if owner.uid != user.0 || owner.gid != user.1 { ownersNotRestored += 1 }
            return nil
        }

        /// The mode to set: setuid and setgid are dropped on purpose (a restored save is no program to run as someone else).
        mutating func mode(_ file: BundleManifest.File) -> UInt16 {
            guard file.mode & 0o6000 != 0 else { return file.mode }
            notes.append("\(ExactFileName.printable(file.path)): setuid/setgid dropped (mode \(String(file.mode, radix: 8)) restored as \(String(file.mode & ~0o6000, radix: 8)))")
            return file.mode & ~0o6000
        }
    }

    /// What the pipeline did to the saves on their way in.
    private struct Report {
        var migrated: [(path: String, result: FileResult)] = []
        var warnings: [(path: String, result: FileResult)] = []
    }

    /// The second thread of ``extract(_:manifest:bundle:into:outcome:)``: runs what it is handed
    /// in order, one at a time, and after a failure nothing more. Its state belongs to its queue;
    /// the extracting thread touches it only after ``drain()`` (but ``buffers``, which locks). When
    /// nothing lands (a dry run), the work runs on the extracting thread itself and the queue is
    /// never used.
    ///
    /// Work is handed over in batches: one hand-over per entry cost two `futex` calls and a
    /// wake-up of each thread per file (22,000 `futex` calls for 10,000 files, against none in tar).
    private final class Lander: @unchecked Sendable {
        typealias Work = @Sendable (Lander) throws -> Void
        /// Files up to this size are read whole and handed over; larger ones are streamed to
        /// disk by the extracting thread itself once the queue is empty.
        static let largestHandedOver: Int64 = 1 << 20
        /// A batch is handed over at this many entries or this many bytes of contents: under
        /// 512 KiB, then one more entry (at most 1 MiB before migration; a migrated save may
        /// be larger than the file it came from).
        static let batchEntries = 64, batchBytes = 512 << 10
        let queue = DispatchQueue(label: "savetool.import.landing")
        /// At most this many batches wait: with the one being gathered, about 13.5 MiB of
        /// contents (16 MiB when each entry waited on its own).
        private let slots = DispatchSemaphore(value: 8)
        private let lock = NSLock()
        private var failure: (any Error)?
        /// The batch being gathered: the extracting thread's alone.
        private var batch: [Work] = []
        private var batchWeight = 0
        let importer: BundleImporter
        let bundle: String
        let tree: StagingTree?
        var landing: Landing
        /// Where files' bytes come from, and go back to once written.
        let buffers = ContentsBuffers()
        /// Buffers written in the batch being landed: the landing thread's alone (in a dry run,
        /// the extracting thread's, and never filled).
        private var written: [[UInt8]] = []

        init(importer: BundleImporter, bundle: String, tree: StagingTree?, landing: Landing) {
            (self.importer, self.bundle, self.tree, self.landing) = (importer, bundle, tree, landing)
        }

        /// Lands `work` after everything enqueued before it; `weight` is the bytes it holds.
        func enqueue(weighing weight: Int = 0, _ work: @escaping Work) throws {
            try check()
            // Verifying lands nothing: handing each entry to another thread would cost more
            // than the work (a profile of `backup verify`: 18% of samples in the hand-over).
            guard tree != nil else { return try work(self) }
            batch.append(work)
            batchWeight += weight
            if batch.count >= Self.batchEntries || batchWeight >= Self.batchBytes { handOver() }
        }

        private func handOver() {
            guard !batch.isEmpty else { return }
            let works = batch
            (batch, batchWeight) = ([], 0)
            slots.wait()
            queue.async { [self] in
                defer { slots.signal() }
                defer { buffers.handBack(&written) }
                for work in works {
                    guard lock.withLock({ failure == nil }) else { return }
                    do { try work(self) } catch { lock.withLock { if failure == nil { failure = error } } }
                }
            }
        }

        /// Waits until everything handed over has landed; throws the first failure.
        func drain() throws {
            handOver()
            queue.sync {}
            try check()
        }

        private func check() throws {
            if let failure = lock.withLock({ failure }) { throw failure }
        }

        /// Writes a checked (and perhaps migrated) file and gives it its attributes.
        /// `reusable`: `contents` came from ``buffers``, and nothing else holds it.
        func land(_ file: BundleManifest.File, contents: [UInt8], keepsTime: Bool, reusable: Bool) throws {
            guard let tree else {
                _ = landing.mode(file)  // a dry run says what the import would drop
                if reusable { buffers.reuse(contents) }  // on the extracting thread itself
                return
            }
            defer { if reusable { written.append(contents) } }
            let mode = landing.mode(file)
            let creation = tree.creation(of: mode_t(mode))
            let descriptor = try tree.createFile(file.path, mode: creation.permissions)
            defer { close(descriptor) }
            let failure = contents.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
            guard failure == 0 else { throw BundleImportError.io(path: tree.root + "/" + file.path, reason: FileError.reason(failure)) }
            try importer.finish(
                file, mode: mode, creation: creation, descriptor: descriptor,
                target: tree.root + "/" + file.path, keepsTime: keepsTime, landing: &landing)
        }
    }

    /// Reads a file entry whole and checks its size and SHA-256 against the manifest.
    private func readChecked(
        entry: String, file: BundleManifest.File, from reader: ArchiveReader, buffer: UnsafeMutableRawBufferPointer, bundle: String,
        into buffers: ContentsBuffers
    ) throws -> (contents: [UInt8], digest: String) {
        var contents = buffers.take(capacity: Int(file.size))
        // Hashed and copied where the decompressed stream holds it: one copy of every byte fewer.
        let digest = try readEntry(entry, file: file, from: reader, buffer: buffer, bundle: bundle, borrowing: true) { contents.append(contentsOf: $0) }
        return (contents, digest)
    }

    /// Streams a file entry's bytes to `body`, checking them against the manifest's size and
    /// SHA-256; returns the digest. `borrowing`: the chunks are where the reader holds them
    /// (of its blocks' sizes), not copied into `buffer` first (chunks of its size, which the
    /// holes of a sparse file are found in).
    private func readEntry(
        _ entry: String, file: BundleManifest.File, from reader: ArchiveReader, buffer: UnsafeMutableRawBufferPointer, bundle: String,
        borrowing: Bool = false, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> String {
        var hasher = SHA256()
        var size: Int64 = 0
        while true {
            let chunk: UnsafeRawBufferPointer
            if borrowing {
                chunk = try reader.chunk(orInto: buffer)
            } else {
                chunk = UnsafeRawBufferPointer(rebasing: buffer[..<(try reader.read(into: buffer))])
            }
            if chunk.isEmpty { break }
            size += Int64(chunk.count)
            guard size <= file.size else {
                throw BundleImportError.mismatch(bundle: bundle, entry: entry, reason: "more than the \(file.size) bytes the manifest declares")
            }
            hasher.update(bufferPointer: chunk)
            try body(chunk)
        }
        guard size == file.size else {
            throw BundleImportError.mismatch(bundle: bundle, entry: entry, reason: "\(size) bytes, expected the \(file.size) the manifest declares")
        }
        let digest = hasher.finalize()
        guard Checksum.matches(digest, hex: file.sha256) else {
            throw BundleImportError.mismatch(bundle: bundle, entry: entry, reason: "SHA-256 \(Checksum.hex(digest)), expected \(file.sha256) from the manifest")
        }
        return file.sha256  // the digest's text, already made
    }

    /// A large or sparse file, streamed to disk as it is read (the extracting thread, with the
    /// lander idle).
    private func copy(
        entry: String, file: BundleManifest.File, from reader: ArchiveReader, buffer: UnsafeMutableRawBufferPointer, lander: Lander, report: inout Report
    ) throws {
        let staging = lander.tree
        let mode = lander.landing.mode(file)  // a dry run too says what the import would drop
        let creation = staging?.creation(of: mode_t(mode)) ?? .dryRun
        let descriptor = try staging?.createFile(file.path, mode: creation.permissions) ?? -1
        defer { if descriptor >= 0 { close(descriptor) } }
        let target = (staging?.root ?? "") + "/" + file.path
        // A save small enough to migrate is kept in memory to go through the pipeline once its checksum holds.
        var contents: [UInt8]? = pipeline != nil && file.size <= Int64(largestMigratedFile) ? [] : nil
        let digest = try readEntry(entry, file: file, from: reader, buffer: buffer, bundle: lander.bundle) { chunk in
            contents?.append(contentsOf: chunk)
            guard descriptor >= 0 else { return }
            // A sparse file's runs of zeros become holes again rather than written blocks.
            if file.sparse && chunk.allSatisfy({ $0 == 0 }) {
                guard lseek(descriptor, off_t(chunk.count), SEEK_CUR) >= 0 else { throw BundleImportError.io(path: target, reason: FileError.reason(errno)) }
                return
            }
            let failure = FileIO.writeAll(chunk, to: descriptor)
            guard failure == 0 else { throw BundleImportError.io(path: target, reason: FileError.reason(failure)) }
        }
        var output: [UInt8]?
        if let contents { output = try migrated(contents, file: file, digest: digest, entry: entry, bundle: lander.bundle, report: &report) }
        guard descriptor >= 0 else { return }
        if let migrated = output {
            // The migrated save replaces the staged original.
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw BundleImportError.io(path: target, reason: FileError.reason(errno))
            }
            let failure = migrated.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
            guard failure == 0 else { throw BundleImportError.io(path: target, reason: FileError.reason(failure)) }
        } else if file.sparse {
            guard ftruncate(descriptor, off_t(file.size)) == 0 else { throw BundleImportError.io(path: target, reason: FileError.reason(errno)) }
        }
        try finish(
            file, mode: mode, creation: creation, descriptor: descriptor,
            target: target, keepsTime: output == nil, landing: &lander.landing)
    }

    /// The migrated bytes of a checked save, or `nil` when it lands as it is (reported in
    /// `report` when something is wrong with it; refused instead with ``strict``).
    private func migrated(_ contents: [UInt8], file: BundleManifest.File, digest: String, entry: String, bundle: String, report: inout Report) throws -> [UInt8]? {
        // Called in place: binding the pipeline (`guard let`) copied it, a retain of each of its
        // parts, for every file.
        guard file.size <= Int64(largestMigratedFile), let result = pipeline?.process(contents, path: file.path, sha256: digest) else { return nil }
        if let output = result.output {
            report.migrated.append((file.path, result))
            return output
        }
        // A file a kind claims by its path, whose version nothing tells, cannot be migrated either.
        let claimedButNotTold = result.status == .unrecognized && result.problem != nil
        if result.status.isProblem || claimedButNotTold {
            if strict {
                throw BundleImportError.invalidSave(bundle: bundle, entry: entry, reason: "\(result.status.rawValue): \(result.problem ?? "")")
            }
            report.warnings.append((file.path, result))
        }
        return nil
    }

    /// Gives a staged file, made as `creation` says (``StagingTree/creation(of:)``), its owner,
    /// extended attributes, `mode` (where creating could not) and, unless its content is new
    /// (migrated now), its time.
    private func finish(
        _ file: BundleManifest.File, mode: UInt16, creation: StagingTree.FileCreation, descriptor: Int32,
        target: @autoclosure () -> String, keepsTime: Bool, landing: inout Landing
    ) throws {
        if let owner = landing.owner(file), !creation.ownedByCreator || owner != landing.creator,
            fchown(descriptor, owner.uid, owner.gid) != 0
        {
            throw BundleImportError.io(path: target(), reason: "cannot set its owner: \(FileError.reason(errno))")
        }
        // After the owner (chown clears file capabilities), while the owner may still write the
        // file (one who may not cannot set its attributes): given its write bit first where the
        // umask took it.
        if creation.writeBitMasked, !file.xattrs.isEmpty, fchmod(descriptor, creation.permissions) != 0 {
            throw BundleImportError.io(path: target(), reason: FileError.reason(errno))
        }
        for name in StagingTree.setExtendedAttributes(file.xattrs, on: descriptor) {
            landing.notes.append("\(ExactFileName.printable(file.path)): the extended attribute \(name) could not be set here")
        }
        // The mode after the attributes, for a read-only file's sake.
        if creation.needsMode, fchmod(descriptor, mode_t(mode)) != 0 {
            throw BundleImportError.io(path: target(), reason: FileError.reason(errno))
        }
        if keepsTime {
            // A tuple, not an array: no allocation for every file.
            var times = (file.modified.timespec, file.modified.timespec)
            let failed = withUnsafePointer(to: &times) { $0.withMemoryRebound(to: timespec.self, capacity: 2) { futimens(descriptor, $0) != 0 } }
            // Flushed all at once by extract() (one syncfs rather than an fsync per file).
            guard !failed else { throw BundleImportError.io(path: target(), reason: FileError.reason(errno)) }
        }
    }

    // MARK: - Landing

    /// The staged copy needs the files' bytes, and at most a block more for each entry (a
    /// small file takes a whole block; a folder takes one): counted so, a bundle of many small
    /// files is not let in to fail half-way, and one large file is not refused for a margin.
    private static func checkFreeSpace(for bytes: Int64, entries: Int, in space: FreeSpace?) throws {
        guard let space else { return }
        let (available, block) = (space.available, space.block)
        // Declared totals can be anything a bundle says: a sum past Int64 needs more than any disk.
        let (blocks, overflowed) = Int64(entries).multipliedReportingOverflow(by: block)
        let (sum, overflowedToo) = bytes.addingReportingOverflow(blocks)
        let needed = overflowed || overflowedToo ? Int64.max : sum
        guard available >= needed else {
            throw BundleImportError.noSpace(
                destination: space.destination, needed: needed, available: available,
                why: "\(bytes) bytes of files, and up to a block of \(block) bytes for each of its \(entries) entr\(entries == 1 ? "y" : "ies")")
        }
    }

    /// The space free beside a destination, measured before anything is staged there (what
    /// is staged while the manifest is still read must not count against it).
    struct FreeSpace: Sendable {
        var destination: String
        var available: Int64
        var block: Int64
    }

    /// How the free space beside a destination is measured (`statvfs`); a test gives less.
    var measureFreeSpace: @Sendable (_ destination: String) -> FreeSpace? = BundleImporter.freeSpace(beside:)

    /// Whether any bundle of `bundleSize` bytes whose manifest takes `manifestBytes` fits in
    /// `space` within the limits: what it writes is at most the ratio allows (or the total
    /// does), and it has at most an entry for every 48 bytes of manifest (the smallest entry
    /// takes more), each taking up to a block.
    private static func hasRoom(in space: FreeSpace?, forAnyBundleOf bundleSize: Int64, manifestBytes: Int, limits: Limits) -> Bool {
        guard let space else { return true }  // not measured: not checked either (checkFreeSpace)
        let written = min(max(limits.maxCompressionRatio * Double(max(bundleSize, 1)), Double(limits.ratioFloor)), Double(limits.maxTotalBytes))
        return Double(space.available) >= written + Double(manifestBytes / 48 + 1) * Double(space.block)
    }

    static func freeSpace(beside destination: String) -> FreeSpace? {
        var info = statvfs()
        guard statvfs(FileIO.parentDirectory(of: destination), &info) == 0 else { return nil }
        return FreeSpace(destination: destination, available: Int64(info.f_bavail) * Int64(info.f_frsize), block: Int64(max(info.f_bsize, 512)))
    }

    /// Throws, naming the folder, unless this process may create and remove entries in
    /// `folder` or, where it does not exist yet, in the nearest folder above it that does;
    /// `why` says what the import does there.
    private static func requireWritable(_ folder: String, _ why: String) throws {
        var existing = folder
        var info = stat()
        while lstat(existing, &info) != 0 && errno == ENOENT && existing != "/" && !existing.isEmpty {
            existing = FileIO.parentDirectory(of: existing)
        }
        guard faccessat(AT_FDCWD, existing, W_OK | X_OK, AT_EACCESS) != 0 else { return }
        throw SaveError(
            .cannotCreate, file: existing,
            "\(FileError.reason(errno)), expected a folder this user may write in: \(why)")
    }

    /// Makes the missing folders above `destination`, outermost first; returns the ones it made.
    private static func makeParents(of destination: String) throws -> [String] {
        var missing: [String] = []
        var parent = FileIO.parentDirectory(of: destination)
        var info = stat()
        while parent != "/" && !parent.isEmpty && lstat(parent, &info) != 0 && errno == ENOENT {
            missing.append(parent)
            parent = FileIO.parentDirectory(of: parent)
        }
        var made: [String] = []
        for directory in missing.reversed() {
            if mkdir(directory, 0o755) == 0 {
                made.append(directory)  // only what this import made is taken away again
            } else if errno != EEXIST {
                let reason = FileError.reason(errno)
                for directory in made.reversed() { rmdir(directory) }
                throw SaveError(.cannotCreate, file: directory, "cannot create the folder to restore into: \(reason)")
            }
        }
        return made
    }

    /// Saves what the destination holds as a bundle first (``OriginalsKeeper``), so that an
    /// import never loses data; `nil` when it holds nothing.
    private func saveCurrentContents(of destination: String, in directory: String, leftOut: LeftOut) throws -> String? {
        var info = stat()
        guard lstat(destination, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw BundleImportError.io(path: destination, reason: "not a directory, expected the save directory to restore into")
        }
        var keeper = OriginalsKeeper(createdBy: createdBy, purpose: "import")
        keeper.warn = { leftOut.add($0) }
        // A folder named for the bundles of replaced contents is made if missing (as a backup
        // repository is), its parent being there; a missing parent is said, with what was meant.
        var madeFolder = false
        if access(directory, F_OK) != 0 {
            if mkdir(directory, 0o777) == 0 {
                madeFolder = true
            } else if errno != EEXIST {
                throw BundleError.cannotCreate(
                    path: directory, reason: "\(FileError.reason(errno)), expected a folder to keep what \(destination) holds before the import replaces it")
            }
        }
        do {
            return try keepCurrentContents(of: destination, in: directory, keeper: keeper)
        } catch {
            // Nothing on disk changes when the import fails: the folder made for it goes too.
            if madeFolder { rmdir(directory) }
            throw error
        }
    }

    private func keepCurrentContents(of destination: String, in directory: String, keeper: OriginalsKeeper) throws -> String? {
        // Not the bundle's fault: what the folder holds now must be kept before it is replaced.
        try Self.explainingKeep(of: destination) {
            try keeper.keep(nil, under: destination, in: directory, name: URL(fileURLWithPath: destination).lastPathComponent)
        }
    }

    /// What saving the destination's contents left out, as the exporter said it.
    private final class LeftOut: @unchecked Sendable {
        private let lock = NSLock()
        private var found: [String] = []
        func add(_ line: String) { lock.withLock { found.append(line) } }
        var lines: [String] { lock.withLock { found } }
    }

    /// What a bundle of `folder` would leave out, as the exporter says it: for a dry run, which
    /// writes no bundle (and so reads no file: the walk alone finds what is left out).
    private static func unbundled(in folder: String) throws -> [String] {
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return [] }
        let leftOut = LeftOut()
        var exporter = BundleExporter(createdAt: Date(), createdBy: "")
        exporter.warn = { leftOut.add($0) }
        try explainingKeep(of: folder) { try exporter.walk(directory: folder) }
        return leftOut.lines
    }

    /// Runs `body`, which reads `destination` to keep what it holds: a file it cannot read is
    /// said to be in the way of the import, not a fault of the bundle.
    private static func explainingKeep<T>(of destination: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch BundleError.unreadable(let path, let reason) where !reason.contains(", expected") {
            throw BundleError.unreadable(
                path: path, reason: "\(reason), expected to read it to keep what \(destination) holds before the import replaces it; make it readable, or import into a new folder")
        }
    }

    /// Puts the staged directory in the destination's place in one atomic step. The old
    /// contents, already saved, are removed, or, with `keepingOldAt`, moved there (never over
    /// anything: `-2`, `-3` … when it is taken). Returns a note when they could not all be
    /// removed, and where they were kept.
    /// `carryBack` is given the folder that holds the old contents once the new ones are in place,
    /// before the old ones are removed or moved aside.
    private func swap(
        _ staging: String, into destination: String, keepingOldAt kept: String?, carryBack: (_ old: String) -> Void
    ) throws -> (note: String?, keptAt: String?) {
        var left: String?, keptAt: String?
        func removeOld(_ old: String) {
            carryBack(old)
            if let kept {
                keptAt = Self.moveAside(old, to: kept)
                if keptAt == nil {
                    // Never removed when it cannot be kept: left where it is, and said.
                    let reason = FileError.reason(errno)
                    keptAt = old
                    left = "its old contents could not be moved to \(kept) (\(reason)), and stay in \(old); move that folder before the next import into \(destination), which would remove it"
                }
                return
            }
            guard let reason = FileIO.removeTree(old) else { return }
            left = "its old contents, saved in the bundle of what it held, could not all be removed from \(old): \(reason); remove that folder yourself"
        }
        var info = stat()
        if lstat(destination, &info) != 0 {
            guard rename(staging, destination) == 0 else { throw BundleImportError.io(path: destination, reason: FileError.reason(errno)) }
        } else if savetool_rename_exchange(staging, destination) == 0 {
            removeOld(staging)  // now the old contents, already saved
        } else if let kept {
            // A file system that cannot exchange: the old contents go to where they are kept,
            // then the new ones in their place, with a moment without the directory.
            guard let place = Self.moveAside(destination, to: kept) else {
                throw BundleImportError.io(
                    path: destination, reason: "its old contents could not be moved to \(kept): \(FileError.reason(errno)); the folder is as it was (its bundle stays beside it)")
            }
            guard rename(staging, destination) == 0 else {
                let reason = FileError.reason(errno)
                guard rename(place, destination) == 0 else {
                    throw BundleImportError.io(path: destination, reason: "\(reason); its old contents are in \(place)")
                }
                throw BundleImportError.io(path: destination, reason: reason)
            }
            carryBack(place)
            keptAt = place
        } else {
            // A file system that cannot exchange: two renames, with a moment without the directory.
            let old = staging + ".old"
            guard rename(destination, old) == 0 else { throw BundleImportError.io(path: destination, reason: FileError.reason(errno)) }
            guard rename(staging, destination) == 0 else {
                let reason = FileError.reason(errno)
                rename(old, destination)
                throw BundleImportError.io(path: destination, reason: reason)
            }
            removeOld(old)
        }
        FileIO.syncDirectory(FileIO.parentDirectory(of: destination))
        return (left, keptAt)
    }

    /// Moves the folder `old` to `kept` (or `kept-2`, `kept-3` …), never over anything, and
    /// returns where; `nil` when it cannot. An empty folder made exclusively takes the name
    /// first, and the rename replaces it (a folder may replace an empty one): this works on file
    /// systems without an exclusive rename, where a hard link, its usual stand-in, cannot link
    /// a folder.
    /// The backup repositories inside `folder` (folders holding a `.savetool-lock`), relative
    /// to it. Links are not followed, and a repository's own folders are not looked in.
    static func repositories(inside folder: String) -> [String] {
        var found: [String] = []
        func look(in relative: String) {
            let path = relative.isEmpty ? folder : ExactFileName.path(folder, relative)
            guard let entries = try? FileIO.entries(inExactPath: path) else { return }
            if !relative.isEmpty, entries.contains(where: { $0.bytes == Self.lockName }) {
                found.append(relative)
                return
            }
            for (bytes, type) in entries {
                let child = relative.isEmpty ? ExactFileName.string(bytes) : ExactFileName.path(relative, ExactFileName.string(bytes))
                var isFolder = type == UInt8(DT_DIR)
                if type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    isFolder = ExactFileName.withSystemPath(ExactFileName.path(folder, child)) { lstat($0, &info) } == 0 && info.st_mode & S_IFMT == S_IFDIR
                }
                if isFolder { look(in: child) }
            }
        }
        look(in: "")
        return found
    }

    private static let lockName = Array(RepositoryLock.fileName.utf8)

    /// Moves the repository at `relative` in the old contents `old` back into `destination`,
    /// where the restored folder does not hold that path itself and its parent is a folder;
    /// returns the note that says what became of it.
    static func carry(_ relative: String, from old: String, into destination: String) -> String {
        let (source, target) = (ExactFileName.path(old, relative), ExactFileName.path(destination, relative))
        let shown = ExactFileName.printable(relative)
        var info = stat()
        let why: String
        if ExactFileName.withSystemPath(target, { lstat($0, &info) }) == 0 {
            why = "the restored folder holds \(shown) itself"
        } else if ExactFileName.withSystemPath(FileIO.parentDirectory(of: target), { stat($0, &info) }) != 0 || info.st_mode & S_IFMT != S_IFDIR {
            why = "the restored folder has no folder \(ExactFileName.printable(FileIO.parentDirectory(of: relative))) for it"
        } else if ExactFileName.withSystemPath(source, { from in ExactFileName.withSystemPath(target) { rename(from, $0) } }) == 0 {
            return "the backup repository \(shown) inside the folder, which its backups leave out, is kept in place"
        } else {
            why = FileError.reason(errno)
        }
        return "the backup repository \(shown) inside the folder could not be kept in place (\(why)); it is in the bundle of the folder's old contents"
    }

    static func moveAside(_ old: String, to kept: String) -> String? {
        for attempt in 1...100 {
            let place = attempt == 1 ? kept : "\(kept)-\(attempt)"
            guard mkdir(place, 0o700) == 0 else {
                if errno == EEXIST { continue }
                return nil
            }
            if rename(old, place) == 0 { return place }
            let failure = errno
            rmdir(place)
            // Filled by someone else since it was made: another name.
            guard failure == ENOTEMPTY || failure == EEXIST else {
                errno = failure
                return nil
            }
        }
        return nil
    }

    /// Staging directories left by an import that was killed (`.name.savetool-XXXXXX`).
    static func removeAbandonedStaging(beside destination: String) {
        let name = URL(fileURLWithPath: destination).lastPathComponent
        let parent = FileIO.parentDirectory(of: destination)
        guard let siblings = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for sibling in siblings where sibling.hasPrefix(".\(name).savetool-") && sibling.count >= name.count + 16 {
            var info = stat()
            let path = parent + "/" + sibling
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                FileIO.removeTree(path)
            }
        }
    }
}
