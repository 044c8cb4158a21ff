import Foundation
import OrderedCollections

/// Reads Apple's XML property lists (`<plist version="1.0">…`).
///
/// A small hand-written reader rather than a general XML parser: a plist needs elements, text,
/// the five predefined entities, character references, CDATA and comments — and must refuse
/// what a general parser would happily expand, such as entity declarations (the "billion
/// laughs"). UTF-16 files (with a byte order mark) are converted to UTF-8 first, so that
/// line:column positions stay the ones an editor shows.
struct XMLPlistReader {
    struct Failure: Error {
        var offset: Int
        var found: String
        var expected: String
        var isLimit = false
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private let maxDepth: Int
    private let rejectDuplicates: Bool

    private init(bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) {
        self.bytes = bytes
        self.maxDepth = options.maxDepth
        self.rejectDuplicates = options.duplicateKeys == .reject
    }

    static func parse(_ input: [UInt8], options: DecodingOptions) throws(CodecError) -> SaveValue {
        let text: [UInt8]
        do {
            text = try transcodeToUTF8(input)
        } catch {
            throw .malformed(codec: "plist", at: .byte(error.offset), found: error.found, expected: error.expected)
        }
        do {
            return try text.withUnsafeBufferPointer { buffer throws(Failure) in
                if let bad = UTF8Validation.firstInvalidOffset(in: buffer) {
                    throw Failure(offset: bad, found: "the byte 0x\(hex(buffer[bad], digits: 2)), which is not valid UTF-8", expected: "UTF-8 text")
                }
                var reader = XMLPlistReader(bytes: buffer, options: options)
                return try reader.parseDocument()
            }
        } catch {
            let location = DocumentLocation.lineColumn(of: error.offset, in: text)
            if error.isLimit { throw .limitExceeded(codec: "plist", at: location, found: error.found, expected: error.expected) }
            throw .malformed(codec: "plist", at: location, found: error.found, expected: error.expected)
        }
    }

    /// UTF-16 (by its byte order mark, or by `<?` spelled in UTF-16) becomes UTF-8; a UTF-8 BOM is dropped.
    private static func transcodeToUTF8(_ input: [UInt8]) throws(Failure) -> [UInt8] {
        var bigEndian: Bool
        var start = 0
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { return Array(input[3...]) }
        if input.starts(with: [0xFE, 0xFF]) { bigEndian = true; start = 2 }
        else if input.starts(with: [0xFF, 0xFE]) { bigEndian = false; start = 2 }
        else if input.starts(with: [0x00, 0x3C, 0x00, 0x3F]) { bigEndian = true }
        else if input.starts(with: [0x3C, 0x00, 0x3F, 0x00]) { bigEndian = false }
        else { return input }
        guard (input.count - start) % 2 == 0 else {
            throw Failure(offset: input.count - 1, found: "an odd number of bytes in UTF-16 text", expected: "whole UTF-16 code units")
        }
        var units: [UInt16] = []
        units.reserveCapacity((input.count - start) / 2)
        var index = start
        while index < input.count {
            let high = UInt16(input[index]), low = UInt16(input[index + 1])
            units.append(bigEndian ? high << 8 | low : low << 8 | high)
            index += 2
        }
        guard let text = String(validating: units, as: UTF16.self) else {
            throw Failure(offset: start, found: "an unpaired UTF-16 surrogate", expected: "valid UTF-16 text")
        }
        return Array(text.utf8)
    }

    // MARK: - Document

    private mutating func parseDocument() throws(Failure) -> SaveValue {
        try skipMisc(allowDeclaration: true)
        guard position < bytes.count else {
            throw Failure(offset: position, found: "no element", expected: "a <plist> element")
        }
        let tag = try readStartTag()
        let value: SaveValue
        if tag.kind == .plist {
            guard !tag.selfClosing else {
                throw Failure(offset: tag.offset, found: "an empty <plist/>", expected: "a <plist> holding one value")
            }
            try skipMisc(allowDeclaration: false)
            let inner = try readStartTag()
            value = try parseValue(inner, depth: 1)
            try skipMisc(allowDeclaration: false)
            try expectEndTag(.plist)
        } else {
            value = try parseValue(tag, depth: 1)  // plistlib and CoreFoundation also accept a bare value
        }
        try skipMisc(allowDeclaration: false)
        if position < bytes.count {
            throw Failure(offset: position, found: describeHere(), expected: "the end of the document after </plist>")
        }
        return value
    }

    private struct StartTag {
        var kind: Element
        var selfClosing: Bool
        var offset: Int
        var name: String { kind.name }
    }

    /// The elements of a plist, recognised from their bytes without building strings.
    private enum Element: Equatable {
        case plist, dict, array, key, string, integer, real, date, data, `true`, `false`
        case other(String)

        init(_ name: UnsafeBufferPointer<UInt8>) {
            func equals(_ literal: StaticString) -> Bool {
                name.count == literal.utf8CodeUnitCount && memcmp(name.baseAddress!, literal.utf8Start, name.count) == 0
            }
            switch name.count {
            case 3 where equals("key"): self = .key
            case 4 where equals("dict"): self = .dict
            case 4 where equals("real"): self = .real
            case 4 where equals("date"): self = .date
            case 4 where equals("data"): self = .data
            case 4 where equals("true"): self = .true
            case 5 where equals("array"): self = .array
            case 5 where equals("plist"): self = .plist
            case 5 where equals("false"): self = .false
            case 6 where equals("string"): self = .string
            case 7 where equals("integer"): self = .integer
            default: self = .other(String(decoding: name, as: UTF8.self))
            }
        }

        var name: String {
            switch self {
            case .plist: "plist"
            case .dict: "dict"
            case .array: "array"
            case .key: "key"
            case .string: "string"
            case .integer: "integer"
            case .real: "real"
            case .date: "date"
            case .data: "data"
            case .true: "true"
            case .false: "false"
            case .other(let name): name
            }
        }
    }

    private mutating func parseValue(_ tag: StartTag, depth: Int) throws(Failure) -> SaveValue {
        switch tag.kind {
        case .dict: return try parseDictionary(tag, depth: depth)
        case .array: return try parseArray(tag, depth: depth)
        case .true, .false:
            if !tag.selfClosing { try expectEndTag(tag.kind) }
            return .bool(tag.kind == .true)
        case .string:
            return .string(tag.selfClosing ? "" : try readString(until: .string))
        case .integer:
            let text = try requiredText(tag)
            return try parseInteger(text, offset: tag.offset)
        case .real:
            let text = try requiredText(tag)
            guard let number = Self.parseReal(text) else {
                throw Failure(offset: tag.offset, found: "the <real> \"\(text)\"", expected: "a decimal number such as 32.5, 1e-05, nan, inf or -inf")
            }
            return .real(number)
        case .date:
            let text = try requiredText(tag)
            guard text.hasSuffix("Z"), let date = RFC3339.parse(text) else {
                throw Failure(offset: tag.offset, found: "the <date> \"\(text)\"", expected: "a UTC date such as 2026-11-21T08:00:00Z")
            }
            return .date(date)
        case .data:
            var base64: [UInt8] = []
            if !tag.selfClosing {
                if let range = try readPlainText(until: .data) {
                    base64.reserveCapacity(range.count)
                    for index in range where !Self.isXMLWhitespace(bytes[index]) { base64.append(bytes[index]) }
                } else {
                    base64 = Array(try readText(until: .data).utf8).filter { !Self.isXMLWhitespace($0) }
                }
            }
            guard let data = Data(base64Encoded: Data(base64)) else {
                throw Failure(offset: tag.offset, found: "<data> that is not base64", expected: "base64 text (A–Z a–z 0–9 + / and = padding)")
            }
            return .data(data)
        case .key:
            throw Failure(offset: tag.offset, found: "a <key> outside a <dict>", expected: "a value element (<string>, <integer>, <dict>…)")
        case .plist, .other:
            throw Failure(
                offset: tag.offset, found: "the element <\(tag.name)>",
                expected: "one of <dict> <array> <string> <integer> <real> <true/> <false/> <date> <data>")
        }
    }

    /// The text of a number or date element, without the whitespace around it.
    private mutating func requiredText(_ tag: StartTag) throws(Failure) -> String {
        guard !tag.selfClosing else {
            throw Failure(offset: tag.offset, found: "an empty <\(tag.name)/>", expected: "a value inside <\(tag.name)>")
        }
        guard var range = try readPlainText(until: tag.kind) else {
            let text = try readText(until: tag.kind)
            return String(text.unicodeScalars.drop { $0.isASCII && Self.isXMLWhitespace(UInt8($0.value)) }
                .reversed().drop { $0.isASCII && Self.isXMLWhitespace(UInt8($0.value)) }.reversed().map(Character.init))
        }
        while let first = range.first, Self.isXMLWhitespace(bytes[first]) { range = range.dropFirst() }
        while let last = range.last, Self.isXMLWhitespace(bytes[last]) { range = range.dropLast() }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private static func isXMLWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private mutating func parseDictionary(_ tag: StartTag, depth: Int) throws(Failure) -> SaveValue {
        try checkDepth(depth, tag.offset)
        var keys: [String] = []
        var values: [SaveValue] = []
        var largeKeySet: Set<String>? = nil
        if tag.selfClosing { return .dictionary([:]) }
        while true {
            try skipMisc(allowDeclaration: false)
            if atEndTag() { try expectEndTag(.dict); break }
            let keyTag = try readStartTag()
            guard keyTag.kind == .key else {
                throw Failure(offset: keyTag.offset, found: "<\(keyTag.name)> where a key belongs", expected: "<key> before each value of a <dict>")
            }
            let key = keyTag.selfClosing ? "" : try readString(until: .key)
            try skipMisc(allowDeclaration: false)
            if atEndTag() {
                throw Failure(offset: position, found: "</dict> right after <key>\(key)</key>", expected: "a value for the key")
            }
            let valueTag = try readStartTag()
            if valueTag.kind == .key {
                throw Failure(offset: valueTag.offset, found: "a second <key> after <key>\(key)</key>", expected: "a value for the key")
            }
            let value = try parseValue(valueTag, depth: depth + 1)
            if let earlier = KeyIndex.position(of: key, in: keys, largeSet: &largeKeySet) {
                if KeyIndex.isAnotherSpelling(key, of: keys[earlier]) {
                    let (found, expected) = KeyIndex.anotherSpelling(key, of: keys[earlier])
                    throw Failure(offset: keyTag.offset, found: found, expected: expected)
                }
                if rejectDuplicates {
                    throw Failure(
                        offset: keyTag.offset, found: "the key \"\(key)\" a second time",
                        expected: "each key once in a <dict>")
                }
                values[earlier] = value
            } else {
                keys.append(key)
                values.append(value)
            }
        }
        let entries = OrderedDictionary<String, SaveValue>(uncheckedUniqueKeys: keys, values: values)
        // Apple's spelling of a keyed archive's UID in XML.
        if entries.count == 1, let reference = entries["CF$UID"] {
            switch reference {
            case .integer(let number) where number >= 0: return .uid(UInt64(number))
            case .unsignedInteger(let number): return .uid(number)
            default: break
            }
        }
        return .dictionary(entries)
    }

    private mutating func parseArray(_ tag: StartTag, depth: Int) throws(Failure) -> SaveValue {
        try checkDepth(depth, tag.offset)
        var items: [SaveValue] = []
        if tag.selfClosing { return .array(items) }
        while true {
            try skipMisc(allowDeclaration: false)
            if atEndTag() { try expectEndTag(.array); break }
            let itemTag = try readStartTag()
            items.append(try parseValue(itemTag, depth: depth + 1))
        }
        return .array(items)
    }

    private func checkDepth(_ depth: Int, _ offset: Int) throws(Failure) {
        if depth > maxDepth {
            throw Failure(offset: offset, found: "nesting deeper than \(maxDepth) levels", expected: "a document nested at most \(maxDepth) deep", isLimit: true)
        }
    }

    private func parseInteger(_ text: String, offset: Int) throws(Failure) -> SaveValue {
        var digits = Substring(text)
        var negative = false
        if digits.hasPrefix("-") { negative = true; digits = digits.dropFirst() }
        else if digits.hasPrefix("+") { digits = digits.dropFirst() }
        var radix = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { radix = 16; digits = digits.dropFirst(2) }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isHexDigit && (radix == 16 || $0.isNumber) }) else {
            throw Failure(offset: offset, found: "the <integer> \"\(text)\"", expected: "a decimal or 0x-prefixed hexadecimal integer")
        }
        guard let magnitude = UInt64(digits, radix: radix) else {
            throw Failure(offset: offset, found: "the <integer> \(text) outside the 64-bit range", expected: "an integer from -9223372036854775808 to 18446744073709551615")
        }
        if !negative { return .int(magnitude) }
        if magnitude <= UInt64(Int64.max) { return .integer(-Int64(magnitude)) }
        if magnitude == UInt64(Int64.max) + 1 { return .integer(.min) }
        throw Failure(offset: offset, found: "the <integer> \(text) below the 64-bit range", expected: "an integer from -9223372036854775808")
    }

    static func parseReal(_ text: String) -> Double? {
        switch text.lowercased() {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default: break
        }
        // Decimal only: Double(String) would also take hexadecimal floats and "nan(…)" spellings.
        guard !text.isEmpty, text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2B || $0 == 0x2D || $0 | 0x20 == 0x65 }) else {
            return nil
        }
        return Double(text)
    }

    // MARK: - Tokens

    /// Skips whitespace, comments, processing instructions and (before the root) the XML
    /// declaration and a DOCTYPE without an internal subset.
    private mutating func skipMisc(allowDeclaration: Bool) throws(Failure) {
        while true {
            skipWhitespace()
            if starts(with: "<!--") {
                try skipComment()
            } else if starts(with: "<?") {
                let start = position
                guard let end = find("?>", from: position + 2) else {
                    throw Failure(offset: start, found: "a '<?' that is never closed", expected: "'?>'")
                }
                let body = String(decoding: UnsafeBufferPointer(rebasing: bytes[(position + 2)..<end]), as: UTF8.self)
                if body.hasPrefix("xml ") || body == "xml" { try checkDeclaration(body, offset: start) }
                position = end + 2
            } else if starts(with: "<!DOCTYPE") {
                guard allowDeclaration else {
                    throw Failure(offset: position, found: "a DOCTYPE inside the document", expected: "a DOCTYPE only before <plist>")
                }
                let start = position
                while position < bytes.count, bytes[position] != UInt8(ascii: ">") {
                    if bytes[position] == UInt8(ascii: "[") {
                        throw Failure(
                            offset: position, found: "a DOCTYPE with an internal subset (entity declarations)",
                            expected: "the plain Apple DOCTYPE; plists never declare entities")
                    }
                    position += 1
                }
                guard position < bytes.count else {
                    throw Failure(offset: start, found: "a DOCTYPE that is never closed", expected: "'>'")
                }
                position += 1
            } else {
                return
            }
        }
    }

    private func checkDeclaration(_ body: String, offset: Int) throws(Failure) {
        guard let range = body.range(of: "encoding") else { return }
        let rest = body[range.upperBound...].drop { $0 == " " || $0 == "=" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return }
        let name = rest.dropFirst().prefix { $0 != quote }.lowercased()
        guard ["utf-8", "utf8", "utf-16", "utf-16le", "utf-16be", "us-ascii", "ascii"].contains(name) else {
            throw Failure(offset: offset, found: "the encoding \"\(name)\"", expected: "UTF-8 or UTF-16 (the encodings property lists are written in)")
        }
    }

    private mutating func skipComment() throws(Failure) {
        let start = position
        guard let end = find("-->", from: position + 4) else {
            throw Failure(offset: start, found: "a comment that is never closed", expected: "'-->'")
        }
        position = end + 3
    }

    private mutating func readStartTag() throws(Failure) -> StartTag {
        let start = position
        guard position < bytes.count, bytes[position] == UInt8(ascii: "<") else {
            throw Failure(offset: position, found: describeHere(), expected: "an element such as <dict> or <string>")
        }
        position += 1
        let nameStart = position
        while position < bytes.count, isNameByte(bytes[position]) { position += 1 }
        guard position > nameStart else {
            throw Failure(offset: start, found: describeHere(), expected: "an element name after '<'")
        }
        let name = Element(UnsafeBufferPointer(rebasing: bytes[nameStart..<position]))
        // Attributes (such as version="1.0") are skipped, quotes respected.
        var quote: UInt8? = nil
        while position < bytes.count {
            let byte = bytes[position]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == 0x22 || byte == 0x27 {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                let selfClosing = bytes[position - 1] == UInt8(ascii: "/")
                position += 1
                return StartTag(kind: name, selfClosing: selfClosing, offset: start)
            } else if byte == UInt8(ascii: "<") {
                break
            }
            position += 1
        }
        throw Failure(offset: start, found: "the tag <\(name.name) that is never closed", expected: "'>'")
    }

    private func atEndTag() -> Bool { starts(with: "</") }

    private mutating func expectEndTag(_ element: Element) throws(Failure) {
        let start = position
        guard starts(with: "</") else {
            throw Failure(offset: position, found: describeHere(), expected: "</\(element.name)>")
        }
        position += 2
        let nameStart = position
        while position < bytes.count, isNameByte(bytes[position]) { position += 1 }
        let found = Element(UnsafeBufferPointer(rebasing: bytes[nameStart..<position]))
        skipWhitespace()
        guard found == element, position < bytes.count, bytes[position] == UInt8(ascii: ">") else {
            throw Failure(offset: start, found: "</\(found.name)>", expected: "</\(element.name)>")
        }
        position += 1
    }

    /// The text of a `<string>` or `<key>`: straight from the input when it is plain.
    private mutating func readString(until element: Element) throws(Failure) -> String {
        if let range = try readPlainText(until: element) {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        return try readText(until: element)
    }

    /// The range of an element's text when it is plain (no entity, CDATA or comment), with the
    /// end tag consumed; `nil`, with nothing consumed, when ``readText(until:)`` is needed.
    private mutating func readPlainText(until element: Element) throws(Failure) -> Range<Int>? {
        let start = position
        var index = position
        while index < bytes.count {
            let byte = bytes[index]
            // An entity, or a CR that line-end normalisation turns into a line feed: the slow way.
            if byte == UInt8(ascii: "&") || byte == 0x0D { return nil }
            if byte == UInt8(ascii: "<") {
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") else { return nil }
                position = index
                try expectEndTag(element)
                return start..<index
            }
            index += 1
        }
        return nil
    }

    /// The text content of an element up to its end tag, entities and CDATA resolved.
    private mutating func readText(until element: Element) throws(Failure) -> String {
        var buffer: [UInt8] = []
        var runStart = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
                if starts(with: "<![CDATA[") {
                    guard let end = find("]]>", from: position + 9) else {
                        throw Failure(offset: position, found: "a CDATA section that is never closed", expected: "']]>'")
                    }
                    Self.appendNormalizingLineEnds(UnsafeBufferPointer(rebasing: bytes[(position + 9)..<end]), to: &buffer)
                    position = end + 3
                } else if starts(with: "<!--") {
                    try skipComment()
                } else if starts(with: "</") {
                    try expectEndTag(element)
                    return String(decoding: buffer, as: UTF8.self)
                } else {
                    throw Failure(offset: position, found: "an element inside <\(element.name)>", expected: "text, then </\(element.name)>")
                }
                runStart = position
            } else if byte == UInt8(ascii: "&") {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
                try readEntity(into: &buffer)
                runStart = position
            } else if byte == 0x0D {
                // XML's line-end normalisation (XML 1.0 §2.11): CR LF and a lone CR are a line
                // feed, as every XML reader gives them (plistlib included). A CR the text holds is
                // written as &#13;, which this does not touch.
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
                buffer.append(0x0A)
                position += 1
                if position < bytes.count, bytes[position] == 0x0A { position += 1 }
                runStart = position
            } else {
                position += 1
            }
        }
        throw Failure(offset: position, found: "the end of the input", expected: "</\(element.name)>")
    }

    private static func appendNormalizingLineEnds(_ text: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        var index = 0
        while index < text.count {
            if text[index] == 0x0D {
                buffer.append(0x0A)
                if index + 1 < text.count, text[index + 1] == 0x0A { index += 1 }
            } else {
                buffer.append(text[index])
            }
            index += 1
        }
    }

    private mutating func readEntity(into buffer: inout [UInt8]) throws(Failure) {
        let start = position
        guard let end = find(";", from: position + 1), end - start <= 12 else {
            throw Failure(offset: start, found: "a bare '&'", expected: "an entity such as &amp; &lt; &gt; &quot; &apos; or &#60;")
        }
        let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[(start + 1)..<end]), as: UTF8.self)
        var scalar: UInt32?
        switch name {
        case "amp": scalar = 0x26
        case "lt": scalar = 0x3C
        case "gt": scalar = 0x3E
        case "quot": scalar = 0x22
        case "apos": scalar = 0x27
        default:
            if name.hasPrefix("#x") || name.hasPrefix("#X") { scalar = UInt32(name.dropFirst(2), radix: 16) }
            else if name.hasPrefix("#") { scalar = UInt32(name.dropFirst(), radix: 10) }
        }
        guard let code = scalar, let character = Unicode.Scalar(code), code != 0 else {
            throw Failure(offset: start, found: "the entity &\(name);", expected: "&amp; &lt; &gt; &quot; &apos; or a character reference such as &#60;")
        }
        buffer.append(contentsOf: String(Character(character)).utf8)
        position = end + 1
    }

    // MARK: - Bytes

    private func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x5F || byte == 0x2D || byte == 0x2E || byte == 0x3A
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x0A || bytes[position] == 0x0D || bytes[position] == 0x09 {
            position += 1
        }
    }

    private func starts(with literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for index in 0..<count where bytes[position + index] != literal.utf8Start[index] { return false }
        return true
    }

    private func find(_ literal: StaticString, from start: Int) -> Int? {
        let count = literal.utf8CodeUnitCount
        let first = literal.utf8Start[0]
        var index = start
        while index + count <= bytes.count {
            if bytes[index] == first {
                var matched = true
                for offset in 1..<max(count, 1) where bytes[index + offset] != literal.utf8Start[offset] { matched = false; break }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }

    private func describeHere() -> String {
        guard position < bytes.count else { return "the end of the input" }
        let byte = bytes[position]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "the byte 0x\(hex(byte, digits: 2))"
    }
}
