import Foundation

/// Writes typed JSON (or plain JSON, once ``LoweringSink`` has retyped what plain JSON lacks)
/// as events arrive, so a large document goes to its file without being held in memory.
struct JSONWriter: SaveEventWriter {
    private struct Level {
        var isDictionary: Bool
        var written = 0
        /// A one-entry dictionary waits for its key: if that is a marker key it is wrapped in `{"$dict": …}`.
        var waitingForFirstKey = false
        var wrapped = false
    }

    private var text: ChunkedBuffer<ErasedByteOutput>
    private var levels: [Level] = []
    private let pretty: Bool
    /// Plain JSON has no markers, so nothing needs wrapping.
    private let wrapsMarkerLikeDictionaries: Bool

    init(output: any ByteOutput, pretty: Bool, plain: Bool) {
        self.text = ChunkedBuffer(output: ErasedByteOutput(base: output))
        self.pretty = pretty
        self.wrapsMarkerLikeDictionaries = !plain
    }

    /// Ends the document with a newline and hands on the last bytes.
    mutating func finish() throws -> any ByteOutput {
        text.append(0x0A)
        try text.flush()
        return text.output.base
    }

    mutating func beginArray(count: Int) throws {
        beforeValue()
        text.append(UInt8(ascii: "["))
        levels.append(Level(isDictionary: false))
    }

    mutating func endArray() throws {
        let level = levels.removeLast()
        if level.written > 0 { newline(levels.count) }
        text.append(UInt8(ascii: "]"))
        try text.flushIfFull()
    }

    mutating func beginDictionary(count: Int) throws {
        beforeValue()
        var level = Level(isDictionary: true)
        if wrapsMarkerLikeDictionaries && count == 1 {
            level.waitingForFirstKey = true
        } else {
            text.append(UInt8(ascii: "{"))
        }
        levels.append(level)
    }

    mutating func key(_ key: String) throws {
        var key = key
        try key.withUTF8 { try utf8Key($0) }
    }

    mutating func utf8Key(_ key: UnsafeBufferPointer<UInt8>) throws {
        var level = levels[levels.count - 1]
        if level.waitingForFirstKey {
            level.waitingForFirstKey = false
            if TypedJSON.isMarkerKey(key) {
                level.wrapped = true
                append(pretty ? "{\"$dict\": {" : "{\"$dict\":{")
            } else {
                text.append(UInt8(ascii: "{"))
            }
        }
        if level.written > 0 { text.append(UInt8(ascii: ",")) }
        level.written += 1
        levels[levels.count - 1] = level
        newline(levels.count)
        appendString(key)
        text.append(UInt8(ascii: ":"))
        if pretty { text.append(0x20) }
    }

    mutating func endDictionary() throws {
        let level = levels.removeLast()
        if level.waitingForFirstKey {
            append("{}")  // declared one entry, received none
        } else {
            if level.written > 0 { newline(levels.count) }
            text.append(UInt8(ascii: "}"))
            if level.wrapped { text.append(UInt8(ascii: "}")) }
        }
        try text.flushIfFull()
    }

    mutating func utf8String(_ string: UnsafeBufferPointer<UInt8>) throws {
        beforeValue()
        appendString(string)
        try text.flushIfFull()
    }

    mutating func value(_ scalar: SaveValue) throws {
        beforeValue()
        switch scalar {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .integer(let number): text.appendDecimal(number)
        case .unsignedInteger(let number): text.appendDecimal(number)
        case .real(let number):
            if number.isFinite {
                append(number.description)  // the shortest text that round-trips, always with "." or "e"
            } else {
                append(pretty ? "{\"$real\": " : "{\"$real\":")
                append(number.isNaN ? "\"nan\"}" : number < 0 ? "\"-inf\"}" : "\"inf\"}")
            }
        case .string(let string): appendString(string)
        case .date(let date):
            append(pretty ? "{\"$date\": " : "{\"$date\":")
            text.append(UInt8(ascii: "\""))
            if RFC3339.write(date, into: &text) {
                text.append(UInt8(ascii: "\""))
            } else {
                // Not spelled exactly by RFC 3339 (beyond years 1–9999, or a fraction finer than
                // 17 digits): the seconds since 2001-01-01T00:00:00Z, which give it back exactly.
                text.removeLast(1)
                let seconds = date.timeIntervalSinceReferenceDate
                // NaN or infinite seconds are no time (only a caller of the library can make such
                // a date; every reader refuses it): refused rather than written as another time.
                guard seconds.isFinite else {
                    throw CodecError.unrepresentable(
                        codec: "json", at: JSONPointer(tokens: []), found: "a date of \(seconds) seconds", expected: "a date that is a time (a finite number of seconds)")
                }
                append(seconds.description)
            }
            text.append(UInt8(ascii: "}"))
        case .data(let bytes):
            append(pretty ? "{\"$data\": \"" : "{\"$data\":\"")
            append(bytes.base64EncodedString())
            append("\"}")
        case .uid(let number):
            append(pretty ? "{\"$uid\": " : "{\"$uid\":")
            text.appendDecimal(number)
            text.append(UInt8(ascii: "}"))
        case .array, .dictionary:
            try scalar.emit(into: &self)
            return
        }
        try text.flushIfFull()
    }

    // MARK: - Text

    /// Commas and indentation before an array element (a dictionary's come with its key).
    private mutating func beforeValue() {
        guard let last = levels.indices.last, !levels[last].isDictionary else { return }
        if levels[last].written > 0 { text.append(UInt8(ascii: ",")) }
        levels[last].written += 1
        newline(levels.count)
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        text.appendNewline(indentedBy: 2 * depth)
    }

    @inline(__always)
    private mutating func append(_ string: StaticString) { text.append(string) }

    @inline(__always)
    private mutating func append(_ string: String) { text.append(string) }

    private mutating func appendString(_ string: String) {
        var string = string
        string.withUTF8 { appendString($0) }
    }

    private mutating func appendString(_ utf8: UnsafeBufferPointer<UInt8>) {
        text.append(UInt8(ascii: "\""))
        do {
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                text.append(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case 0x22: append("\\\"")
                case 0x5C: append("\\\\")
                case 0x0A: append("\\n")
                case 0x0D: append("\\r")
                case 0x09: append("\\t")
                case 0x08: append("\\b")
                case 0x0C: append("\\f")
                default: append("\\u00" + hex(byte, digits: 2))
                }
            }
            text.append(UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        text.append(UInt8(ascii: "\""))
    }
}

