#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells, from a document's bytes alone, that no kind's fingerprint can match it, so that a
/// file no kind claims by its path need not be decoded to be found nobody's.
///
/// A fingerprint holds only if every dictionary key its conditions need is in the document
/// (`{"has": "/players"}` needs `players`; `missing` and `not` need nothing). A key in a
/// document is in its bytes: as the key's UTF-8 text in JSON and XML plists, and as its ASCII
/// or UTF-16 text in a binary plist. Where a writer could have spelled a key otherwise, the bytes
/// are not taken as they are: JSON is looked at with its escapes (`\u0070layers`) undone, and an
/// XML plist with a character reference, CDATA, a comment (which may split a key's text) or
/// UTF-16 text is decoded. So a "no" is always right, and a "maybe" costs what it did before.
/// Decoding every file to learn that it is nobody's was most of what an import spent beyond
/// unpacking (docs/performance.md).
struct ContentPrefilter: Sendable {
    /// Every key some fingerprint needs, each as the byte strings it may be stored as.
    private let keys: [Key]
    /// Per fingerprint of every kind, the indices in `keys` of what it needs, longest first (a
    /// long key is rarely there by chance, so a fingerprint is ruled out soonest); `nil` when
    /// the prefilter cannot judge (a fingerprint that needs no key).
    private let needed: [[Int]]?
    /// Which bytes the keys looked for in text hold (by byte value): a JSON escape that stands
    /// for none of them cannot spell a key otherwise.
    private let keyBytes: [Bool]
    /// Whether one of those keys holds a byte above ASCII (a non-ASCII letter).
    private let keysHoldNonASCII: Bool

    private struct Key: Sendable {
        var utf8: ByteSearch.Needle
        var utf16: ByteSearch.Needle
        /// A key whose text a JSON or XML writer must escape cannot be looked for as it is.
        var plainInText: Bool
    }

    init(kinds: [SaveKind]) {
        var names: [String] = []
        var needed: [[Int]]? = []
        for fingerprint in kinds.flatMap(\.fingerprints) {
            let wanted = Set(fingerprint.conditions.flatMap(Self.neededKeys)).sorted { ($0.utf8.count, $0) > ($1.utf8.count, $1) }
            guard !wanted.isEmpty else {
                needed = nil
                break
            }
            needed?.append(wanted.map { name in
                if let index = names.firstIndex(of: name) { return index }
                names.append(name)
                return names.count - 1
            })
        }
        self.needed = needed
        keys = names.map { key in
            Key(
                utf8: ByteSearch.Needle(Array(key.utf8)), utf16: ByteSearch.Needle(key.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
                plainInText: !key.utf8.contains { $0 < 0x20 || [0x22, 0x5C, 0x26, 0x3C, 0x3E].contains($0) })
        }
        var keyBytes = [Bool](repeating: false, count: 256)
        for key in keys where key.plainInText {
            for byte in key.utf8.bytes { keyBytes[Int(byte)] = true }
        }
        self.keyBytes = keyBytes
        keysHoldNonASCII = keyBytes[0x80...].contains(true)
    }

    /// The dictionary keys a condition cannot hold without.
    private static func neededKeys(_ condition: Condition) -> [String] {
        switch condition {
        case .has(let pointer), .type(let pointer, _), .equals(let pointer, _), .compare(let pointer, _, _), .isClass(let pointer, _):
            // A token of digits (or `-`) may be an array index; any other names a key. A keyed
            // archive's view has names of its own (`$items`, `$$id` for `$id`) that its bytes do not.
            return pointer.tokens.filter { token in
                !token.isEmpty && token != "-" && !token.allSatisfy(\.isASCIIDigit) && !KeyedArchive.viewKeys.contains(token) && !token.hasPrefix("$$")
            }
        case .all(let conditions):
            return conditions.flatMap(neededKeys)
        case .missing, .any, .not:
            return []
        }
    }

    /// False only when no fingerprint can match a document of `codec` with these bytes.
    func mayMatch(_ bytes: [UInt8], codec: String) -> Bool {
        guard let needed else { return true }
        if needed.isEmpty { return false }  // no kind recognises anything by content
        return bytes.withUnsafeBytes { raw -> Bool in
            switch codec {
            case "json":
                // An escape can spell a key otherwise (`\u0070layers`, or `Zo\u00eb` as Python's
                // json module writes it): such a document is looked at with its escapes undone.
                if escapesMaySpellKeys(raw) { return Self.unescapingJSON(raw).withUnsafeBytes { someFingerprintsKeys(in: $0, text: true) } }
                return someFingerprintsKeys(in: raw, text: true)
            case "plist":
                // UTF-16 text (the reader takes it) has NUL bytes; character references, CDATA
                // and comments inside a key's text spell it otherwise.
                if ByteSearch.contains(Self.nul, in: raw) || Self.markupThatRespells.contains(where: { ByteSearch.contains($0, in: raw) }) { return true }
                return someFingerprintsKeys(in: raw, text: true)
            case "bplist":
                return someFingerprintsKeys(in: raw, text: false)
            default:
                return true  // a plugin's format: nothing is known of how it stores keys
            }
        }
    }

    /// Whether some escape of JSON text `raw` stands for a byte that a key looked for holds.
    /// When none does, every key in the text with its escapes undone is made of bytes that are
    /// there as they are, side by side, and the text is looked in as it is (Python's `json`
    /// module writes every non-ASCII letter as an escape, which spells no ASCII key). Escapes
    /// are read as ``unescapingJSON(_:)`` reads them.
    func escapesMaySpellKeys(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard let base = raw.baseAddress else { return false }
        var index = 0
        while index < raw.count, let found = memchr(base + index, 0x5C, raw.count - index) {
            index = UnsafeRawPointer(found) - base
            guard index + 1 < raw.count else { return false }  // a backslash at the end stays as it is
            let next = raw[index + 1]
            if next == UInt8(ascii: "u"), let scalar = Self.hexValue(raw, at: index + 2) {
                // Above ASCII (a surrogate too): UTF-8 bytes from 0x80, which only non-ASCII keys hold.
                if scalar >= 0x80 ? keysHoldNonASCII : keyBytes[Int(scalar)] { return true }
                index += 6
            } else if let character = Self.oneLetterEscapes[next] {
                if keyBytes[Int(character)] { return true }
                index += 2
            } else {
                index += 1
            }
        }
        return false
    }

    /// The four hexadecimal digits at `index`, or `nil`.
    private static func hexValue(_ raw: UnsafeRawBufferPointer, at index: Int) -> UInt32? {
        guard index + 4 <= raw.count else { return nil }
        var value: UInt32 = 0
        for byte in raw[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private static let markupThatRespells = ["&#", "<![CDATA[", "<!--"].map { ByteSearch.Needle(Array($0.utf8)) }

    private static let nul = ByteSearch.Needle([0])

    /// Whether every key of some fingerprint is in `haystack`: in text, as UTF-8 (a key that
    /// would have to be escaped counts as there); in a binary plist, as ASCII or UTF-16. Each
    /// key is looked for once, however many fingerprints need it.
    func someFingerprintsKeys(in haystack: UnsafeRawBufferPointer, text: Bool) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(keys.count, 1)) { known in
            known.initialize(repeating: 0)  // 0 not looked for, 1 absent, 2 present
            func present(_ index: Int) -> Bool {
                if known[index] == 0 {
                    let key = keys[index]
                    let found = text ? !key.plainInText || ByteSearch.contains(key.utf8, in: haystack) : ByteSearch.contains(key.utf8, in: haystack) || ByteSearch.contains(key.utf16, in: haystack)
                    known[index] = found ? 2 : 1
                }
                return known[index] == 2
            }
            return needed!.contains { $0.allSatisfy(present) }
        }
    }

    private static let oneLetterEscapes: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]

    /// JSON text with its escapes undone: `\uXXXX` (and surrogate pairs) become UTF-8, the
    /// one-letter escapes their character. Only looked in, never parsed: what is not a valid
    /// escape is kept as it is.
    static func unescapingJSON(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        var plain: [UInt8] = []
        plain.reserveCapacity(raw.count)
        func hexValue(at index: Int) -> UInt32? { Self.hexValue(raw, at: index) }
        var index = 0
        while index < raw.count {
            // What comes before the next backslash is copied as it is, in one go.
            let rest = UnsafeRawBufferPointer(rebasing: raw[index...])
            let backslash = memchr(rest.baseAddress!, 0x5C, rest.count).map { $0 - UnsafeMutableRawPointer(mutating: rest.baseAddress!) } ?? rest.count
            plain.append(contentsOf: rest.prefix(backslash))
            index += backslash
            guard index + 1 < raw.count else {
                if index < raw.count { plain.append(raw[index]) }
                break
            }
            let byte = raw[index]
            let next = raw[index + 1]
            if next == UInt8(ascii: "u"), var scalar = hexValue(at: index + 2) {
                var length = 6
                if (0xD800..<0xDC00).contains(scalar), index + 12 <= raw.count, raw[index + 6] == 0x5C, raw[index + 7] == UInt8(ascii: "u"),
                    let low = hexValue(at: index + 8), (0xDC00..<0xE000).contains(low)
                {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    length = 12
                }
                if let unicode = UnicodeScalar(scalar) {
                    UTF8.encode(unicode) { plain.append($0) }
                    index += length
                    continue
                }
            }
            if let character = Self.oneLetterEscapes[next] {
                plain.append(character)
                index += 2
            } else {
                plain.append(byte)
                index += 1
            }
        }
        return plain
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
