import Foundation

/// Writes XML property lists the way Apple's and Python's writers do — tab indentation,
/// `<data>` wrapped to 76 columns — as events arrive.
struct XMLPlistWriter: SaveEventWriter {
    static var header: String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """
    }

    private var text: ChunkedBuffer<ErasedByteOutput>
    /// Each open container, and whether its start tag still waits for a first element: the
    /// tag is written then, or as `<array/>` at the end if none came (counts declared by a
    /// source may shrink when nulls are dropped).
    private var levels: [(element: StaticString, waiting: Bool)] = []

    /// Tabs before each element, as Apple's writer does; without them (`EncodingOptions.pretty`
    /// false) each element still has a line of its own.
    private let indented: Bool

    init(output: any ByteOutput, indented: Bool = true) {
        text = ChunkedBuffer(output: ErasedByteOutput(base: output))
        self.indented = indented
        text.append(Self.header)
    }

    mutating func finish() throws -> any ByteOutput {
        text.append("</plist>\n")
        try text.flush()
        return text.output.base
    }

    mutating func beginArray(count: Int) throws { open("array") }
    mutating func endArray() throws { try close() }
    mutating func beginDictionary(count: Int) throws { open("dict") }
    mutating func endDictionary() throws { try close() }

    mutating func key(_ key: String) throws {
        var key = key
        try key.withUTF8 { try utf8Key($0) }
    }

    mutating func utf8Key(_ key: UnsafeBufferPointer<UInt8>) throws {
        openWaitingParent()
        indent(levels.count)
        text.append("<key>")
        appendEscaped(key)
        text.append("</key>\n")
    }

    mutating func utf8String(_ string: UnsafeBufferPointer<UInt8>) throws {
        openWaitingParent()
        indent(levels.count)
        text.append("<string>")
        appendEscaped(string)
        text.append("</string>\n")
        try text.flushIfFull()
    }

    private mutating func open(_ element: StaticString) {
        openWaitingParent()
        levels.append((element, true))
    }

    /// Writes the start tag of the innermost container if it is still waiting.
    private mutating func openWaitingParent() {
        guard let last = levels.indices.last, levels[last].waiting else { return }
        levels[last].waiting = false
        indent(last)
        text.append(UInt8(ascii: "<"))
        text.append(levels[last].element)
        text.append(">\n")
    }

    private mutating func close() throws {
        let level = levels.removeLast()
        indent(levels.count)
        text.append(level.waiting ? "<" : "</")
        text.append(level.element)
        text.append(level.waiting ? "/>\n" : ">\n")
        try text.flushIfFull()
    }

    mutating func value(_ scalar: SaveValue) throws {
        if case .array = scalar { try scalar.emit(into: &self); return }
        if case .dictionary = scalar { try scalar.emit(into: &self); return }
        openWaitingParent()
        let depth = levels.count
        indent(depth)
        switch scalar {
        case .null:
            throw CodecError.unrepresentable(codec: "plist", at: JSONPointer(), found: "null", expected: "a value (plist has no null)")
        case .bool(let flag): text.append(flag ? "<true/>\n" : "<false/>\n")
        case .integer(let number):
            text.append("<integer>")
            text.appendDecimal(number)
            text.append("</integer>\n")
        case .unsignedInteger(let number):
            text.append("<integer>")
            text.appendDecimal(number)
            text.append("</integer>\n")
        case .real(let number):
            let spelled = number.isNaN ? "nan" : number.isInfinite ? (number < 0 ? "-inf" : "inf") : number.description
            text.append("<real>\(spelled)</real>\n")
        case .string(let string):
            text.append("<string>")
            appendEscaped(string)
            text.append("</string>\n")
        case .date(let date):
            guard RFC3339.isRepresentable(date) else {
                throw CodecError.unrepresentable(
                    codec: "plist", at: JSONPointer(), found: "a date outside years 1–9999", expected: "a date XML can spell (bplist keeps it)")
            }
            text.append("<date>")
            RFC3339.write(date, into: &text)
            text.append("</date>\n")
        case .data(let bytes):
            text.append("<data>\n")
            // Python's plistlib rule, which reproduces Apple's files: 76 columns, tabs counted as 8.
            let chunk = max(16, 76 - 8 * depth) / 4 * 3
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = min(start + chunk, bytes.endIndex)
                indent(depth)
                text.append(bytes[start..<end].base64EncodedString())
                text.append(0x0A)
                start = end
            }
            indent(depth)
            text.append("</data>\n")
        case .uid(let number):
            text.append("<dict>\n")
            indent(depth + 1)
            text.append("<key>CF$UID</key>\n")
            indent(depth + 1)
            text.append("<integer>\(number)</integer>\n")
            indent(depth)
            text.append("</dict>\n")
        case .array, .dictionary:
            return  // handled above
        }
        try text.flushIfFull()
    }

    private mutating func indent(_ depth: Int) { if indented { text.appendTabs(depth) } }

    /// Escapes `&`, `<`, `>`, and a carriage return as `&#13;` so that XML's line-end
    /// normalisation cannot turn it into a line feed.
    private mutating func appendEscaped(_ string: String) {
        var string = string
        string.withUTF8 { appendEscaped($0) }
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        do {
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte == 0x26 || byte == 0x3C || byte == 0x3E || byte == 0x0D else { continue }
                text.append(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case 0x26: text.append("&amp;")
                case 0x3C: text.append("&lt;")
                case 0x3E: text.append("&gt;")
                default: text.append("&#13;")
                }
            }
            text.append(UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
    }
}

