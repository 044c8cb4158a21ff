import Foundation
import OrderedCollections
import SaveKit

/// The `manifest.json` of a save bundle: what the bundle holds, with a size and a SHA-256 for
/// every file, so that an import can check each byte before anything is written.
///
/// Format 2 lists every entry of the folder, not only its files: directories (empty ones too,
/// with their modes and times), symbolic links inside the tree, hard links, and for each entry
/// its owner, its extended attributes and its time to the nanosecond. Format 1 bundles (files
/// only) still import.
public struct BundleManifest: Sendable, Equatable {
    public static let format = "savetool.bundle/2"

    public struct File: Sendable, Equatable {
        /// What an entry is. Format 1 bundles hold files only.
        public enum EntryType: String, Sendable, Equatable {
            case file, directory, symlink, hardlink
        }

        /// Relative to the source directory, `/`-separated.
        public var path: String
        public var type: EntryType = .file
        /// A file's bytes; 0 for the other types.
        public var size: Int64
        /// Lower-case hexadecimal; empty for anything but a file.
        public var sha256: String
        /// Permission bits, with setuid, setgid and sticky.
        public var mode: UInt16
        public var modified: Timestamp
        /// A symbolic link's target as written, or the earlier path a hard link shares its data with.
        public var target: String?
        /// The owner's numbers, restored when importing as root (as `tar -p` does).
        public var owner: (uid: UInt32, gid: UInt32)?
        /// Extended attributes, by name.
        public var xattrs: OrderedDictionary<String, [UInt8]> = [:]
        /// Whether the file had holes: they are made again on import rather than written as zeros.
        public var sparse = false
        /// The codec the content was recognised as, when one was.
        public var codec: String?
        public var kind: String?
        public var version: Int?

        public init(
            path: String, type: EntryType = .file, size: Int64 = 0, sha256: String = "", mode: UInt16, modified: Timestamp,
            target: String? = nil, owner: (uid: UInt32, gid: UInt32)? = nil, codec: String? = nil
        ) {
            (self.path, self.type, self.size, self.sha256, self.mode, self.modified) = (path, type, size, sha256, mode, modified)
            (self.target, self.owner, self.codec) = (target, owner, codec)
        }

        /// The time as a `Date` (to about a microsecond).
        public var modifiedAt: Date { modified.date }

        public static func == (a: File, b: File) -> Bool {
            a.path == b.path && a.type == b.type && a.size == b.size && a.sha256 == b.sha256 && a.mode == b.mode && a.modified == b.modified
                && a.target == b.target && a.owner?.uid == b.owner?.uid && a.owner?.gid == b.owner?.gid && a.xattrs == b.xattrs
                && a.sparse == b.sparse && a.codec == b.codec && a.kind == b.kind && a.version == b.version
        }
    }

    public var createdAt: Date
    public var createdBy: String
    public var label: String?
    public var source: String
    /// The absolute path of the source directory, for backups: a repository tells two sources
    /// that share a name apart by it.
    public var sourcePath: String?
    public var files: [File]

    public init(createdAt: Date, createdBy: String, label: String?, source: String, sourcePath: String?, files: [File]) {
        (self.createdAt, self.createdBy, self.label, self.source, self.sourcePath, self.files) = (createdAt, createdBy, label, source, sourcePath, files)
    }

    /// A manifest of `summary`'s header with these entries.
    public init(_ summary: BundleSummary, files: [File]) {
        self.init(createdAt: summary.createdAt, createdBy: summary.createdBy, label: summary.label, source: summary.source, sourcePath: summary.sourcePath, files: files)
    }

    /// How many regular files (not directories or links) the bundle holds.
    public var fileCount: Int { files.lazy.filter { $0.type == .file }.count }
    /// The bytes of those files.
    public var byteCount: Int64 { files.reduce(0) { $0.addingSaturated($1.size) } }

    /// The manifest as typed JSON values, keys in the order bundle.md shows them.
    public var value: SaveValue {
        var root = header(totals: totals)
        root["files"] = .array(files.map(Self.value(of:)))
        return .dictionary(root)
    }

    /// What the header declares of the entries.
    var totals: ManifestTotals { ManifestTotals(summary) }

    /// Every member but `files`, in order.
    private func header(totals: ManifestTotals) -> OrderedDictionary<String, SaveValue> {
        var root: OrderedDictionary<String, SaveValue> = [
            "format": .string(Self.format),
            "createdAt": .string(Self.timestamp(createdAt)),
            "createdBy": .string(createdBy),
        ]
        if let label { root["label"] = .string(label) }
        root["source"] = .string(source)
        if let sourcePath { root["sourcePath"] = .string(sourcePath) }
        root["totals"] = totals.value
        return root
    }

    static func value(of file: File) -> SaveValue {
        var entry: OrderedDictionary<String, SaveValue> = ["path": .string(file.path)]
        if file.type != .file { entry["type"] = .string(file.type.rawValue) }
        if file.type == .file { entry["size"] = .integer(file.size); entry["sha256"] = .string(file.sha256) }
        entry["mode"] = .string(Self.octal(file.mode))
        entry["modifiedAt"] = .string(file.modified.description)
        if let target = file.target { entry["target"] = .string(target) }
        if let owner = file.owner { entry["uid"] = .integer(Int64(owner.uid)); entry["gid"] = .integer(Int64(owner.gid)) }
        if !file.xattrs.isEmpty {
            entry["xattrs"] = .dictionary(OrderedDictionary(uniqueKeysWithValues: file.xattrs.map { ($0.key, SaveValue.string(Data($0.value).base64EncodedString())) }))
        }
        if file.sparse { entry["sparse"] = .bool(true) }
        if let codec = file.codec { entry["codec"] = .string(codec) }
        if let kind = file.kind { entry["kind"] = .string(kind) }
        if let version = file.version { entry["version"] = .integer(Int64(version)) }
        return .dictionary(entry)
    }

    /// The manifest file's bytes: one JSON object, a member per line and one line per entry of
    /// `files`, so that it is written (and can be read) an entry at a time rather than built as
    /// one value tree.
    public func encoded() throws -> [UInt8] {
        var bytes = try encodedHeader(totals: totals)
        for (index, file) in files.enumerated() { bytes += Self.encodedEntry(file, first: index == 0) }
        return bytes + Self.encodedEnd(empty: files.isEmpty)
    }

    /// Every member but `files`, `totals` declaring what it holds, then `"files": [`.
    func encodedHeader(totals: ManifestTotals) throws -> [UInt8] {
        var bytes = Array("{\n".utf8)
        for (key, value) in header(totals: totals) {
            bytes += Array("  ".utf8) + (try Self.line(.string(key)))
            bytes += Array(": ".utf8) + (try Self.line(value)) + Array(",\n".utf8)
        }
        return bytes + Array("  \"files\": [".utf8)
    }

    /// One entry of `files`, on its own line: the compact JSON of ``value(of:)``, written
    /// straight into bytes (building a value tree and encoding it, for every file, was 12% of
    /// the samples in a profile of a 10,000-file export).
    static func encodedEntry(_ file: File, first: Bool) -> [UInt8] {
        // Each key goes in with the punctuation around it as one literal: an append each for
        // the comma, the quotes and the name was a quarter of an entry's cost.
        var line = EntryLine()
        line.raw(first ? "\n    {\"path\":" : ",\n    {\"path\":")
        line.string(file.path)
        if file.type != .file { line.raw(",\"type\":"); line.string(file.type.rawValue) }
        if file.type == .file {
            line.raw(",\"size\":"); line.integer(file.size)
            line.raw(",\"sha256\":"); line.string(file.sha256)
        }
        line.raw(",\"mode\":"); line.octal(file.mode)
        line.raw(",\"modifiedAt\":"); line.timestamp(file.modified)
        if let target = file.target { line.raw(",\"target\":"); line.string(target) }
        if let owner = file.owner {
            line.raw(",\"uid\":"); line.integer(Int64(owner.uid))
            line.raw(",\"gid\":"); line.integer(Int64(owner.gid))
        }
        if !file.xattrs.isEmpty {
            line.raw(",\"xattrs\":")
            // As the codec writes a one-key dictionary whose key is a typed-JSON marker.
            let wrapped = file.xattrs.count == 1 && JSONCodec.isTypedMarkerKey(file.xattrs.keys[0])
            if wrapped { line.raw("{\"$dict\":") }
            var separator: StaticString = "{"
            for (name, value) in file.xattrs {
                line.raw(separator)
                line.string(name)
                line.raw(":")
                line.string(Data(value).base64EncodedString())
                separator = ","
            }
            line.raw(wrapped ? "}}" : "}")
        }
        if file.sparse { line.raw(",\"sparse\":true") }
        if let codec = file.codec { line.raw(",\"codec\":"); line.string(codec) }
        if let kind = file.kind { line.raw(",\"kind\":"); line.string(kind) }
        if let version = file.version { line.raw(",\"version\":"); line.integer(Int64(version)) }
        line.raw("}")
        return line.bytes
    }

    /// Compact JSON written as the JSON codec writes it: the same escapes, the same digits.
    struct EntryLine {
        var bytes: [UInt8] = []

        init() { bytes.reserveCapacity(256) }

        mutating func raw(_ text: StaticString) { text.withUTF8Buffer { bytes.append(contentsOf: $0) } }

        /// Decimal digits, made on the stack (`String(value)` made a string for each).
        mutating func integer(_ value: Int64) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
                var rest = value.magnitude
                var start = digits.count
                repeat {
                    start -= 1
                    digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                } while rest > 0
                if value < 0 { bytes.append(UInt8(ascii: "-")) }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
            }
        }

        /// A mode as a string of at least four octal digits, as ``BundleManifest/octal(_:)``
        /// spells it.
        mutating func octal(_ mode: UInt16) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 8) { digits in
                var rest = mode
                var start = digits.count - 1
                digits[start] = UInt8(ascii: "\"")
                while rest > 0 || digits.count - start <= 4 {
                    start -= 1
                    digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest & 7)
                    rest >>= 3
                }
                start -= 1
                digits[start] = UInt8(ascii: "\"")
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
            }
        }

        /// A time as a string: its text has nothing to escape.
        mutating func timestamp(_ time: Timestamp) {
            bytes.append(UInt8(ascii: "\""))
            time.append(to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }

        mutating func string(_ text: String) {
            bytes.append(UInt8(ascii: "\""))
            var text = text
            text.withUTF8 { utf8 in
                // What needs no escape goes in a run at a time.
                var start = 0
                for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                    escape(byte)
                    start = index + 1
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
            }
            bytes.append(UInt8(ascii: "\""))
        }

        private mutating func escape(_ byte: UInt8) {
            switch byte {
            case 0x22: raw("\\\"")
            case 0x5C: raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            default:
                let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
            }
        }
    }

    /// What closes `files` and the manifest.
    static func encodedEnd(empty: Bool) -> [UInt8] {
        Array((empty ? "]\n}\n" : "\n  ]\n}\n").utf8)
    }

    /// A value as compact JSON, without the newline the codec ends a document with.
    static func line(_ value: SaveValue) throws -> ArraySlice<UInt8> {
        var compact = EncodingOptions()
        compact.pretty = false
        let encoded = try JSONCodec().encode(value, options: compact)
        return encoded.last == 0x0A ? encoded.dropLast() : encoded[...]
    }

    /// Four octal digits, as `ls` and `chmod` show a mode (by hand: `String(format:)` is slow
    /// enough to show in a profile of a 10,000-file export).
    static func octal(_ mode: UInt16) -> String {
        zeroPadded(String(mode, radix: 8), width: 4)
    }

    /// `digits` with leading zeros up to `width` (what `%0Nd` does, without its cost).
    static func zeroPadded(_ digits: String, width: Int) -> String {
        String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// Whole seconds, UTC: a manifest says when it was made, not to the nanosecond.
    static func timestamp(_ date: Date) -> String {
        RFC3339.format(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.rounded(.down)))
    }
}

/// A file time to the nanosecond, as the file system keeps it (a `Date` holds about a microsecond).
public struct Timestamp: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var seconds: Int64
    public var nanoseconds: Int32

    public init(seconds: Int64, nanoseconds: Int32 = 0) { (self.seconds, self.nanoseconds) = (seconds, nanoseconds) }
    public init(_ time: timespec) { self.init(seconds: Int64(time.tv_sec), nanoseconds: Int32(time.tv_nsec)) }

    public var timespec: Glibc.timespec { Glibc.timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds)) }
    public var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }

    /// RFC 3339 in UTC, with the nanoseconds when there are any: `2026-11-20T21:14:03.123456789Z`.
    /// A time outside the years 1 to 9999, which RFC 3339 cannot spell (tmpfs, XFS and Btrfs
    /// can hold one), is `@` and the seconds since 1970 as a decimal number, to the nanosecond:
    /// `@-99999999999.5` is half a second before −99999999999 (`tv_sec` −100000000000, `tv_nsec`
    /// 5e8, as the file system keeps it), so that any tool that reads a number reads the time.
    public var description: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``description``'s text, without making a string (a manifest writes one per entry).
    func append(to bytes: inout [UInt8]) {
        guard RFC3339.isInRange(Date(timeIntervalSince1970: Double(seconds))) else {
            bytes.append(UInt8(ascii: "@"))
            if seconds < 0 && nanoseconds > 0 {
                // −100000000000 and 5e8 ns is −99999999999.5: the whole part moves one toward 0.
                bytes.append(UInt8(ascii: "-"))
                bytes.append(contentsOf: String(-(seconds + 1)).utf8)
                RFC3339.appendFraction(nanoseconds: 1_000_000_000 - nanoseconds, to: &bytes)
            } else {
                bytes.append(contentsOf: String(seconds).utf8)
                RFC3339.appendFraction(nanoseconds: nanoseconds, to: &bytes)
            }
            return
        }
        RFC3339.appendUnixTime(seconds: seconds, nanoseconds: nanoseconds, to: &bytes)
    }

    /// Reads what ``description`` writes (and any RFC 3339 time, to the nanosecond).
    public init?(parsing text: String) {
        if text.hasPrefix("@") {
            let parts = text.dropFirst().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            let negative = parts[0].hasPrefix("-")
            // The whole part's digits alone: its sign is the whole number's (`@-0.5` is below 0).
            let digits = parts[0].dropFirst(negative ? 1 : 0)
            // As a magnitude: −9223372036854775808 is a time `timespec` holds, its magnitude no Int64.
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }), let whole = UInt64(digits) else { return nil }
            var nanoseconds: Int32 = 0
            if parts.count == 2 {
                guard !parts[1].isEmpty, let fraction = RFC3339.nanoseconds(fraction: parts[1].utf8) else { return nil }
                nanoseconds = fraction
            }
            guard negative else {
                guard let seconds = Int64(exactly: whole) else { return nil }
                self.init(seconds: seconds, nanoseconds: nanoseconds)
                return
            }
            // −99999999999.5 is −100000000000 and 5e8 ns, as `timespec` holds it: the whole part
            // one further from 0 when there is a fraction.
            let magnitude = nanoseconds > 0 ? whole + 1 : whole
            guard whole < UInt64.max, magnitude <= UInt64(Int64.max) + 1 else { return nil }
            self.init(seconds: magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude), nanoseconds: nanoseconds > 0 ? 1_000_000_000 - nanoseconds : 0)
            return
        }
        guard let (seconds, nanoseconds) = RFC3339.parseUnixTime(text) else { return nil }
        self.init(seconds: seconds, nanoseconds: nanoseconds)
    }

}
