import Foundation
import OrderedCollections
import SaveKit

/// A manifest read and checked as a whole, ready to be gone through in order.
struct CheckedManifest {
    var summary: BundleSummary
    var formatTwo: Bool
    var entries: ManifestEntries

    /// The bytes the files' contents take once written: the holes of sparse files are made, not written.
    var writtenBytes: Int64 { summary.writtenByteCount }

    /// The manifest with every entry held (for callers that want them all, not for streaming).
    func whole() throws -> BundleManifest {
        var files: [BundleManifest.File] = []
        try entries.forEach { files.append($1) }
        return BundleManifest(summary, files: files)
    }
}

/// A manifest's entries in their order: held when they are few, else kept as compact records
/// in a spool (a million entries held would take most of a gigabyte).
struct ManifestEntries {
    fileprivate enum Storage {
        case held([BundleManifest.File])
        case records(ManifestRecords)
    }

    fileprivate var storage: Storage

    init(held files: [BundleManifest.File]) { storage = .held(files) }
    fileprivate init(records: ManifestRecords) { storage = .records(records) }

    /// Entries held in memory, or `nil` when they are read again from their records.
    var held: [BundleManifest.File]? {
        if case .held(let files) = storage { return files }
        return nil
    }

    /// Calls `body` with each entry and its index, in the manifest's order.
    func forEach(_ body: (Int, BundleManifest.File) throws -> Void) throws {
        var iterator = makeIterator()
        var index = 0
        while let file = try iterator.next() {
            try body(index, file)
            index += 1
        }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .held(let files): Iterator(files: files)
        case .records(let records): Iterator(records: records.makeIterator())
        }
    }

    struct Iterator {
        private var files: [BundleManifest.File] = []
        private var records: ManifestRecords.Iterator?
        private var index = 0

        fileprivate init(files: [BundleManifest.File]) { self.files = files }
        fileprivate init(records: ManifestRecords.Iterator) { self.records = records }

        mutating func next() throws -> BundleManifest.File? {
            if records != nil { return try records!.next() }
            defer { index += 1 }
            return index < files.count ? files[index] : nil
        }
    }

    /// Entries gathered one at a time: held up to ``ManifestReader/heldEntries``, then all
    /// moved to records.
    struct Builder {
        private var held: [BundleManifest.File] = []
        private var records: ManifestRecords?

        mutating func append(_ file: BundleManifest.File) throws {
            if let records { return try records.append(file) }
            guard held.count == ManifestReader.heldEntries else { return held.append(file) }
            let records = ManifestRecords()
            for earlier in held { try records.append(earlier) }
            try records.append(file)
            (self.records, held) = (records, [])
        }

        var entries: ManifestEntries {
            records.map(ManifestEntries.init(records:)) ?? ManifestEntries(held: held)
        }
    }
}

/// Reads a bundle's `manifest.json`: its header, then every entry one at a time, each checked
/// on its own and against the others (``ManifestChecks``), without building the whole
/// document as values.
enum ManifestReader {
    /// Up to this many entries are kept in memory after the checks (about 0.7 KB each); past
    /// it, all are kept as compact records in a spool (``ManifestRecords``).
    static let heldEntries = 10_000
    /// A manifest up to this size is decoded whole to describe a fault by its line and column;
    /// past it, a fault is placed by its byte offset.
    static let wholeDocumentLimit = 64 << 20

    /// Where a streaming read hands each batch of checked entries (last entry first, see
    /// ``ManifestStream/post(reversed:)``) as it goes, with the totals of the entries checked
    /// so far (the summary's counts, and so the bytes the files' contents take once written).
    typealias HandOff = @Sendable (_ reversedBatch: [BundleManifest.File], _ summary: BundleSummary) -> Void

    /// Thrown by a streaming read that cannot hand its entries over once each, in order: a
    /// manifest not in export's order, or one whose `files` ends before the document does.
    /// The import then reads the manifest whole before landing anything, as before.
    struct CannotStream: Error {}

    /// The checked manifest in `spool`. With `handOff`, the entries are handed over as they are
    /// checked rather than kept: the result holds none (its totals are the whole manifest's).
    static func read(
        _ spool: Spool, bundle: String, maxEntries: Int, wholeDocumentLimit: Int = wholeDocumentLimit, handOff: HandOff? = nil
    ) throws -> CheckedManifest {
        if let bytes = spool.contents {
            return try read(bytes, bundle: bundle, maxEntries: maxEntries, wholeDocumentLimit: wholeDocumentLimit, handOff: handOff)
        }
        let paged = spool.paged
        do {
            let manifest = try read(paged, bundle: bundle, maxEntries: maxEntries, wholeDocumentLimit: wholeDocumentLimit, handOff: handOff)
            if let failure = paged.failure { throw failure }
            return manifest
        } catch {
            throw paged.failure ?? error
        }
    }

    private static func read<Bytes: ManifestBytes>(
        _ bytes: Bytes, bundle: String, maxEntries: Int, wholeDocumentLimit: Int, handOff: HandOff?
    ) throws -> CheckedManifest {
        // `files` is first taken to end where the document does (``ManifestLayout/members(_:guessingArray:)``),
        // which spares a walk through every entry. When that guess is wrong, or the header read
        // with it is at fault (a member after `files` went unseen), the manifest is read again
        // without it, and a fault reported from that reading. A fault in an entry is the same
        // either way (the guessed array holds the real one's entries first) and is reported at once.
        if let manifest = try read(bytes, bundle: bundle, maxEntries: maxEntries, wholeDocumentLimit: wholeDocumentLimit, guessingFilesEnd: true, handOff: handOff) {
            return manifest
        }
        // Entries may have been handed over already: the reading again would hand them twice.
        if handOff != nil { throw CannotStream() }
        return try read(bytes, bundle: bundle, maxEntries: maxEntries, wholeDocumentLimit: wholeDocumentLimit, guessingFilesEnd: false, handOff: nil)!
    }

    private static let filesKey = Array(#""files""#.utf8)
    private static let totalsKey = Array(#""totals""#.utf8)

    /// The totals the header of the manifest in `spool` declares before `files`, read without
    /// its entries; `nil` when it declares none there, or when they or the layout are at fault
    /// (reading the whole manifest then says how).
    static func declaredTotals(in spool: Spool) -> ManifestTotals? {
        if let bytes = spool.contents { return declaredTotals(in: bytes) }
        return declaredTotals(in: spool.paged)
    }

    private static func declaredTotals<Bytes: ManifestBytes>(in bytes: Bytes) -> ManifestTotals? {
        guard let members = ManifestLayout.members(bytes, guessingArray: filesKey),
            let totals = members.firstIndex(where: { $0.key == totalsKey }),
            let files = members.firstIndex(where: { $0.key == filesKey }), totals < files,
            let value = try? JSONCodec().decode(bytes.bytes(in: members[totals].value))
        else { return nil }
        return try? ManifestTotals.declared(by: value).get()
    }

    /// A fault of the header while guessing where `files` ends is not described (that would
    /// decode the whole document): the reading without the guess does that.
    private struct Unsettled: Error {}

    /// The manifest in `bytes`; `nil` only when `guessingFilesEnd` and the guess was wrong.
    private static func read<Bytes: ManifestBytes>(
        _ bytes: Bytes, bundle: String, maxEntries: Int, wholeDocumentLimit: Int, guessingFilesEnd guessing: Bool, handOff: HandOff?
    ) throws -> CheckedManifest? {
        func bad(_ reason: String) -> BundleImportError { .badManifest(bundle: bundle, reason: reason) }
        // What the layout cannot delimit, or a value that does not decode, the decoder of the
        // whole document describes (with its line and column).
        func malformed(_ partError: (any Error)? = nil, at offset: Int? = nil) -> BundleImportError {
            if bytes.count <= wholeDocumentLimit {
                do { _ = try JSONCodec().decode(bytes.bytes(in: 0..<bytes.count)) } catch { return bad("\(error)") }
            }
            let place = offset.map { "at byte \($0): " } ?? ""
            return bad(place + (partError.map { "\($0)" } ?? "not a JSON object, expected the manifest's object"))
        }
        func decode(_ range: Range<Int>) throws -> SaveValue {
            do { return try JSONCodec().decode(bytes.bytes(in: range)) } catch { throw malformed(error, at: range.lowerBound) }
        }
        guard let members = ManifestLayout.members(bytes, guessingArray: guessing ? filesKey : nil) else {
            if guessing { return nil }
            throw malformed()
        }
        func headerFault(_ error: (any Error)? = nil, at offset: Int? = nil) -> any Error { guessing ? Unsettled() : malformed(error, at: offset) }
        let formatTwo: Bool, filesRange: Range<Int>, emptySummary: BundleSummary, declared: ManifestTotals?
        do {
            var header: OrderedDictionary<String, SaveValue> = [:]
            var files: Range<Int>?
            for (key, range) in members {
                let keyValue: SaveValue
                do { keyValue = try JSONCodec().decode(key) } catch { throw headerFault(error) }
                // A key spelled twice, once with escapes: the whole decoder names the duplicate.
                guard case .string(let name) = keyValue, name != "files" || files == nil, header[name] == nil else { throw headerFault() }
                if name == "files" {
                    files = range
                } else {
                    do { header[name] = try JSONCodec().decode(bytes.bytes(in: range)) } catch { throw headerFault(error, at: range.lowerBound) }
                }
            }
            let value = SaveValue.dictionary(header)
            guard let named = value["format"]?.stringValue else { throw bad("no \"format\", expected \"\(BundleManifest.format)\"") }
            let version = named.hasPrefix("savetool.bundle/") ? named.dropFirst("savetool.bundle/".count) : ""
            let major = version.split(separator: ".").first ?? ""
            guard ["1", "2"].contains(major) else {
                throw bad("the format \"\(named)\", expected \"\(BundleManifest.format)\" (a newer savetool may read it)")
            }
            guard let files, bytes[files.lowerBound] == UInt8(ascii: "[") else { throw bad("no \"files\" array, expected the list of files") }
            (formatTwo, filesRange) = (major == "2", files)
            switch header["totals"].map(ManifestTotals.declared(by:)) {
            case .failure(let refused)?: throw bad(refused.reason)
            case .success(let totals)?: declared = totals
            case nil: declared = nil
            }
            emptySummary = BundleSummary(
                format: named, createdAt: value["createdAt"]?.stringValue.flatMap(RFC3339.parse) ?? Date(timeIntervalSince1970: 0),
                createdBy: value["createdBy"]?.stringValue ?? "", label: value["label"]?.stringValue,
                source: value["source"]?.stringValue ?? "", sourcePath: value["sourcePath"]?.stringValue)
        } catch {
            if guessing { return nil }
            throw error
        }

        // The checks assume the order export writes (by UTF-8 bytes), which rules out duplicates
        // without a table of every path; a manifest in any other order is checked again with one.
        var unordered = false
        var kept: EntryKeeper
        while true {
            kept = EntryKeeper(
                checks: ManifestChecks(bundle: bundle, unordered: unordered), summary: emptySummary, declared: declared, formatTwo: formatTwo, handOff: handOff)
            var index = -1
            do {
                let delimited: Bool
                do {
                    delimited = try ManifestLayout.forEachElement(bytes, in: filesRange, reading: ManifestEntryFields.element(at:)) { range, scanned in
                        index += 1
                        guard index < maxEntries else {
                            throw BundleImportError.limitExceeded(bundle: bundle, reason: "more than \(maxEntries) entries (files, folders and links)", limit: .entries)
                        }
                        try kept.add(scanned ?? ManifestEntryFields(decode(range)), index: index)
                    }
                } catch {
                    // A fault of an entry kept before this one is the one to report.
                    try kept.finish()
                    throw error
                }
                try kept.finish()
                guard delimited else {
                    if guessing { return nil }
                    throw malformed()
                }
                break
            } catch is ManifestChecks.Unordered {
                // Entries before this one were handed over, and would be again.
                if handOff != nil { throw CannotStream() }
                unordered = true
            }
        }
        var checks = kept.checks
        let summary = kept.summary
        if let why = declared?.mismatch(with: summary) { throw bad(why) }
        if handOff != nil {
            // The entries went to the import as they came. What relates an entry to those after
            // it (a hard link's target, a parent not listed) is checked by reading the manifest
            // again whole: rare (export lists every folder), and the import swaps nothing in first.
            if checks.needsSecondPass {
                return try read(bytes, bundle: bundle, maxEntries: maxEntries, wholeDocumentLimit: wholeDocumentLimit, handOff: nil)
            }
            return CheckedManifest(summary: summary, formatTwo: formatTwo, entries: ManifestEntries(held: []))
        }
        let checked = kept.entries.entries
        if checks.needsSecondPass {
            try checked.forEach { index, file in try checks.checkAgain(file, index: index) }
            try checks.finish()
        }
        return CheckedManifest(summary: summary, formatTwo: formatTwo, entries: checked)
    }

    /// One entry of `files`, checked on its own: a safe relative path, a known type, a size and
    /// digest for a file, a target for a link that stays inside.
    static func entry(from file: ManifestEntryFields, index: Int, formatTwo: Bool, bundle: String) throws -> BundleManifest.File {
        func bad(_ reason: String) -> BundleImportError { .badManifest(bundle: bundle, reason: reason) }
        guard let path = file.path else { throw bad("files/\(index) has no \"path\", expected a relative path") }
        if let problem = BundleImporter.unsafePathReason(path) { throw BundleImportError.unsafeEntry(bundle: bundle, entry: path, reason: problem) }
        // Bytes written as escapes that are UTF-8 after all (`\u{EFC3}\u{EFA9}` for é): one
        // file would have two spellings, and export never writes them so.
        // Two calls rather than a loop over an array of both: no allocation for every entry.
        let notCanonical = ExactFileName.isCanonical(path) ? file.target.flatMap { ExactFileName.isCanonical($0) ? nil : $0 } : path
        if let name = notCanonical {
            throw BundleImportError.unsafeEntry(
                bundle: bundle, entry: path, reason: "\(ExactFileName.printable(name)) spells as escapes bytes that are UTF-8, expected each name in its one spelling (docs/bundles.md)")
        }
        let typeName = file.type ?? "file"
        guard let type = BundleManifest.File.EntryType(rawValue: typeName), formatTwo || type == .file else {
            throw bad("\(path) has the type \"\(typeName)\", expected \(formatTwo ? "file, directory, symlink or hardlink" : "a file (format 1)")")
        }
        var size: Int64 = 0, sha256 = ""
        if type == .file {
            guard let declared = file.size, declared >= 0 else { throw bad("\(path) has no valid \"size\", expected a byte count") }
            guard var digest = file.sha256, digest.withUTF8({ $0.count == 64 && $0.allSatisfy { $0 &- 0x30 < 10 || $0 &- 0x61 < 6 } }) else {
                throw bad("\(path) has no valid \"sha256\", expected 64 lower-case hex digits")
            }
            (size, sha256) = (declared, digest)
        }
        if type == .symlink || type == .hardlink {
            guard let target = file.target, !target.isEmpty else { throw bad("\(path) is a \(typeName) without a \"target\", expected one") }
            if type == .symlink, let problem = BundleImporter.symbolicLinkProblem(path, target) {
                throw BundleImportError.unsafeEntry(bundle: bundle, entry: path, reason: problem)
            }
            // A hard link's target must be a file listed before it, which only a second reading
            // of the manifest can tell; the import may land entries before that reading ends,
            // so the target is first checked as any listed path is: relative, without `..`.
            if type == .hardlink, let problem = BundleImporter.unsafePathReason(target) {
                throw BundleImportError.unsafeEntry(bundle: bundle, entry: path, reason: "its target \(ExactFileName.printable(target)): \(problem)")
            }
        }
        // A mode or a time that cannot be read is refused rather than guessed: a private save
        // given 0644, or a time of 1970, would be restored without a word.
        guard let mode = file.mode.flatMap(Self.permissionBits) else {
            let found = file.mode.map { "the mode \"\(ExactFileName.printable(String($0.prefix(78))))\"" } ?? file.unreadableMode.map { "the mode \(ExactFileName.printable($0))" }
            throw bad("\(path) has \(found ?? "no \"mode\""), expected permission bits in octal, such as \"0644\" (at most 7777)")
        }
        guard let modified = file.modified else {
            throw bad(
                file.unreadableTime.map { "\(path) has the modifiedAt \(ExactFileName.printable($0)), expected an RFC 3339 time such as \"2026-11-20T21:14:03Z\" or @ and the seconds since 1970" }
                    ?? "\(path) has no \"modifiedAt\", expected an RFC 3339 time such as \"2026-11-20T21:14:03Z\"")
        }
        var entry = BundleManifest.File(
            path: path, type: type, size: size, sha256: sha256, mode: formatTwo ? mode & 0o7777 : mode & 0o777, modified: modified,
            target: file.target, codec: file.codec)
        if let uid = file.uid, let gid = file.gid, uid >= 0, gid >= 0, uid <= UInt32.max, gid <= UInt32.max {
            entry.owner = (UInt32(uid), UInt32(gid))
        }
        for (name, value) in file.xattrs {
            guard let text = value.stringValue, let bytes = Data(base64Encoded: text) else { throw bad("\(path): xattr \(name), expected base64") }
            entry.xattrs[name] = Array(bytes)
        }
        entry.sparse = file.sparse
        (entry.kind, entry.version) = (file.kind, file.version.map(Int.init))
        return entry
    }
}

extension ManifestReader {
    /// `0644`, `4755` or `644`: permission bits with setuid, setgid and sticky, in octal, as
    /// export writes them; `nil` for anything else.
    static func permissionBits(_ text: String) -> UInt16? {
        // Six digits at most (`004755`), summed in 32 bits: none of them can wrap past 0o7777.
        var value: UInt32 = 0
        var digits = 0
        for byte in text.utf8 {
            guard byte &- UInt8(ascii: "0") < 8, digits < 6 else { return nil }
            value = value << 3 | UInt32(byte &- UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 && value <= 0o7777 ? UInt16(value) : nil
    }
}

/// The second half of reading a manifest's entries, on a thread of its own: each entry's
/// members, as read, become an entry checked on its own (``ManifestReader/entry(from:index:formatTwo:bundle:)``),
/// then against the others (``ManifestChecks``), and are counted and kept
/// (``ManifestEntries/Builder``) while the next ones are read. Nothing else runs while a
/// manifest is read before an import lands anything, so the other core took none of it
/// before (docs/performance.md). Entries are kept in order, so the first failure is the
/// first entry's at fault, whichever thread finds it.
private final class EntryKeeper: @unchecked Sendable {
    /// Entries are handed over this many at a time, at most `slots` batches waiting: a
    /// hand-over costs a wake-up of each thread (as ``BundleImporter``'s landing found), which
    /// 256 entries make small, and eight batches hold about a megabyte.
    private static let batchSize = 256
    // The queue's alone until ``finish()`` returns, then the caller's.
    private(set) var checks: ManifestChecks
    private(set) var summary: BundleSummary
    /// What the header declares: no entry past it is kept or handed over.
    private let declared: ManifestTotals?
    private(set) var entries = ManifestEntries.Builder()
    private let queue = DispatchQueue(label: "savetool.manifest.keeping")
    private let slots = DispatchSemaphore(value: 8)
    private let lock = NSLock()
    private var failure: (any Error)?
    private var batch: [(index: Int, fields: ManifestEntryFields)] = []
    private let formatTwo: Bool
    /// Where checked entries go instead of being kept, when the manifest is streamed.
    private let handOff: ManifestReader.HandOff?

    init(checks: ManifestChecks, summary: BundleSummary, declared: ManifestTotals?, formatTwo: Bool, handOff: ManifestReader.HandOff?) {
        (self.checks, self.summary, self.declared, self.formatTwo, self.handOff) = (checks, summary, declared, formatTwo, handOff)
    }

    /// Keeps the entry `fields` describe after the entries before it; throws the failure of
    /// one of those, if any.
    func add(_ fields: ManifestEntryFields, index: Int) throws {
        batch.append((index, fields))
        if batch.count == Self.batchSize { try handOver() }
    }

    private func handOver() throws {
        if let failure = lock.withLock({ failure }) { throw failure }
        guard !batch.isEmpty else { return }
        let work = batch
        batch.removeAll(keepingCapacity: true)
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard lock.withLock({ failure == nil }) else { return }
            do {
                var checked: [BundleManifest.File] = []
                if handOff != nil { checked.reserveCapacity(work.count) }
                for (index, fields) in work {
                    let file = try ManifestReader.entry(from: fields, index: index, formatTwo: formatTwo, bundle: checks.bundle)
                    try checks.check(file, index: index)
                    summary.add(file)
                    if let why = declared?.exceeded(by: summary) {
                        throw BundleImportError.badManifest(bundle: checks.bundle, reason: "at \(ExactFileName.printable(file.path)): " + why)
                    }
                    if handOff != nil { checked.append(file) } else { try entries.append(file) }
                }
                if let handOff {
                    checked.reverse()
                    handOff(checked, summary)
                }
            } catch {
                lock.withLock { failure = error }
            }
        }
    }

    /// Waits until every entry added is kept; throws the first failure.
    func finish() throws {
        try? handOver()
        queue.sync {}
        if let failure = lock.withLock({ failure }) { throw failure }
    }
}

/// The checks that relate a manifest's entries to each other, made with memory that does not
/// grow with their number when they come in export's order:
/// - each path once, also after Unicode normalisation: in byte order a repeat is the previous
///   path again, and only a path with a non-ASCII byte (or `K`, `;`, `` ` ``, which a non-ASCII
///   character normalises to) can equal another spelling, so only those are remembered;
/// - nothing inside a file or a link: the directories are remembered, and a path's parent that
///   is not one is checked in a second pass (savetool lists every directory, so there is none);
/// - a hard link's target is a file listed before it: checked in a second pass, when there are
///   hard links.
struct ManifestChecks {
    /// Thrown when the manifest is not in byte order: the checks start again with every path remembered.
    struct Unordered: Error {}

    let bundle: String
    let unordered: Bool
    private var previous: String?
    /// The folder of the last entry whose parents were found listed (or noted as unlisted).
    private var settledFolder: String?
    private var spellings: Set<String> = []
    private var directories: Set<String> = []
    /// Parents not listed as directories (when seen), each with the first path inside it.
    private var unlistedParents: [String: String] = [:]
    /// Each hard link's target (by its bytes: the link is made with that exact name), with the first link to it.
    private var linkTargets: [[UInt8]: (index: Int, path: String)] = [:]
    private var targetIndexes: [[UInt8]: Int] = [:]

    init(bundle: String, unordered: Bool) { (self.bundle, self.unordered) = (bundle, unordered) }

    var needsSecondPass: Bool { !unlistedParents.isEmpty || !linkTargets.isEmpty }

    mutating func check(_ file: BundleManifest.File, index: Int) throws {
        let path = file.path
        if !unordered {
            if let previous, case let order = PathBytes.compare(previous, path), order >= 0 {
                if order == 0 { throw duplicate(path) }
                throw Unordered()
            }
            previous = path
        }
        // Swift compares strings by canonical equivalence: NFC and NFD spellings of one name
        // collide here, as they would on a file system that normalises names.
        if unordered || Self.mayEqualAnotherSpelling(path) {
            guard spellings.insert(path).inserted else { throw duplicate(path) }
        }
        if file.type == .directory { directories.insert(path) }
        if file.type == .hardlink, let target = file.target, linkTargets[Array(target.utf8)] == nil { linkTargets[Array(target.utf8)] = (index, path) }
        // By bytes: a "/" followed by a combining mark is one Character, but still a separator.
        // Most entries share the folder of the one before, whose parents were settled then:
        // that folder is compared in place, and a string made only for a new one.
        guard let sameFolder = PathBytes.folder(of: path, is: settledFolder) else { return }
        if !sameFolder {
            let utf8 = path.utf8
            let folder = String(Substring(utf8[..<utf8.lastIndex(of: UInt8(ascii: "/"))!]))
            var parent = Substring(folder)
            while true {
                let name = String(parent)
                if directories.contains(name) || unlistedParents[name] != nil { break }
                unlistedParents[name] = path
                guard let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) else { break }
                parent = Substring(parent.utf8[..<slash])
            }
            settledFolder = folder
        }
    }


    /// The second pass, over every entry again.
    mutating func checkAgain(_ file: BundleManifest.File, index: Int) throws {
        // Nothing lies inside a file or a link ("a" a file and "a/b"): only inside a directory.
        if file.type != .directory, let inside = unlistedParents[file.path] {
            let what = file.type == .symlink ? "a symbolic link, which an import never writes through" : "listed as a file"
            throw BundleImportError.unsafeEntry(bundle: bundle, entry: inside, reason: "inside \(file.path), \(what), expected entries inside folders only")
        }
        if file.type == .file, !linkTargets.isEmpty, case let bytes = Array(file.path.utf8), linkTargets[bytes] != nil, targetIndexes[bytes] == nil {
            targetIndexes[bytes] = index
        }
    }

    func finish() throws {
        for (target, link) in linkTargets.sorted(by: { $0.value.index < $1.value.index }) {
            guard let at = targetIndexes[target], at < link.index else {
                throw BundleImportError.unsafeEntry(
                    bundle: bundle, entry: link.path, reason: "a hard link to \(String(decoding: target, as: UTF8.self)), expected a file listed before it")
            }
        }
    }

    private func duplicate(_ path: String) -> BundleImportError {
        .unsafeEntry(bundle: bundle, entry: path, reason: "listed twice (or once more in another Unicode normalisation), expected each file once")
    }

    /// Whether another byte sequence could be canonically equivalent to this path: one with a
    /// non-ASCII byte, or with one of the three ASCII characters a non-ASCII character
    /// normalises to (U+212A KELVIN SIGN is `K`, U+037E is `;`, U+1FEF is `` ` ``).
    static func mayEqualAnotherSpelling(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { bytes in
            for byte in bytes where byte >= 0x80 || byte == UInt8(ascii: "K") || byte == UInt8(ascii: ";") || byte == UInt8(ascii: "`") {
                return true
            }
            return false
        }
    }
}
