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
/// or UTF-16 text in a binary plist. Where a writer could have spelled a key otherwise — a JSON
/// escape (`\u0070layers`), an XML character reference or CDATA, an XML plist in UTF-16 — the
/// bytes are not trusted and
/// the document is decoded. So a "no" is always right, and a "maybe" costs what it did before.
/// Decoding every file to learn that it is nobody's was most of what an import spent beyond
/// unpacking (docs/performance.md).
struct ContentPrefilter: Sendable {
    /// Per fingerprint of every kind, the keys it needs, each as the byte strings it may be
    /// stored as; `nil` when the prefilter cannot judge (a fingerprint that needs no key).
    private let needed: [[Key]]?

    private struct Key: Sendable {
        var utf8: [UInt8]
        var utf16: [UInt8]
        /// A key whose text a JSON or XML writer must escape cannot be looked for as it is.
        var plainInText: Bool
    }

    init(kinds: [SaveKind]) {
        var needed: [[Key]] = []
        for kind in kinds {
            for fingerprint in kind.fingerprints {
                let keys = Set(fingerprint.conditions.flatMap(Self.neededKeys))
                guard !keys.isEmpty else {
                    self.needed = nil
                    return
                }
                needed.append(keys.sorted().map { key in
                    Key(
                        utf8: Array(key.utf8), utf16: key.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] },
                        plainInText: !key.utf8.contains { $0 < 0x20 || [0x22, 0x5C, 0x26, 0x3C, 0x3E].contains($0) })
                })
            }
        }
        self.needed = needed
    }

    /// The dictionary keys a condition cannot hold without.
    private static func neededKeys(_ condition: Condition) -> [String] {
        switch condition {
        case .has(let pointer), .type(let pointer, _), .equals(let pointer, _), .compare(let pointer, _, _):
            // A token of digits (or `-`) may be an array index; any other names a key.
            return pointer.tokens.filter { token in !token.isEmpty && token != "-" && !token.allSatisfy(\.isASCIIDigit) }
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
            // memchr for the first byte, memcmp for the rest (memmem is a GNU extension).
            func contains(_ needle: [UInt8]) -> Bool {
                guard let first = needle.first else { return true }
                guard let base = raw.baseAddress, raw.count >= needle.count else { return false }
                return needle.withUnsafeBytes { wanted in
                    var start = base
                    let last = base + (raw.count - needle.count)  // the last place a match can begin
                    while start <= last, let hit = memchr(start, Int32(first), last - start + 1) {
                        if memcmp(hit, wanted.baseAddress!, needle.count) == 0 { return true }
                        start = UnsafeRawPointer(hit) + 1
                    }
                    return false
                }
            }
            switch codec {
            case "json":
                // Any escape could spell a key otherwise.
                if raw.contains(0x5C) { return true }
                return needed.contains { keys in keys.allSatisfy { !$0.plainInText || contains($0.utf8) } }
            case "plist":
                // UTF-16 text (the reader takes it) has NUL bytes; character references and
                // CDATA spell text otherwise.
                if raw.contains(0) || contains(Array("&#".utf8)) || contains(Array("<![CDATA[".utf8)) { return true }
                return needed.contains { keys in keys.allSatisfy { !$0.plainInText || contains($0.utf8) } }
            case "bplist":
                return needed.contains { keys in keys.allSatisfy { contains($0.utf8) || contains($0.utf16) } }
            default:
                return true  // a plugin's format: nothing is known of how it stores keys
            }
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
