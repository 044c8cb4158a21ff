// Helpers the built-in codecs share.

/// `value` in upper-case hexadecimal, padded to `digits`: for error messages (`0x0F`, `U+0001`).
func hex<T: BinaryInteger>(_ value: T, digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

/// UTF-8 validation shared by the text codecs.
enum UTF8Validation {
    /// The length of the valid multi-byte sequence starting at `index`, or 0 when it is invalid.
    @inline(__always)
    static func sequenceLength(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        let lead = bytes[index]
        let remaining = bytes.count - index
        func continuation(_ offset: Int) -> Bool { bytes[index + offset] & 0xC0 == 0x80 }
        switch lead {
        case 0xC2...0xDF:
            return remaining >= 2 && continuation(1) ? 2 : 0
        case 0xE0...0xEF:
            guard remaining >= 3, continuation(1), continuation(2) else { return 0 }
            let second = bytes[index + 1]
            if lead == 0xE0 && second < 0xA0 { return 0 }  // overlong
            if lead == 0xED && second > 0x9F { return 0 }  // UTF-16 surrogate
            return 3
        case 0xF0...0xF4:
            guard remaining >= 4, continuation(1), continuation(2), continuation(3) else { return 0 }
            let second = bytes[index + 1]
            if lead == 0xF0 && second < 0x90 { return 0 }  // overlong
            if lead == 0xF4 && second > 0x8F { return 0 }  // past U+10FFFF
            return 4
        default:
            return 0
        }
    }

    /// The offset of the first invalid byte, or `nil` when all of `bytes` is valid UTF-8.
    static func firstInvalidOffset(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index < bytes.count {
            if bytes[index] < 0x80 { index += 1; continue }
            let length = sequenceLength(in: bytes, at: index)
            if length == 0 { return index }
            index += length
        }
        return nil
    }
}

/// Duplicate-key detection for the readers, which gather a dictionary's keys and values in
/// arrays and build it once: up to 16 keys are compared (no hashing at all); a set is built
/// only for larger dictionaries. Keys compare as `OrderedDictionary` compares them.
enum KeyIndex {
    static func position(of key: String, in keys: [String], largeSet: inout Set<String>?) -> Int? {
        if keys.count < 16 {
            return keys.firstIndex(of: key)
        }
        if largeSet == nil { largeSet = Set(keys) }
        if largeSet!.insert(key).inserted { return nil }
        return keys.firstIndex(of: key)
    }

    /// Whether a key found again is another spelling of the earlier one: the same characters in
    /// another Unicode normalisation (`é` as one code point or as `e` and an accent). Keys here
    /// compare as characters, so the two cannot be kept apart: such a document is refused
    /// whatever `--duplicate-keys` says, rather than one of its keys silently dropped.
    static func isAnotherSpelling(_ key: String, of earlier: String) -> Bool {
        !SaveValue.sameBytes(key, earlier)
    }

    /// What a reader says of such a key: found, and expected.
    static func anotherSpelling(_ key: String, of earlier: String) -> (found: String, expected: String) {
        ("the key \"\(key)\" after \"\(earlier)\", the same characters in another Unicode normalisation",
         "keys that differ as characters (a dictionary here holds its keys by their characters, and cannot keep these two apart)")
    }
}
