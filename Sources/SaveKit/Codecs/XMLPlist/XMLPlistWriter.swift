import Foundation

/// Writes XML property lists the way Apple's and Python's writers do: tab indentation,
/// `<data>` wrapped to 76 columns, so that files stay byte-identical across round trips.
struct XMLPlistWriter {
    private(set) var output: [UInt8] = []
    private let maxDepth: Int

    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    init(maxDepth: Int) {
        self.maxDepth = maxDepth
        output.reserveCapacity(4096)
        append(Self.header)
    }

    mutating func finish() -> [UInt8] {
        append("</plist>\n")
        return output
    }

    mutating func write(_ value: SaveValue, depth: Int, path: inout [String]) throws(CodecError) {
        indent(depth)
        switch value {
        case .null:
            throw .unrepresentable(codec: "plist", at: JSONPointer(tokens: path), found: "null", expected: "a value (plist has no null)")
        case .bool(let flag): append(flag ? "<true/>\n" : "<false/>\n")
        case .integer(let number): append("<integer>\(number)</integer>\n")
        case .unsignedInteger(let number): append("<integer>\(number)</integer>\n")
        case .real(let number):
            let text = number.isNaN ? "nan" : number.isInfinite ? (number < 0 ? "-inf" : "inf") : number.description
            append("<real>\(text)</real>\n")
        case .string(let text):
            append("<string>")
            appendEscaped(text)
            append("</string>\n")
        case .date(let date):
            guard RFC3339.isRepresentable(date) else {
                throw .unrepresentable(
                    codec: "plist", at: JSONPointer(tokens: path), found: "a date outside years 1–9999",
                    expected: "a date XML can spell (bplist keeps it)")
            }
            append("<date>\(RFC3339.format(date))</date>\n")
        case .data(let bytes):
            append("<data>\n")
            // Python's plistlib rule, which reproduces Apple's files: 76 columns, tabs counted as 8.
            let lineLength = max(16, 76 - 8 * depth)
            let chunk = lineLength / 4 * 3
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = min(start + chunk, bytes.endIndex)
                indent(depth)
                append(bytes[start..<end].base64EncodedString())
                output.append(0x0A)
                start = end
            }
            indent(depth)
            append("</data>\n")
        case .uid(let number):
            append("<dict>\n")
            indent(depth + 1)
            append("<key>CF$UID</key>\n")
            indent(depth + 1)
            append("<integer>\(number)</integer>\n")
            indent(depth)
            append("</dict>\n")
        case .array(let items):
            if items.isEmpty { append("<array/>\n"); return }
            try checkDepth(depth, path)
            append("<array>\n")
            for (index, item) in items.enumerated() {
                path.append(String(index))
                try write(item, depth: depth + 1, path: &path)
                path.removeLast()
            }
            indent(depth)
            append("</array>\n")
        case .dictionary(let entries):
            if entries.isEmpty { append("<dict/>\n"); return }
            try checkDepth(depth, path)
            append("<dict>\n")
            for (key, item) in entries {
                indent(depth + 1)
                append("<key>")
                appendEscaped(key)
                append("</key>\n")
                path.append(key)
                try write(item, depth: depth + 1, path: &path)
                path.removeLast()
            }
            indent(depth)
            append("</dict>\n")
        }
    }

    private func checkDepth(_ depth: Int, _ path: [String]) throws(CodecError) {
        if depth >= maxDepth {
            throw .limitExceeded(
                codec: "plist", at: .pointer(JSONPointer(tokens: path)), found: "nesting deeper than \(maxDepth) levels",
                expected: "a value nested at most \(maxDepth) deep")
        }
    }

    private mutating func indent(_ depth: Int) {
        for _ in 0..<depth { output.append(0x09) }
    }

    private mutating func append(_ text: String) { output.append(contentsOf: text.utf8) }

    /// Escapes `&`, `<`, `>`, and a carriage return as `&#13;` so that XML's line-end
    /// normalisation cannot turn it into a line feed.
    private mutating func appendEscaped(_ text: String) {
        for byte in text.utf8 {
            switch byte {
            case 0x26: append("&amp;")
            case 0x3C: append("&lt;")
            case 0x3E: append("&gt;")
            case 0x0D: append("&#13;")
            default: output.append(byte)
            }
        }
    }
}
