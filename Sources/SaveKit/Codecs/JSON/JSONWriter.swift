import Foundation
import OrderedCollections

/// Writes a value as typed JSON (or plain JSON once ``ValueLowering`` has retyped what plain JSON lacks).
struct JSONWriter {
    private(set) var output: [UInt8] = []
    private let pretty: Bool
    private let maxDepth: Int

    init(pretty: Bool, maxDepth: Int, capacity: Int = 4096) {
        self.pretty = pretty
        self.maxDepth = maxDepth
        output.reserveCapacity(capacity)
    }

    mutating func write(_ value: SaveValue, path: inout [String], depth: Int = 0) throws(CodecError) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .integer(let number): appendInteger(number)
        case .unsignedInteger(let number): append(String(number))
        case .real(let number):
            if number.isFinite {
                append(number.description)  // Swift prints the shortest text that round-trips, always with "." or "e"
            } else {
                append(markerStart("$real"))
                append("\"\(number.isNaN ? "nan" : number < 0 ? "-inf" : "inf")\"}")
            }
        case .string(let text): appendString(text)
        case .date(let date):
            append(markerStart("$date"))
            if RFC3339.isRepresentable(date) {
                appendString(RFC3339.format(date))
            } else {
                let seconds = date.timeIntervalSinceReferenceDate
                guard seconds.isFinite else {
                    throw .unrepresentable(codec: "json", at: JSONPointer(tokens: path), found: "a date that is not a finite number", expected: "a finite date")
                }
                append(seconds.description)
            }
            output.append(UInt8(ascii: "}"))
        case .data(let bytes):
            append(markerStart("$data"))
            append("\"")
            append(bytes.base64EncodedString())
            append("\"}")
        case .uid(let number):
            append(markerStart("$uid"))
            append("\(number)}")
        case .array(let items):
            if items.isEmpty { append("[]"); return }
            try checkDepth(depth, path)
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                path.append(String(index))
                try write(item, path: &path, depth: depth + 1)
                path.removeLast()
            }
            newline(depth)
            output.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            if entries.isEmpty { append("{}"); return }
            try checkDepth(depth, path)
            let wrapped = TypedJSON.needsWrapping(entries)
            if wrapped { append(markerStart("$dict")) }
            output.append(UInt8(ascii: "{"))
            for (index, entry) in entries.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                appendString(entry.key)
                output.append(UInt8(ascii: ":"))
                if pretty { output.append(UInt8(ascii: " ")) }
                path.append(entry.key)
                try write(entry.value, path: &path, depth: depth + 1)
                path.removeLast()
            }
            newline(depth)
            output.append(UInt8(ascii: "}"))
            if wrapped { output.append(UInt8(ascii: "}")) }
        }
    }

    /// Markers stay on one line even in pretty output: `{"$date": "…"}`.
    private func markerStart(_ key: String) -> String {
        pretty ? "{\"\(key)\": " : "{\"\(key)\":"
    }

    private func checkDepth(_ depth: Int, _ path: [String]) throws(CodecError) {
        if depth >= maxDepth {
            throw .limitExceeded(
                codec: "json", at: .pointer(JSONPointer(tokens: path)), found: "nesting deeper than \(maxDepth) levels",
                expected: "a value nested at most \(maxDepth) deep")
        }
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        output.append(0x0A)
        for _ in 0..<depth { output.append(0x20); output.append(0x20) }
    }

    private mutating func append(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    private mutating func appendInteger(_ number: Int64) {
        if number >= 0 && number < 10 { output.append(UInt8(number) + 48); return }
        append(String(number))
    }

    private mutating func appendString(_ text: String) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
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
            output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        output.append(UInt8(ascii: "\""))
    }
}
