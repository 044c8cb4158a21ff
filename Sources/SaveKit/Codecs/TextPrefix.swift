/// The first character of a text file, past its byte order mark and white space, for the text
/// codecs' sniffing: JSON and XML are told apart by it in UTF-8 and UTF-16 alike, so that JSON
/// in UTF-16 reaches the JSON reader, which refuses it with its own message, rather than the
/// XML reader, which would complain of a missing element.
enum TextPrefix {
    /// The first non-space character if it is ASCII; `nil` otherwise, or when there is none,
    /// or when the text is UTF-32, which neither reader reads.
    static func firstCharacter(of prefix: ArraySlice<UInt8>) -> UInt8? {
        // Most text: no mark, and an ASCII character first (no mark starts with one).
        if let first = prefix.first, first > 0x20 && first < 0x80 { return first }
        if prefix.starts(with: [0x00, 0x00, 0xFE, 0xFF]) || prefix.starts(with: [0xFF, 0xFE, 0x00, 0x00]) { return nil }
        // Code units of this width and byte order, after the mark.
        let (width, bigEndian, start): (Int, Bool, Int) =
            if prefix.starts(with: [0xFE, 0xFF]) { (2, true, 2) }
            else if prefix.starts(with: [0xFF, 0xFE]) { (2, false, 2) }
            else if prefix.starts(with: [0xEF, 0xBB, 0xBF]) { (1, true, 3) }
            else { (1, true, 0) }
        var offset = prefix.startIndex + start
        while offset + width <= prefix.endIndex {
            let unit = prefix[offset..<(offset + width)]
            offset += width
            // An ASCII character is one unit whose other bytes are zero.
            let low = bigEndian ? unit.last! : unit.first!
            guard unit.allSatisfy({ $0 == 0 || $0 == low }), unit.filter({ $0 != 0 }).count <= 1 else { return nil }
            if low == 0x20 || low == 0x0A || low == 0x0D || low == 0x09 { continue }
            return low < 0x80 && low != 0 ? low : nil
        }
        return nil
    }
}
