import Foundation
import OrderedCollections

/// A strict RFC 8259 JSON parser that keeps key order and tells integers from reals.
///
/// Written by hand because `JSONSerialization` loses key order and turns `Int64.min` into a
/// decimal, and `JSONDecoder` needs a type known in advance. It reads bytes, never builds an
/// intermediate string, rejects invalid UTF-8, duplicate keys and integers outside 64 bits,
/// and bounds nesting depth so that hostile input ends in an error, not a stack overflow.
struct JSONReader {
    struct Failure: Error {
        var offset: Int
        var found: String
        var expected: String
        var isLimit = false
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position: Int
    private let maxDepth: Int
    private let markers: Bool
    private let rejectDuplicates: Bool

    private init(bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) {
        self.bytes = bytes
        self.position = 0
        self.maxDepth = options.maxDepth
        self.markers = options.typedJSONMarkers
        self.rejectDuplicates = options.duplicateKeys == .reject
    }

    static func parse(_ input: [UInt8], options: DecodingOptions) throws(CodecError) -> SaveValue {
        do {
            return try input.withUnsafeBufferPointer { buffer throws(Failure) in
                var reader = JSONReader(bytes: buffer, options: options)
                return try reader.parseDocument()
            }
        } catch {
            let location = DocumentLocation.lineColumn(of: error.offset, in: input)
            if error.isLimit {
                throw .limitExceeded(codec: "json", at: location, found: error.found, expected: error.expected)
            }
            throw .malformed(codec: "json", at: location, found: error.found, expected: error.expected)
        }
    }

    private mutating func parseDocument() throws(Failure) -> SaveValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
        if bytes.count >= 4, bytes[0] == 0x00, bytes[1] == 0x00, bytes[2] == 0xFE, bytes[3] == 0xFF {
            throw Failure(offset: 0, found: "a UTF-32 byte order mark", expected: "UTF-8 text (RFC 8259)")
        }
        // UTF-16 or UTF-32 without a byte order mark: ASCII text with NUL bytes between.
        if bytes.count >= 2, (bytes[0] == 0x00) != (bytes[1] == 0x00) {
            throw Failure(offset: 0, found: "UTF-16 or UTF-32 text (a NUL byte beside each character)", expected: "UTF-8 text (RFC 8259)")
        }
        if bytes.count >= 2, (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) {
            let utf32 = bytes.count >= 4 && bytes[0] == 0xFF && bytes[2] == 0x00 && bytes[3] == 0x00
            throw Failure(offset: 0, found: "a UTF-\(utf32 ? 32 : 16) byte order mark", expected: "UTF-8 text (RFC 8259)")
        }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if position < bytes.count {
            throw Failure(offset: position, found: describeHere(), expected: "the end of the document after the top-level value")
        }
        return value
    }

    // MARK: - Values

    private mutating func parseValue(depth: Int) throws(Failure) -> SaveValue {
        guard position < bytes.count else {
            throw Failure(offset: position, found: "the end of the input", expected: "a JSON value")
        }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1, readMarkers: markers)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default:
            throw Failure(offset: position, found: describeHere(), expected: "a JSON value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func checkDepth(_ depth: Int) throws(Failure) {
        if depth > maxDepth {
            throw Failure(
                offset: position, found: "nesting deeper than \(maxDepth) levels",
                expected: "a document nested at most \(maxDepth) deep", isLimit: true)
        }
    }

    private mutating func parseObject(depth: Int, readMarkers: Bool) throws(Failure) -> SaveValue {
        try checkDepth(depth)
        position += 1
        // Keys and values are gathered first and the dictionary built once: a dictionary of up
        // to 16 keys is then checked for duplicates by comparison and never hashed at all.
        var keys: [String] = []
        var values: [SaveValue] = []
        var largeKeySet: Set<String>? = nil
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .dictionary([:])
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw Failure(offset: position, found: describeHere(), expected: "a string key in double quotes")
            }
            let keyOffset = position
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw Failure(offset: position, found: describeHere(), expected: "':' after the key")
            }
            position += 1
            skipWhitespace()
            // The value of a lone "$dict" key is a dictionary to keep as written, markers and all;
            // a "$dict" key with others after it is an ordinary key, its value read as any other.
            let value: SaveValue
            if readMarkers, keys.isEmpty, key == "$dict", position < bytes.count, bytes[position] == UInt8(ascii: "{"), endsTheObject(valueAt: position) {
                value = try parseObject(depth: depth + 1, readMarkers: false)
            } else {
                value = try parseValue(depth: depth)
            }
            if let earlier = KeyIndex.position(of: key, in: keys, largeSet: &largeKeySet) {
                if KeyIndex.isAnotherSpelling(key, of: keys[earlier]) {
                    let (found, expected) = KeyIndex.anotherSpelling(key, of: keys[earlier])
                    throw Failure(offset: keyOffset, found: found, expected: expected)
                }
                if rejectDuplicates { throw duplicate(key, at: keyOffset) }
                values[earlier] = value
            } else {
                keys.append(key)
                values.append(value)
            }
            skipWhitespace()
            guard position < bytes.count else {
                throw Failure(offset: position, found: "the end of the input", expected: "',' or '}'")
            }
            if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
            if bytes[position] == UInt8(ascii: "}") { position += 1; break }
            throw Failure(offset: position, found: describeHere(), expected: "',' or '}' after a value in an object")
        }
        let entries = OrderedDictionary<String, SaveValue>(uncheckedUniqueKeys: keys, values: values)
        guard readMarkers else { return .dictionary(entries) }
        return try typedValue(entries, offset: position)
    }

    /// Whether the value at `start` is the object's last: only a `}` after it. Scanned, not
    /// read (a malformed value says yes, and its reading then says what is wrong), so that a
    /// first "$dict" key is known for a wrapper or a key before its value is read either way.
    private func endsTheObject(valueAt start: Int) -> Bool {
        let index = JSONScan.skipSpace(bytes, from: JSONScan.endOfValue(bytes, at: start))
        return index >= bytes.count || bytes[index] == UInt8(ascii: "}")
    }

    private func duplicate(_ key: String, at offset: Int) -> Failure {
        Failure(offset: offset, found: "the key \"\(key)\" a second time", expected: "each key once in an object")
    }

    private func typedValue(_ entries: OrderedDictionary<String, SaveValue>, offset: Int) throws(Failure) -> SaveValue {
        do {
            return try TypedJSON.value(ofMarkedDictionary: entries)
        } catch {
            throw Failure(offset: offset - 1, found: error.found, expected: error.expected)
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> SaveValue {
        try checkDepth(depth)
        position += 1
        var items: [SaveValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard position < bytes.count else {
                throw Failure(offset: position, found: "the end of the input", expected: "',' or ']'")
            }
            if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
            if bytes[position] == UInt8(ascii: "]") { position += 1; break }
            throw Failure(offset: position, found: describeHere(), expected: "',' or ']' after a value in an array")
        }
        return .array(items)
    }

    private mutating func expectLiteral(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        let matches = position + count <= bytes.count && (0..<count).allSatisfy { bytes[position + $0] == word.utf8Start[$0] }
        guard matches else {
            throw Failure(offset: position, found: describeHere(), expected: "a JSON value (did you mean \(word)?)")
        }
        position += count
    }

    // MARK: - Numbers

    private mutating func parseNumber() throws(Failure) -> SaveValue {
        let start = position
        var negative = false
        if bytes[position] == UInt8(ascii: "-") { negative = true; position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else {
            throw Failure(offset: position, found: describeHere(), expected: "a digit after '-'")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) {
                throw Failure(offset: position, found: "a leading zero", expected: "a number without leading zeros")
            }
        } else {
            while position < bytes.count, isDigit(bytes[position]) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(bytes[position] &- 48))
                overflow = overflow || o1 || o2
                magnitude = sum
                position += 1
            }
        }
        var isReal = false
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isReal = true
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw Failure(offset: position, found: describeHere(), expected: "a digit after the decimal point")
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            isReal = true
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw Failure(offset: position, found: describeHere(), expected: "a digit in the exponent")
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if !isReal {
            if !overflow {
                if !negative { return .int(magnitude) }
                if magnitude <= UInt64(Int64.max) { return .integer(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .integer(Int64.min) }
            }
            throw Failure(
                offset: start, found: "the integer \(text(start..<position)) outside the 64-bit range",
                expected: "an integer from -9223372036854775808 to 18446744073709551615 (write a real such as 1.0e20 for larger numbers)")
        }
        let literal = text(start..<position)
        guard let value = Double(literal), value.isFinite else {
            throw Failure(offset: start, found: "the number \(literal) beyond the range of a 64-bit real", expected: "a real of magnitude below 1.8e308")
        }
        return .real(value)
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte &- 48 < 10 }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    // MARK: - Strings

    private mutating func parseString() throws(Failure) -> String {
        position += 1  // opening quote
        let start = position
        // Fast path: no escapes, validate UTF-8 as we go.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let result = text(start..<position)
                position += 1
                return result
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw controlCharacter(byte) }
            if byte < 0x80 { position += 1 } else { try skipUTF8Sequence() }
        }
        guard position < bytes.count else {
            throw Failure(offset: start - 1, found: "a string that is never closed", expected: "a closing '\"'")
        }
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &buffer)
            case ..<0x20:
                throw controlCharacter(byte)
            case ..<0x80:
                buffer.append(byte)
                position += 1
            default:
                let sequenceStart = position
                try skipUTF8Sequence()
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[sequenceStart..<position]))
            }
        }
        throw Failure(offset: start - 1, found: "a string that is never closed", expected: "a closing '\"'")
    }

    private func controlCharacter(_ byte: UInt8) -> Failure {
        Failure(
            offset: position, found: "the control character U+\(hex(byte, digits: 4)) inside a string",
            expected: "control characters escaped (\\n, \\t, \\u0001…)")
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(Failure) {
        let escapeOffset = position
        position += 1
        guard position < bytes.count else {
            throw Failure(offset: escapeOffset, found: "the end of the input", expected: "an escape sequence")
        }
        let code = bytes[position]
        position += 1
        switch code {
        case UInt8(ascii: "\""): buffer.append(0x22)
        case UInt8(ascii: "\\"): buffer.append(0x5C)
        case UInt8(ascii: "/"): buffer.append(0x2F)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw Failure(
                        offset: escapeOffset, found: "a lone high surrogate \\u\(hex(scalar, digits: 4))",
                        expected: "a \\uDC00–\\uDFFF low surrogate after it")
                }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw Failure(
                        offset: escapeOffset, found: "\\u\(hex(scalar, digits: 4)) followed by \\u\(hex(low, digits: 4))",
                        expected: "a \\uDC00–\\uDFFF low surrogate after a high surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw Failure(offset: escapeOffset, found: "a lone low surrogate \\u\(hex(scalar, digits: 4))", expected: "a complete UTF-16 surrogate pair")
            }
            appendUTF8(scalar, to: &buffer)
        default:
            throw Failure(offset: escapeOffset, found: "the escape \\\(Unicode.Scalar(code).escaped(asASCII: true))", expected: "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX")
        }
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard position + 4 <= bytes.count else {
            throw Failure(offset: position, found: "the end of the input", expected: "four hex digits after \\u")
        }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - 55)
            default: throw Failure(offset: position, found: describeHere(), expected: "four hex digits after \\u")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32, to buffer: inout [UInt8]) {
        switch scalar {
        case ..<0x80: buffer.append(UInt8(scalar))
        case ..<0x800:
            buffer.append(UInt8(0xC0 | scalar >> 6)); buffer.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            buffer.append(UInt8(0xE0 | scalar >> 12)); buffer.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            buffer.append(UInt8(0x80 | scalar & 0x3F))
        default:
            buffer.append(UInt8(0xF0 | scalar >> 18)); buffer.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            buffer.append(UInt8(0x80 | scalar >> 6 & 0x3F)); buffer.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Steps over one multi-byte UTF-8 sequence, refusing overlong forms, surrogates and values past U+10FFFF.
    private mutating func skipUTF8Sequence() throws(Failure) {
        let length = UTF8Validation.sequenceLength(in: bytes, at: position)
        guard length > 0 else {
            throw Failure(offset: position, found: "the byte 0x\(hex(bytes[position], digits: 2)), which is not valid UTF-8", expected: "UTF-8 text")
        }
        position += length
    }

    // MARK: - Helpers

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private func describeHere() -> String {
        guard position < bytes.count else { return "the end of the input" }
        let byte = bytes[position]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        if byte == 0x20 { return "a space" }
        return "the byte 0x\(hex(byte, digits: 2))"
    }
}
