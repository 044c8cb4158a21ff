/// Where a JSON value ends, found by scanning its bytes rather than reading it: what the reader
/// asks before it decides how to read a value, and what a rewrite asks of a text it has read.
enum JSONScan {
    /// JSON's whitespace: space, tab, line feed, carriage return.
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    /// The first position from `start` that is not whitespace (or `bytes.count`).
    static func skipSpace<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, from start: Int) -> Int where Bytes.Index == Int {
        var position = start
        while position < bytes.endIndex, isSpace(bytes[position]) { position += 1 }
        return position
    }

    /// The end of the value that starts at `start`: past its closing quote or bracket, or at the
    /// byte that ends a number or a literal. In bytes that do not read as JSON it still ends,
    /// somewhere up to `bytes.count`.
    static func endOfValue<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at start: Int) -> Int where Bytes.Index == Int {
        var position = start
        var depth = 0
        while position < bytes.endIndex {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                while position < bytes.endIndex, bytes[position] != UInt8(ascii: "\"") {
                    position += bytes[position] == UInt8(ascii: "\\") ? 2 : 1
                }
                position += 1
                if depth == 0 { return min(position, bytes.endIndex) }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return position + 1 }
                if depth < 0 { return position }
            case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                if depth == 0 { return position }
            default:
                break
            }
            position += 1
        }
        return min(position, bytes.endIndex)
    }
}
