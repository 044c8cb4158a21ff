/// Delimits the members of a manifest's top-level object, and the elements of its `files` array,
/// without building values: each entry is then decoded on its own, and a manifest of many
/// entries is never held as one value tree (which took most of an import's memory and a tenth
/// of its time).
///
/// It only finds where values begin and end; the JSON decoder still reads every byte of every
/// value. Whatever it cannot delimit it leaves to the decoder of the whole document, which
/// names the line and column of the fault.
enum ManifestLayout {
    /// The top-level members in order, each key with the byte range of its value; `nil` unless
    /// `bytes` is one object whose members can be delimited, each key once.
    static func members<Bytes: ManifestBytes>(_ bytes: Bytes) -> [(key: [UInt8], value: Range<Int>)]? {
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index = skipSpace(bytes, index + 1)
        var members: [(key: [UInt8], value: Range<Int>)] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            return skipSpace(bytes, index + 1) == bytes.count ? members : nil
        }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let keyEnd = endOfValue(bytes, from: index) else { return nil }
            let key = bytes.bytes(in: index..<keyEnd)
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let start = skipSpace(bytes, index + 1)
            guard let end = endOfValue(bytes, from: start), !members.contains(where: { $0.key == key }) else { return nil }
            members.append((key, start..<end))
            index = skipSpace(bytes, end)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return skipSpace(bytes, index + 1) == bytes.count ? members : nil }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipSpace(bytes, index + 1)
        }
    }

    /// Calls `body` with the byte range of each element of the array at `range`; `false` when
    /// the array cannot be delimited.
    static func forEachElement<Bytes: ManifestBytes>(_ bytes: Bytes, in range: Range<Int>, _ body: (Range<Int>) throws -> Void) rethrows -> Bool {
        guard !range.isEmpty, bytes[range.lowerBound] == UInt8(ascii: "["), bytes[range.upperBound - 1] == UInt8(ascii: "]") else { return false }
        var index = skipSpace(bytes, range.lowerBound + 1)
        if index == range.upperBound - 1 { return true }
        while true {
            guard let end = endOfValue(bytes, from: index), end < range.upperBound else { return false }
            try body(index..<end)
            index = skipSpace(bytes, end)
            if index == range.upperBound - 1 { return true }
            guard index < range.upperBound - 1, bytes[index] == UInt8(ascii: ",") else { return false }
            index = skipSpace(bytes, index + 1)
        }
    }

    /// Where the value starting at `start` ends: after a string's closing quote, an object's or
    /// array's closing bracket (nesting counted, strings skipped), or a literal's last byte.
    /// Iterative, so a hostile nesting depth costs no stack.
    static func endOfValue<Bytes: ManifestBytes>(_ bytes: Bytes, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        var index = start
        var depth = 0
        repeat {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard index < bytes.count else { return nil }
                index += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { return nil }
                depth -= 1
                index += 1
            default:
                if depth == 0 {
                    // A literal (number, true, false, null): up to the next delimiter.
                    while index < bytes.count, !isDelimiter(bytes[index]) { index += 1 }
                    return index > start ? index : nil
                }
                index += 1
            }
        } while depth > 0
        return index
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), 0x20, 0x09, 0x0A, 0x0D: true
        default: false
        }
    }

    fileprivate static func skipSpace<Bytes: ManifestBytes>(_ bytes: Bytes, _ start: Int) -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D else { break }
            index += 1
        }
        return index
    }
}

/// Bytes the layout can index: an array, or a spooled manifest read through a window.
protocol ManifestBytes {
    var count: Int { get }
    subscript(index: Int) -> UInt8 { get }
    func bytes(in range: Range<Int>) -> [UInt8]
    /// Calls `body` with the bytes in `range`, copied only when they are not at hand.
    func withBytes<Result>(in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    /// The first failure to read them (a subscript cannot throw), if any.
    var failure: (any Error)? { get }
}

extension Array: ManifestBytes where Element == UInt8 {
    func bytes(in range: Range<Int>) -> [UInt8] { Array(self[range]) }
    func withBytes<Result>(in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try self[range].withUnsafeBytes(body)
    }
    var failure: (any Error)? { nil }
}
