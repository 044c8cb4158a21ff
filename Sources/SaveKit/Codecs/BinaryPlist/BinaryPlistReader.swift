import Foundation
import OrderedCollections

/// Reads `bplist00` binary property lists, the format `UserDefaults` writes.
///
/// Every number read from the file (offsets, counts, references) is checked against the file
/// before it is used, so a hostile file ends in an error naming the byte, never in a crash or
/// a huge allocation. Objects referenced from several places are decoded once and shared;
/// a reference cycle is an error (as in CoreFoundation and libplist), and so is a graph of
/// shared references that would expand past ``DecodingOptions/maxExpandedValues``.
struct BinaryPlistReader {
    struct Failure: Error {
        var offset: Int
        var found: String
        var expected: String
        var isLimit = false
    }

    let bytes: UnsafeBufferPointer<UInt8>
    private let options: DecodingOptions
    private var offsetSize = 0
    private(set) var referenceSize = 0
    private var objectCount = 0
    private var offsetTableStart = 0
    /// Decoded objects by index, so that a shared object is decoded once.
    private var decoded: [SaveValue?] = []
    /// How many values each decoded object expands to, for the expansion limit.
    private var expandedSize: [Int] = []
    /// Objects being decoded right now: meeting one again is a cycle.
    private var inProgress: [Bool] = []
    /// Where the key references of dictionaries already checked start, and their count, one
    /// per count modulo 8: a save's records share one set of key objects, and the same
    /// references in the same order need no second check. By count, so that a record and the
    /// small dictionary inside each record do not push each other out.
    private var checkedKeys = [(body: Int, count: Int)](repeating: (-1, -1), count: 8)
    /// UTF-16 text of the streaming reader, as UTF-8 for the sink (one buffer, reused).
    private var utf8Scratch: [UInt8] = []
    /// The streaming reader's top object and where it is referenced, for the expansion check.
    private var streamedTop: (index: Int, referencedAt: Int)?

    init(bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) {
        self.bytes = bytes
        self.options = options
    }

    static func parse(_ input: [UInt8], options: DecodingOptions) throws(CodecError) -> SaveValue {
        do {
            return try input.withUnsafeBufferPointer { buffer throws(Failure) in
                var reader = BinaryPlistReader(bytes: buffer, options: options)
                return try reader.parseDocument()
            }
        } catch {
            if error.isLimit {
                throw .limitExceeded(codec: "bplist", at: .byte(error.offset), found: error.found, expected: error.expected)
            }
            throw .malformed(codec: "bplist", at: .byte(error.offset), found: error.found, expected: error.expected)
        }
    }

    // MARK: - Trailer

    private mutating func parseDocument() throws(Failure) -> SaveValue {
        let (topObject, topReference) = try prepare()
        decoded = Array(repeating: nil, count: objectCount)
        expandedSize = Array(repeating: 0, count: objectCount)
        return try object(topObject, depth: 0, referencedAt: topReference)
    }

    /// Reads and checks the header and trailer; returns the top object and where it is named.
    mutating func prepare() throws(Failure) -> (object: Int, referencedAt: Int) {
        let headerLength = 8
        let trailerLength = 32
        guard bytes.count >= headerLength + 1 + trailerLength else {
            throw Failure(offset: 0, found: "\(bytes.count) bytes", expected: "at least \(headerLength + 1 + trailerLength) bytes (header, one object, trailer)")
        }
        let magic: [UInt8] = Array("bplist0".utf8)
        guard (0..<7).allSatisfy({ bytes[$0] == magic[$0] }) else {
            throw Failure(offset: 0, found: "a file not starting with \"bplist0\"", expected: "a binary property list")
        }
        let trailer = bytes.count - trailerLength
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        let declaredObjects = readUInt64(at: trailer + 8, size: 8)
        let topObject = readUInt64(at: trailer + 16, size: 8)
        let declaredTableStart = readUInt64(at: trailer + 24, size: 8)
        // Writers start the trailer with six zero bytes: without them and with impossible sizes,
        // the last 32 bytes are not a trailer at all, and the likely cause is a cut-short file.
        if !((1...8).contains(offsetSize) && (1...8).contains(referenceSize)), !(trailer..<trailer + 6).allSatisfy({ bytes[$0] == 0 }) {
            throw Failure(
                offset: trailer, found: "no trailer in the last 32 bytes",
                expected: "a binary plist's trailer at its end (six zero bytes, then the sizes): the file is probably cut short or damaged")
        }
        guard (1...8).contains(offsetSize) else {
            throw Failure(offset: trailer + 6, found: "an offset size of \(offsetSize) bytes", expected: "1 to 8 bytes")
        }
        guard (1...8).contains(referenceSize) else {
            throw Failure(offset: trailer + 7, found: "an object reference size of \(referenceSize) bytes", expected: "1 to 8 bytes")
        }
        // The offset table sits between the objects and the trailer.
        guard declaredTableStart >= UInt64(headerLength + 1), declaredTableStart < UInt64(trailer) else {
            throw Failure(offset: trailer + 24, found: "an offset table at byte \(declaredTableStart)", expected: "a table between byte 9 and the trailer at byte \(trailer)")
        }
        offsetTableStart = Int(declaredTableStart)
        let tableCapacity = UInt64((trailer - offsetTableStart) / offsetSize)
        guard declaredObjects >= 1, declaredObjects <= tableCapacity else {
            throw Failure(
                offset: trailer + 8, found: "\(declaredObjects) objects declared",
                expected: "1 to \(tableCapacity) objects (as many as the offset table can hold)")
        }
        objectCount = Int(declaredObjects)
        guard topObject < declaredObjects else {
            throw Failure(offset: trailer + 16, found: "top object \(topObject)", expected: "an object below \(objectCount)")
        }
        inProgress = Array(repeating: false, count: objectCount)
        return (Int(topObject), trailer + 16)
    }

    // MARK: - Objects

    private mutating func object(_ index: Int, depth: Int, referencedAt: Int) throws(Failure) -> SaveValue {
        if let value = decoded[index] { return value }
        if inProgress[index] {
            throw Failure(offset: referencedAt, found: "a reference back to object \(index), which contains it", expected: "a plist without reference cycles")
        }
        let start = try objectOffset(index)
        let marker = bytes[start]
        let value: SaveValue
        var size = 1
        switch marker >> 4 {
        case 0xA:
            guard depth < options.maxDepth else { throw tooDeep(start) }
            let (count, body) = try lengthAndBody(start)
            try needReferences(body, count)
            inProgress[index] = true
            var items: [SaveValue] = []
            items.reserveCapacity(count)
            for position in 0..<count {
                let referenceOffset = body + position * referenceSize
                let child = try reference(at: referenceOffset)
                items.append(try object(child, depth: depth + 1, referencedAt: referenceOffset))
                size += expandedSize[child]
            }
            inProgress[index] = false
            value = .array(items)
        case 0xD:
            guard depth < options.maxDepth else { throw tooDeep(start) }
            let (count, body) = try lengthAndBody(start)
            let (doubled, overflow) = count.multipliedReportingOverflow(by: 2)
            guard !overflow else { throw Failure(offset: start, found: "a dictionary of \(count) entries", expected: "a count that fits the file") }
            try needReferences(body, doubled)
            inProgress[index] = true
            var entries = OrderedDictionary<String, SaveValue>(minimumCapacity: count)
            for position in 0..<count {
                let keyOffset = body + position * referenceSize
                let keyIndex = try reference(at: keyOffset)
                let keyStart = try objectOffset(keyIndex)
                guard bytes[keyStart] >> 4 == 0x5 || bytes[keyStart] >> 4 == 0x6 else {
                    throw Failure(offset: keyStart, found: "a dictionary key of marker 0x\(hex(bytes[keyStart], digits: 2))", expected: "a string key (0x5n or 0x6n)")
                }
                let key = try string(at: keyStart)
                let valueOffset = body + (count + position) * referenceSize
                let child = try reference(at: valueOffset)
                let item = try object(child, depth: depth + 1, referencedAt: valueOffset)
                if let earlier = entries.index(forKey: key) {
                    if KeyIndex.isAnotherSpelling(key, of: entries.keys[earlier]) {
                        let (found, expected) = KeyIndex.anotherSpelling(key, of: entries.keys[earlier])
                        throw Failure(offset: keyOffset, found: found, expected: expected)
                    }
                    if options.duplicateKeys == .reject {
                        throw Failure(offset: keyOffset, found: "the key \"\(key)\" a second time", expected: "each key once in a dictionary")
                    }
                    entries.values[earlier] = item
                } else {
                    entries[key] = item
                }
                size += 1 + expandedSize[child]
            }
            inProgress[index] = false
            value = .dictionary(entries)
        default:
            value = try scalar(at: start)
        }
        guard size <= options.maxExpandedValues else { throw expandedTooFar(start) }
        decoded[index] = value
        expandedSize[index] = size
        return value
    }

    /// A non-container object: every marker but arrays (0xA) and dictionaries (0xD).
    func scalar(at start: Int) throws(Failure) -> SaveValue {
        let marker = bytes[start]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default:
                throw Failure(offset: start, found: "the marker 0x\(hex(marker, digits: 2))", expected: "an object marker (0x08 false, 0x09 true, 0x1n integer, …)")
            }
        case 0x1: return try integer(at: start).value
        case 0x2:
            let length = 1 << Int(marker & 0x0F)
            guard length == 4 || length == 8 else {
                throw Failure(offset: start, found: "a \(length)-byte real", expected: "a 4- or 8-byte real")
            }
            try need(start + 1, length)
            let bits = readUInt64(at: start + 1, size: length)
            return .real(length == 4 ? Double(Float(bitPattern: UInt32(bits))) : Double(bitPattern: bits))
        case 0x3:
            guard marker == 0x33 else {
                throw Failure(offset: start, found: "the marker 0x\(hex(marker, digits: 2))", expected: "0x33 for a date")
            }
            try need(start + 1, 8)
            let seconds = Double(bitPattern: readUInt64(at: start + 1, size: 8))
            guard seconds.isFinite else {
                throw Failure(offset: start, found: "a date that is not a finite number", expected: "seconds since 2001-01-01")
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 0x4:
            let (count, body) = try lengthAndBody(start)
            try need(body, count)
            return .data(Data(UnsafeBufferPointer(rebasing: bytes[body..<(body + count)])))
        case 0x5, 0x6:
            return .string(try string(at: start))
        case 0x8:
            let length = Int(marker & 0x0F) + 1
            try need(start + 1, length)
            return .uid(readUInt64(at: start + 1, size: length))
        default:
            throw Failure(
                offset: start, found: "the marker 0x\(hex(marker, digits: 2))",
                expected: "an object marker of a plist (sets, 0xCn, and other reserved markers are not written by any plist writer)")
        }
    }

    private func tooDeep(_ offset: Int) -> Failure {
        Failure(offset: offset, found: "nesting deeper than \(options.maxDepth) levels", expected: "a document nested at most \(options.maxDepth) deep", isLimit: true)
    }

    @inline(__always)
    func objectOffset(_ index: Int) throws(Failure) -> Int {
        let entry = offsetTableStart + index * offsetSize
        let offset = readUInt64(at: entry, size: offsetSize)
        guard offset >= 8, offset < UInt64(offsetTableStart) else {
            throw Failure(offset: entry, found: "object \(index) at byte \(offset)", expected: "an object between byte 8 and the offset table at byte \(offsetTableStart)")
        }
        return Int(offset)
    }

    @inline(__always)
    func reference(at offset: Int) throws(Failure) -> Int {
        let value = readUInt64(at: offset, size: referenceSize)
        guard value < UInt64(objectCount) else {
            throw Failure(offset: offset, found: "a reference to object \(value)", expected: "a reference below \(objectCount), the number of objects")
        }
        return Int(value)
    }

    private func integer(at start: Int) throws(Failure) -> (value: SaveValue, end: Int) {
        let marker = bytes[start]
        let length = 1 << Int(marker & 0x0F)
        guard length <= 16 else {
            throw Failure(offset: start, found: "a \(length)-byte integer", expected: "an integer of 1, 2, 4, 8 or 16 bytes")
        }
        try need(start + 1, length)
        switch length {
        case 1, 2, 4:
            return (.integer(Int64(readUInt64(at: start + 1, size: length))), start + 1 + length)
        case 8:
            return (.integer(Int64(bitPattern: readUInt64(at: start + 1, size: 8))), start + 9)
        default:
            // 16 bytes, signed: what writers use for integers above Int64.max.
            let high = readUInt64(at: start + 1, size: 8)
            let low = readUInt64(at: start + 9, size: 8)
            if high == 0 { return (.int(low), start + 17) }
            if high == UInt64.max && low >= UInt64(1) << 63 { return (.integer(Int64(bitPattern: low)), start + 17) }
            throw Failure(offset: start, found: "a 128-bit integer outside the 64-bit range", expected: "an integer from -2^63 to 2^64-1")
        }
    }

    /// The element count of a data, string, array or dictionary object and where its body starts.
    @inline(__always)
    func lengthAndBody(_ start: Int) throws(Failure) -> (count: Int, body: Int) {
        let nibble = bytes[start] & 0x0F
        if nibble != 0x0F { return (Int(nibble), start + 1) }
        try need(start + 1, 1)
        guard bytes[start + 1] >> 4 == 0x1 else {
            throw Failure(offset: start + 1, found: "a length of marker 0x\(hex(bytes[start + 1], digits: 2))", expected: "an integer object (0x1n) giving the length")
        }
        let (length, end) = try integer(at: start + 1)
        guard case .integer(let count) = length, count >= 0, count <= Int64(bytes.count) else {
            throw Failure(offset: start + 1, found: "a length of \(length.compactText)", expected: "a length no larger than the file (\(bytes.count) bytes)")
        }
        return (Int(count), end)
    }

    /// The bytes of an ASCII string object (0x5n), checked to be ASCII.
    func asciiText(at start: Int) throws(Failure) -> UnsafeBufferPointer<UInt8> {
        let (count, body) = try lengthAndBody(start)
        try need(body, count)
        let slice = UnsafeBufferPointer(rebasing: bytes[body..<(body + count)])
        if let bad = slice.firstIndex(where: { $0 >= 0x80 }) {
            throw Failure(offset: body + bad, found: "the byte 0x\(hex(slice[bad], digits: 2)) in an ASCII string", expected: "ASCII (0x00–0x7F); other text is stored as UTF-16")
        }
        return slice
    }

    func string(at start: Int) throws(Failure) -> String {
        if bytes[start] >> 4 == 0x5 {
            return String(decoding: try asciiText(at: start), as: UTF8.self)
        }
        var text: [UInt8] = []
        try utf16Text(at: start, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// A UTF-16 string object (0x6n) as UTF-8 in `text`, refused when a surrogate is unpaired.
    /// Straight from the big-endian units: building a `[UInt16]` and a `String` from it was
    /// 5% of a conversion whose names are not ASCII.
    func utf16Text(at start: Int, into text: inout [UInt8]) throws(Failure) {
        let (count, body) = try lengthAndBody(start)
        let (byteCount, overflow) = count.multipliedReportingOverflow(by: 2)
        guard !overflow else { throw Failure(offset: start, found: "a string of \(count) UTF-16 units", expected: "a length that fits the file") }
        try need(body, byteCount)
        text.removeAll(keepingCapacity: true)
        text.reserveCapacity(count * 3)
        // The standard library's transcoder, over the big-endian units as they lie in the file:
        // it refuses exactly the unpaired surrogates that `String(validating:as:)` refuses.
        let units = (0..<count).lazy.map { [bytes] position in UInt16(bytes[body + 2 * position]) << 8 | UInt16(bytes[body + 2 * position + 1]) }
        let unpaired = transcode(units.makeIterator(), from: UTF16.self, to: UTF8.self, stoppingOnError: true) { text.append($0) }
        if unpaired { throw Failure(offset: body, found: "an unpaired UTF-16 surrogate", expected: "valid UTF-16 text") }
    }

    // MARK: - Bounds

    /// Checks that `count` bytes from `start` lie before the offset table.
    @inline(__always)
    func need(_ start: Int, _ count: Int) throws(Failure) {
        let (end, overflow) = start.addingReportingOverflow(count)
        guard !overflow, end <= offsetTableStart else {
            throw Failure(offset: start, found: "an object running past byte \(offsetTableStart), where the offset table starts", expected: "\(count) bytes of object data")
        }
    }

    @inline(__always)
    func needReferences(_ start: Int, _ count: Int) throws(Failure) {
        let (length, overflow) = count.multipliedReportingOverflow(by: referenceSize)
        guard !overflow else {
            throw Failure(offset: start, found: "\(count) references", expected: "a count that fits the file")
        }
        try need(start, length)
    }

    /// A big-endian unsigned integer of `size` bytes; callers have checked the bounds.
    @inline(__always)
    func readUInt64(at offset: Int, size: Int) -> UInt64 {
        let raw = UnsafeRawPointer(bytes.baseAddress! + offset)
        switch size {
        case 1: return UInt64(raw.load(as: UInt8.self))
        case 2: return UInt64(UInt16(bigEndian: raw.loadUnaligned(as: UInt16.self)))
        case 4: return UInt64(UInt32(bigEndian: raw.loadUnaligned(as: UInt32.self)))
        case 8: return UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))
        default:
            var value: UInt64 = 0
            for index in 0..<size { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
    }
}

// MARK: - Streaming

extension BinaryPlistReader {
    /// Walks the object graph and hands each value to `sink` as it goes, building no tree:
    /// memory stays at the size of the file. Shared objects are walked each time they are
    /// referenced (counted against ``DecodingOptions/maxExpandedValues``); a duplicate key is
    /// an error, so callers wanting "last wins" use ``parse(_:options:)``.
    static func stream<Sink: SaveValueSink>(_ input: [UInt8], options: DecodingOptions, into sink: inout Sink) throws {
        do {
            try input.withUnsafeBufferPointer { buffer in
                var reader = BinaryPlistReader(bytes: buffer, options: options)
                let (top, referencedAt) = try reader.prepare()
                reader.streamedTop = (top, referencedAt)
                var emitted = 0
                try reader.emit(top, depth: 0, referencedAt: referencedAt, emitted: &emitted, into: &sink)
            }
        } catch let error as Failure {
            if error.isLimit {
                throw CodecError.limitExceeded(codec: "bplist", at: .byte(error.offset), found: error.found, expected: error.expected)
            }
            throw CodecError.malformed(codec: "bplist", at: .byte(error.offset), found: error.found, expected: error.expected)
        }
    }

    mutating func emit<Sink: SaveValueSink>(
        _ index: Int, depth: Int, referencedAt: Int, emitted: inout Int, into sink: inout Sink
    ) throws {
        emitted += 1
        if emitted > options.maxExpandedValues { throw expandedTooFar(referencedAt) }
        // Without a container referenced twice, no more values come out than the file holds
        // references. Past that, shared containers multiply it: the whole expansion is counted
        // once, before gigabytes are written (203 bytes of nested shared arrays stood for 6 GB).
        // (Past, not at: a dictionary's keys are counted all at once.)
        if emitted > bytes.count / max(referenceSize, 1) + 1, let (top, referencedAt) = streamedTop {
            streamedTop = nil  // once
            try checkExpansion(of: top, referencedAt: referencedAt)
        }
        let start = try objectOffset(index)
        let kind = bytes[start] >> 4
        guard kind == 0xA || kind == 0xD else {
            if kind == 0x5 {
                try sink.utf8String(try asciiText(at: start))
            } else if kind == 0x6 {
                // Taken out of `self` for the call, so that the buffer stays uniquely referenced and is reused.
                var text = utf8Scratch
                utf8Scratch = []
                defer { utf8Scratch = text }
                try utf16Text(at: start, into: &text)
                try text.withUnsafeBufferPointer { try sink.utf8String($0) }
            } else {
                try sink.value(try scalar(at: start))
            }
            return
        }
        guard depth < options.maxDepth else { throw tooDeep(start) }
        if inProgress[index] {
            throw Failure(offset: referencedAt, found: "a reference back to object \(index), which contains it", expected: "a plist without reference cycles")
        }
        inProgress[index] = true
        defer { inProgress[index] = false }
        let (count, body) = try lengthAndBody(start)
        if kind == 0xA {
            try needReferences(body, count)
            try sink.beginArray(count: count)
            for position in 0..<count {
                let referenceOffset = body + position * referenceSize
                try emit(try reference(at: referenceOffset), depth: depth + 1, referencedAt: referenceOffset, emitted: &emitted, into: &sink)
            }
            try sink.endArray()
            return
        }
        let (doubled, overflow) = count.multipliedReportingOverflow(by: 2)
        guard !overflow else { throw Failure(offset: start, found: "a dictionary of \(count) entries", expected: "a count that fits the file") }
        try needReferences(body, doubled)
        // Keys count as values, as the tree reader counts them: both refuse the same files.
        emitted += count
        if emitted > options.maxExpandedValues { throw expandedTooFar(start) }
        // Keys first, so that a duplicate is refused before any of the dictionary is written.
        try checkKeys(count: count, body: body)
        try sink.beginDictionary(count: count)
        for position in 0..<count {
            let keyStart = try objectOffset(try reference(at: body + position * referenceSize))
            if bytes[keyStart] >> 4 == 0x5 {
                try sink.utf8Key(try asciiText(at: keyStart))
            } else {
                var text = utf8Scratch
                utf8Scratch = []
                defer { utf8Scratch = text }
                try utf16Text(at: keyStart, into: &text)
                try text.withUnsafeBufferPointer { try sink.utf8Key($0) }
            }
            let valueOffset = body + (count + position) * referenceSize
            try emit(try reference(at: valueOffset), depth: depth + 1, referencedAt: valueOffset, emitted: &emitted, into: &sink)
        }
        try sink.endDictionary()
    }

    /// Throws when the object at `top` expands to more than ``DecodingOptions/maxExpandedValues``
    /// values, each shared object counted as often as it is referenced, each walked once. A
    /// cycle or nesting too deep is left to the walk that emits, which names it.
    func checkExpansion(of top: Int, referencedAt: Int) throws(Failure) {
        var sizes = [Int](repeating: -1, count: objectCount)  // -1: not counted; -2: being counted
        func size(of index: Int, depth: Int) throws(Failure) -> Int {
            if sizes[index] >= 0 { return sizes[index] }
            if sizes[index] == -2 || depth >= options.maxDepth { return 1 }
            let start = try objectOffset(index)
            let kind = bytes[start] >> 4
            guard kind == 0xA || kind == 0xD else { return 1 }
            sizes[index] = -2
            let (count, body) = try lengthAndBody(start)
            let (references, overflow) = kind == 0xA ? (count, false) : count.multipliedReportingOverflow(by: 2)
            guard !overflow else { return 1 }
            try needReferences(body, references)
            var total = 1
            for position in 0..<references {
                let child = try reference(at: body + position * referenceSize)
                total += try size(of: child, depth: depth + 1)
                if total > options.maxExpandedValues { throw expandedTooFar(start) }
            }
            sizes[index] = total
            return total
        }
        _ = try size(of: top, depth: 0)
    }

    private func expandedTooFar(_ offset: Int) -> Failure {
        Failure(
            offset: offset, found: "shared objects that expand to more than \(options.maxExpandedValues) values",
            expected: "a plist that does not multiply itself through shared references", isLimit: true)
    }

    /// Checks that a dictionary's keys are strings, each there once. ASCII keys are compared as
    /// stored: the same object, or objects of the same bytes (writers store equal strings once,
    /// so this is what a duplicate looks like); small dictionaries of them need no strings built.
    private mutating func checkKeys(count: Int, body: Int) throws {
        let slot = count & 7
        let checked = checkedKeys[slot]
        if count == checked.count, memcmp(bytes.baseAddress! + body, bytes.baseAddress! + checked.body, count * referenceSize) == 0 { return }
        try checkEachKey(count: count, body: body)
        checkedKeys[slot] = (body, count)
    }

    private func checkEachKey(count: Int, body: Int) throws {
        // UTF-16 keys are compared as strings, as the tree reader compares them: "café" stored
        // composed and decomposed, or "abc" stored as UTF-16 and as ASCII, is one key twice.
        var anyUTF16 = false
        for position in 0..<count where try bytes[keyStart(at: body + position * referenceSize)] >> 4 == 0x6 {
            anyUTF16 = true
            break
        }
        if count > 16 || anyUTF16 {
            var seen = Set<String>(minimumCapacity: count)
            for position in 0..<count {
                let keyOffset = body + position * referenceSize
                let key = try string(at: try keyStart(at: keyOffset))
                let (inserted, earlier) = seen.insert(key)
                if !inserted {
                    if KeyIndex.isAnotherSpelling(key, of: earlier) {
                        let (found, expected) = KeyIndex.anotherSpelling(key, of: earlier)
                        throw Failure(offset: keyOffset, found: found, expected: expected)
                    }
                    throw duplicateKey(key, at: keyOffset)
                }
            }
            return
        }
        try withUnsafeTemporaryAllocation(of: (index: Int, start: Int).self, capacity: max(count, 1)) { keys in
            for position in 0..<count {
                let keyOffset = body + position * referenceSize
                let index = try reference(at: keyOffset)
                let start = try keyStart(at: keyOffset)
                for earlier in 0..<position where keys[earlier].index == index || sameStoredString(keys[earlier].start, start) {
                    throw duplicateKey(try string(at: start), at: keyOffset)
                }
                keys[position] = (index, start)
            }
        }
    }

    /// Where the key named at `referenceOffset` starts, checking that it is a string.
    private func keyStart(at referenceOffset: Int) throws(Failure) -> Int {
        let start = try objectOffset(try reference(at: referenceOffset))
        guard bytes[start] >> 4 == 0x5 || bytes[start] >> 4 == 0x6 else {
            throw Failure(offset: start, found: "a dictionary key of marker 0x\(hex(bytes[start], digits: 2))", expected: "a string key (0x5n or 0x6n)")
        }
        return start
    }

    private func duplicateKey(_ key: String, at offset: Int) -> Failure {
        Failure(
            offset: offset, found: "the key \"\(key)\" a second time",
            expected: "each key once in a dictionary")
    }

    /// Whether two string objects hold the same text: the same kind, length and bytes. Lengths
    /// are compared as numbers, not as stored: from 15 bytes on, the marker no longer holds them
    /// (a 15-byte key and a longer one that starts with it share their marker and first 15
    /// bytes), and a short length may also be written after the marker (`0x5F 0x10 0x01`).
    private func sameStoredString(_ first: Int, _ second: Int) -> Bool {
        guard bytes[first] >> 4 == bytes[second] >> 4, let (count, body) = try? lengthAndBody(first), let (otherCount, otherBody) = try? lengthAndBody(second),
            count == otherCount
        else { return false }
        let length = bytes[first] >> 4 == 0x6 ? count * 2 : count
        guard body + length <= offsetTableStart, otherBody + length <= offsetTableStart else { return false }
        return memcmp(bytes.baseAddress! + body, bytes.baseAddress! + otherBody, length) == 0
    }
}
