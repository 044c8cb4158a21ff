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
    ///
    /// With `guessingArray`, the array of that key is taken to end at the last `]` before the
    /// object's closing `}`, as it does when it is the last member (export writes `files`
    /// last) instead of being walked through once more. A wrong guess cannot go unnoticed: the
    /// array's real `]` then stands where its elements need a `,`, so ``forEachElement(_:in:_:)``
    /// fails, and the caller delimits again without guessing.
    static func members<Bytes: ManifestBytes>(_ bytes: Bytes, guessingArray guessed: [UInt8]? = nil) -> [(key: [UInt8], value: Range<Int>)]? {
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
            var guessedEnd: Int?
            if key == guessed, start < bytes.count, bytes[start] == UInt8(ascii: "["), let last = lastArrayEnd(bytes), last >= start { guessedEnd = last + 1 }
            guard let end = guessedEnd ?? endOfValue(bytes, from: start), !members.contains(where: { $0.key == key }) else { return nil }
            members.append((key, start..<end))
            index = skipSpace(bytes, end)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return skipSpace(bytes, index + 1) == bytes.count ? members : nil }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipSpace(bytes, index + 1)
        }
    }

    /// Where the `]` is that ends the document as `] }` (spaces aside), if it does.
    private static func lastArrayEnd<Bytes: ManifestBytes>(_ bytes: Bytes) -> Int? {
        func lastNonSpace(before end: Int) -> Int? {
            var index = end - 1
            while index >= 0, [0x20, 0x0A, 0x09, 0x0D].contains(bytes[index]) { index -= 1 }
            return index >= 0 ? index : nil
        }
        guard let brace = lastNonSpace(before: bytes.count), bytes[brace] == UInt8(ascii: "}"),
            let bracket = lastNonSpace(before: brace), bytes[bracket] == UInt8(ascii: "]")
        else { return nil }
        return bracket
    }

    /// Calls `body` with the byte range of each element of the array at `range`; `false` when
    /// the array cannot be delimited.
    static func forEachElement<Bytes: ManifestBytes>(_ bytes: Bytes, in range: Range<Int>, _ body: (Range<Int>) throws -> Void) rethrows -> Bool {
        try forEachElement(bytes, in: range, reading: { _ -> (Void, length: Int)? in nil }) { element, _ in try body(element) }
    }

    /// Calls `body` with the byte range of each element of the array at `range`, and with what
    /// `read` made of it. `read` is handed the bytes from the element's start on and either reads
    /// a whole element from their front, telling its length, or gives `nil`: the element is then
    /// delimited by walking it (``endOfValue(_:from:)``), and `body` gets `nil`. Reading and
    /// delimiting in one walk is what keeps a manifest of many entries from being read twice.
    static func forEachElement<Bytes: ManifestBytes, Read>(
        _ bytes: Bytes, in range: Range<Int>, reading read: (UnsafeRawBufferPointer) -> (Read, length: Int)?, _ body: (Range<Int>, Read?) throws -> Void
    ) rethrows -> Bool {
        guard !range.isEmpty, bytes[range.lowerBound] == UInt8(ascii: "["), bytes[range.upperBound - 1] == UInt8(ascii: "]") else { return false }
        let closing = range.upperBound - 1
        var index = skipSpace(bytes, range.lowerBound + 1)
        if index == closing { return true }
        while true {
            guard index < closing else { return false }
            let element = bytes.withRun(from: index, atLeast: 16 << 10) { run in read(UnsafeRawBufferPointer(rebasing: run.prefix(closing - index))) }
            if let element, element.length > 0 {
                try body(index..<index + element.length, element.0)
                index += element.length
            } else {
                guard let end = endOfValue(bytes, from: index), end < range.upperBound else { return false }
                try body(index..<end, nil)
                index = end
            }
            index = skipSpace(bytes, index)
            if index == closing { return true }
            guard index < closing, bytes[index] == UInt8(ascii: ",") else { return false }
            index = skipSpace(bytes, index + 1)
        }
    }

    /// Where the value starting at `start` ends: after a string's closing quote, an object's or
    /// array's closing bracket (nesting counted, strings skipped), or a literal's last byte.
    /// Iterative, so a hostile nesting depth costs no stack; a run of bytes at a time, since this
    /// walks every byte of a manifest once.
    static func endOfValue<Bytes: ManifestBytes>(_ bytes: Bytes, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["):
            break
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            return nil
        default:
            // A literal (number, true, false, null): up to the next delimiter.
            var index = start
            while index < bytes.count, !isDelimiter(bytes[index]) { index += 1 }
            return index > start ? index : nil
        }
        var depth = 0, inString = false, escaped = false
        var index = start
        while index < bytes.count {
            let step = bytes.withRun(from: index, atLeast: 0) { run -> Step in
                guard !run.isEmpty else { return .fault }
                for offset in 0..<run.count {
                    let byte = run[offset]
                    if inString {
                        if escaped {
                            escaped = false
                        } else if byte == UInt8(ascii: "\\") {
                            escaped = true
                        } else if byte == UInt8(ascii: "\"") {
                            inString = false
                            if depth == 0 { return .end(index + offset + 1) }
                        }
                        continue
                    }
                    switch byte {
                    case UInt8(ascii: "\""):
                        inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        guard depth > 0 else { return .fault }
                        depth -= 1
                        if depth == 0 { return .end(index + offset + 1) }
                    default:
                        break
                    }
                }
                return .next(index + run.count)
            }
            switch step {
            case .end(let end): return end
            case .fault: return nil
            case .next(let next): index = next
            }
        }
        return nil
    }

    /// How a run of a value's bytes ended: with the value, with a fault, or going on.
    private enum Step { case end(Int), fault, next(Int) }

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
    /// Calls `body` with the bytes from `index` on, as many as are at hand in one piece, and at
    /// least `atLeast` (when there are as many); with none only when they cannot be read.
    func withRun<Result>(from index: Int, atLeast: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
    /// The first failure to read them (a subscript cannot throw), if any.
    var failure: (any Error)? { get }
}

extension Array: ManifestBytes where Element == UInt8 {
    func bytes(in range: Range<Int>) -> [UInt8] { Array(self[range]) }
    func withRun<Result>(from index: Int, atLeast: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try self[index...].withUnsafeBytes(body)
    }
    var failure: (any Error)? { nil }
}
