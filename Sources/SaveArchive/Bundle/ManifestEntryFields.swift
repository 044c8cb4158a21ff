import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The members of one manifest entry that an import reads, whichever way they were read.
///
/// Entries of the shape export writes (known keys, plain strings, integers, `true`/`false`) are
/// read straight from their bytes (``init(scanning:)``), which takes a fraction of decoding them
/// as a `SaveValue`: that decoding was the largest part of reading a manifest, and reading the
/// manifest is a part of an import that nothing else overlaps. Anything else (an escape, an
/// unknown key, a key twice, a number with a fraction, extended attributes) is decoded by the
/// JSON codec, as every entry was before, so both ways give the same entry or the same error.
struct ManifestEntryFields: Sendable {
    var path: String?
    var type: String?
    var size: Int64?
    var sha256: String?
    var mode: String?
    /// `modifiedAt`, read; `nil` when it is missing or not a time.
    var modified: Timestamp?
    /// What `mode` held when it is there but is not a string, as JSON, for the error.
    var unreadableMode: String?
    /// What `modifiedAt` held when it is there but is not a time, as JSON, for the error.
    var unreadableTime: String?
    var target: String?
    var uid: Int64?
    var gid: Int64?
    var codec: String?
    var kind: String?
    var version: Int64?
    var sparse = false
    var xattrs: [(name: String, value: SaveValue)] = []

    /// The members of a decoded entry, as ``ManifestReader/entry(from:index:formatTwo:bundle:)`` reads them.
    init(_ file: SaveValue) {
        func integer(_ key: String) -> Int64? {
            if case .integer(let value)? = file[key] { return value }
            return nil
        }
        path = file["path"]?.stringValue
        type = file["type"]?.stringValue
        size = integer("size")
        sha256 = file["sha256"]?.stringValue
        if let value = file["mode"] {
            mode = value.stringValue
            if mode == nil { unreadableMode = String(value.compactText.prefix(80)) }
        }
        if let time = file["modifiedAt"] {
            modified = time.stringValue.flatMap(Timestamp.init(parsing:))
            if modified == nil { unreadableTime = String(time.compactText.prefix(80)) }
        }
        target = file["target"]?.stringValue
        (uid, gid) = (integer("uid"), integer("gid"))
        codec = file["codec"]?.stringValue
        kind = file["kind"]?.stringValue
        version = file["version"]?.int64Value
        sparse = file["sparse"] == .bool(true)
        xattrs = (file["xattrs"]?.dictionaryValue ?? [:]).map { ($0.key, $0.value) }
    }

    private enum Key: UInt16, CaseIterable {
        case path, type, size, sha256, mode, modifiedAt, target, uid, gid, codec, kind, version, sparse

        var spelling: [UInt8] { Array("\(self)".utf8) }
        /// Keys by their length and first byte: found with one comparison.
        static let byLength: [[(bytes: [UInt8], key: Key)]] = {
            var table = [[(bytes: [UInt8], key: Key)]](repeating: [], count: allCases.map(\.spelling.count).max()! + 1)
            for key in allCases { table[key.spelling.count].append((key.spelling, key)) }
            return table
        }()
    }

    /// The members of the entry in `raw`, read as the bytes are, or `nil` when the entry is not
    /// of the plain shape export writes (the caller decodes it then).
    init?(scanning raw: UnsafeRawBufferPointer) {
        guard let (fields, length) = Self.element(at: raw), raw[length...].allSatisfy({ [0x20, 0x0A, 0x09, 0x0D].contains($0) }) else { return nil }
        self = fields
    }

    /// The entry that `raw` starts with and how many bytes it takes, or `nil` when it does not
    /// start with an entry of the plain shape export writes (whatever follows it).
    static func element(at raw: UnsafeRawBufferPointer) -> (ManifestEntryFields, length: Int)? {
        var length = 0
        guard let fields = ManifestEntryFields(scanning: raw, length: &length) else { return nil }
        return (fields, length)
    }

    private init() {}

    private init?(scanning raw: UnsafeRawBufferPointer, length: inout Int) {
        let bytes = raw.assumingMemoryBound(to: UInt8.self)
        var index = 0
        let end = bytes.count
        func skipSpace() {
            while index < end, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x09 || bytes[index] == 0x0D { index += 1 }
        }
        /// A string without escapes or control bytes: its bytes' range (after the quotes), and
        /// whether they are all ASCII (found in the same pass).
        func plainString() -> (range: Range<Int>, ascii: Bool)? {
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            var at = start
            var high: UInt8 = 0
            while at < end {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    index = at + 1
                    return (start..<at, high < 0x80)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                high |= byte
                at += 1
            }
            return nil
        }
        func text() -> String? {
            guard let (range, ascii) = plainString() else { return nil }
            let run = UnsafeBufferPointer(rebasing: bytes[range])
            // ASCII (most paths, every digest and time) needs no validation: the generic one was
            // a fifth of reading a manifest.
            return ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
        }
        /// A JSON integer from 0 to `Int64.max` (`0`, or digits not starting with `0`); a sign,
        /// a fraction or an exponent is left to the decoder.
        func integer() -> Int64? {
            let start = index
            var value: Int64 = 0
            while index < end, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
                let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowSum) = times.addingReportingOverflow(Int64(digit))
                guard !overflowTimes, !overflowSum else { return nil }
                value = sum
                index += 1
            }
            guard index > start, index - start == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            if index < end, bytes[index] == UInt8(ascii: ".") || bytes[index] | 0x20 == UInt8(ascii: "e") { return nil }
            return value
        }
        func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard end - index >= count, memcmp(bytes.baseAddress! + index, word.utf8Start, count) == 0 else { return false }
            index += count
            return true
        }

        skipSpace()
        guard index < end, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        skipSpace()
        var seen: UInt16 = 0
        let keysByLength = Key.byLength  // once, not a lazy global's check for every key
        if index < end, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard let keyRange = plainString()?.range, keyRange.count < keysByLength.count,
                    let key = keysByLength[keyRange.count].first(where: { $0.bytes.elementsEqual(bytes[keyRange]) })?.key,
                    seen & (1 << key.rawValue) == 0
                else { return nil }
                seen |= 1 << key.rawValue
                skipSpace()
                guard index < end, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                switch key {
                case .size: guard let value = integer() else { return nil }; size = value
                case .uid: guard let value = integer() else { return nil }; uid = value
                case .gid: guard let value = integer() else { return nil }; gid = value
                case .version: guard let value = integer() else { return nil }; version = value
                case .sparse:
                    if literal("true") { sparse = true } else if !literal("false") { return nil }
                case .modifiedAt:
                    // Read from its bytes: one string fewer for every entry. The `@` form of a
                    // time outside RFC 3339's years is rare, and read as text, as is anything
                    // not ASCII (which, not UTF-8, is left to the decoder, as `text()` leaves it).
                    guard let (range, ascii) = plainString() else { return nil }
                    let run = UnsafeBufferPointer(rebasing: bytes[range])
                    if run.first == UInt8(ascii: "@") || !ascii {
                        guard let text = String(validating: run, as: UTF8.self) else { return nil }
                        modified = Timestamp(parsing: text)
                    } else {
                        modified = RFC3339.parseUnixTime(bytes: run).map { Timestamp(seconds: $0.seconds, nanoseconds: $0.nanoseconds) }
                    }
                    if modified == nil { unreadableTime = "\"" + String(decoding: run.prefix(78), as: UTF8.self) + "\"" }
                default:
                    guard let value = text() else { return nil }
                    switch key {
                    case .path: path = value
                    case .type: type = value
                    case .sha256: sha256 = value
                    case .mode: mode = value
                    case .target: target = value
                    case .codec: codec = value
                    case .kind: kind = value
                    default: return nil
                    }
                }
                skipSpace()
                guard index < end else { return nil }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
                skipSpace()
            }
        }
        length = index
    }
}
