import Foundation

/// Writes `bplist00` binary property lists.
///
/// Objects are numbered in the order Python's `plistlib` (and, through it, Apple's writer)
/// numbers them — each container before its children, a dictionary's keys before its values —
/// and equal objects are written once and shared: scalars (strings, numbers, dates, data) as
/// plistlib and Apple do, and equal arrays and dictionaries too, which plistlib shares only when
/// they are one Python object. Files are as small as theirs or smaller, and byte-identical to
/// plistlib's for the same input whenever plistlib shares what is equal.
struct BinaryPlistWriter {
    /// One numbered object: a scalar (`start` indexes `scalars`) or a container (a run of
    /// `references`: an array's elements, or a dictionary's keys followed by its values).
    /// Twelve bytes an object, and no allocation per container.
    private struct Entry {
        enum Kind: UInt8 { case scalar, array, dictionary }
        var kind: Kind
        var start: UInt32
        var count: UInt32
    }

    /// A scalar's hash for sharing: strings by their UTF-8 bytes (Swift's `==` would merge
    /// NFC and NFD spellings), reals and dates by their bits.
    private static func scalarHash(_ value: SaveValue) -> UInt64 {
        switch value {
        case .string(var text): text.withUTF8 { FastHash.bytes(UnsafeRawBufferPointer($0), kind: 1) }
        case .data(let bytes): bytes.withUnsafeBytes { FastHash.bytes($0, kind: 2) }
        case .integer(let number): FastHash.word(UInt64(bitPattern: number), kind: 3)
        case .unsignedInteger(let number): FastHash.word(number, kind: 4)
        case .real(let number): FastHash.word(number.bitPattern, kind: 5)
        case .date(let date): FastHash.word(date.timeIntervalSinceReferenceDate.bitPattern, kind: 6)
        case .uid(let number): FastHash.word(number, kind: 7)
        case .bool(let flag): FastHash.word(flag ? 1 : 0, kind: 8)
        default: 0
        }
    }

    private static func sameScalar(_ lhs: SaveValue, _ rhs: SaveValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.data(let a), .data(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.unsignedInteger(let a), .unsignedInteger(let b)): a == b
        case (.real(let a), .real(let b)): a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)): a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.uid(let a), .uid(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        default: false
        }
    }

    private var entries: [Entry] = []
    private var scalars: [SaveValue] = []
    private var references: [UInt32] = []
    /// The children of the containers being numbered, innermost last.
    private var pending: [UInt32] = []
    private var sharedScalars = IndexTable()
    private var sharedContainers = IndexTable()
    private let maxDepth: Int

    init(maxDepth: Int) { self.maxDepth = maxDepth }

    static func encode(_ value: SaveValue, maxDepth: Int) throws -> [UInt8] {
        var output = ByteArrayOutput()
        try write(value, maxDepth: maxDepth, to: &output)
        return output.bytes
    }

    /// Numbers every object, then writes the file through `output` in chunks.
    static func write<Output: ByteOutput>(_ value: SaveValue, maxDepth: Int, to output: inout Output) throws {
        var writer = BinaryPlistWriter(maxDepth: maxDepth)
        var path: [String] = []
        _ = try writer.flatten(value, depth: 0, path: &path)
        writer.sharedScalars = IndexTable()  // no longer needed: free them before writing
        writer.sharedContainers = IndexTable()
        var text = ChunkedBuffer(output: output)
        try writer.serialize(into: &text)
        output = text.output
    }

    // MARK: - Numbering

    private mutating func nextIndex(_ path: [String]) throws(CodecError) -> UInt32 {
        guard entries.count < Int(UInt32.max), references.count < Int(UInt32.max) - 1 << 20 else {
            throw .limitExceeded(codec: "bplist", at: .pointer(JSONPointer(tokens: path)), found: "more than 4 billion objects", expected: "a smaller document")
        }
        return UInt32(entries.count)
    }

    private mutating func flatten(_ value: SaveValue, depth: Int, path: inout [String]) throws(CodecError) -> UInt32 {
        switch value {
        case .array(let items):
            try checkDepth(depth, path)
            let index = try nextIndex(path)
            entries.append(Entry(kind: .array, start: 0, count: 0))  // numbered before its children
            let first = pending.count
            for (position, item) in items.enumerated() {
                path.append(String(position))
                let child = try flatten(item, depth: depth + 1, path: &path)
                pending.append(child)
                path.removeLast()
            }
            return share(.array, count: items.count, from: first, placeholder: index)
        case .dictionary(let entriesOfValue):
            try checkDepth(depth, path)
            let index = try nextIndex(path)
            entries.append(Entry(kind: .dictionary, start: 0, count: 0))
            let first = pending.count
            for entryKey in entriesOfValue.keys {
                let key = try flatten(.string(entryKey), depth: depth + 1, path: &path)
                pending.append(key)
            }
            for (entryKey, item) in entriesOfValue {
                path.append(entryKey)
                let child = try flatten(item, depth: depth + 1, path: &path)
                pending.append(child)
                path.removeLast()
            }
            return share(.dictionary, count: entriesOfValue.count, from: first, placeholder: index)
        case .null:
            throw .unrepresentable(codec: "bplist", at: JSONPointer(tokens: path), found: "null", expected: "a value (plist has no null)")
        default:
            let hash = Self.scalarHash(value)
            let found = sharedScalars.find(hash) { index in
                Self.sameScalar(scalars[Int(entries[Int(index)].start)], value)
            }
            if let shared = found { return shared }
            let index = try nextIndex(path)
            entries.append(Entry(kind: .scalar, start: UInt32(scalars.count), count: 0))
            scalars.append(value)
            sharedScalars.insert(hash, index)
            return index
        }
    }

    /// Keeps a container at its placeholder, or drops the placeholder for an equal container
    /// already numbered. A duplicate's children were all duplicates too, so its placeholder is
    /// the last object and removing it renumbers nothing.
    private mutating func share(_ kind: Entry.Kind, count: Int, from first: Int, placeholder index: UInt32) -> UInt32 {
        defer { pending.removeSubrange(first...) }
        let children = pending[first...]
        var hash = FastHash.word(UInt64(count), kind: kind == .dictionary ? 9 : 10)
        for reference in children { hash = FastHash.combine(hash, UInt64(reference)) }
        if entries.count == Int(index) + 1 {
            let existing = sharedContainers.find(hash) { candidate in
                let entry = entries[Int(candidate)]
                guard entry.kind == kind, Int(entry.count) == count else { return false }
                let start = Int(entry.start)
                return references[start..<(start + children.count)].elementsEqual(children)
            }
            if let existing {
                entries.removeLast()
                return existing
            }
        }
        entries[Int(index)] = Entry(kind: kind, start: UInt32(references.count), count: UInt32(count))
        references.append(contentsOf: children)
        sharedContainers.insert(hash, index)
        return index
    }

    private func checkDepth(_ depth: Int, _ path: [String]) throws(CodecError) {
        if depth >= maxDepth {
            throw .limitExceeded(
                codec: "bplist", at: .pointer(JSONPointer(tokens: path)), found: "nesting deeper than \(maxDepth) levels",
                expected: "a value nested at most \(maxDepth) deep")
        }
    }

    // MARK: - Bytes

    private func serialize<Output: ByteOutput>(into text: inout ChunkedBuffer<Output>) throws {
        let referenceSize = Self.byteWidth(UInt64(entries.count))
        text.append("bplist00")
        var offsets: [UInt64] = []
        offsets.reserveCapacity(entries.count)
        for entry in entries {
            // From the whole output, not the buffer: an object larger than the buffer (a long
            // data or reference list) is handed on while it is written.
            offsets.append(UInt64(text.position))
            let start = Int(entry.start)
            switch entry.kind {
            case .scalar:
                Self.writeScalar(scalars[start], to: &text)
            case .array, .dictionary:
                let count = Int(entry.count)
                Self.writeHeader(entry.kind == .array ? 0xA0 : 0xD0, count: count, to: &text)
                let total = entry.kind == .array ? count : 2 * count
                for reference in references[start..<(start + total)] { Self.writeUInt(UInt64(reference), width: referenceSize, to: &text) }
            }
            try text.flushIfFull()
        }
        let tableStart = UInt64(text.position)
        let offsetSize = Self.byteWidth(tableStart)
        for offset in offsets {
            Self.writeUInt(offset, width: offsetSize, to: &text)
            try text.flushIfFull()
        }
        for byte in [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)] as [UInt8] { text.append(byte) }
        Self.writeUInt(UInt64(entries.count), width: 8, to: &text)
        Self.writeUInt(0, width: 8, to: &text)  // the top object is always the first
        Self.writeUInt(tableStart, width: 8, to: &text)
        try text.flush()
    }

    private static func writeScalar<Output>(_ value: SaveValue, to text: inout ChunkedBuffer<Output>) {
        switch value {
        case .bool(let flag):
            text.append(flag ? 0x09 : 0x08)
        case .integer(let number):
            if number < 0 {
                text.append(0x13)
                writeUInt(UInt64(bitPattern: number), width: 8, to: &text)
            } else {
                writeUnsigned(UInt64(number), to: &text)
            }
        case .unsignedInteger(let number):
            writeUnsigned(number, to: &text)
        case .real(let number):
            text.append(0x23)
            writeUInt(number.bitPattern, width: 8, to: &text)
        case .date(let date):
            text.append(0x33)
            writeUInt(date.timeIntervalSinceReferenceDate.bitPattern, width: 8, to: &text)
        case .data(let bytes):
            writeHeader(0x40, count: bytes.count, to: &text)
            bytes.withUnsafeBytes { text.append($0.bindMemory(to: UInt8.self)) }
        case .string(var string):
            let isASCII = string.withUTF8 { utf8 in !utf8.contains(where: { $0 >= 0x80 }) }
            if isASCII {
                string.withUTF8 { utf8 in
                    writeHeader(0x50, count: utf8.count, to: &text)
                    text.append(utf8)
                }
            } else {
                writeHeader(0x60, count: string.utf16.count, to: &text)
                for unit in string.utf16 {
                    text.append(UInt8(unit >> 8))
                    text.append(UInt8(unit & 0xFF))
                }
            }
        case .uid(let number):
            let width = byteWidth(number)
            text.append(0x80 | UInt8(width - 1))
            writeUInt(number, width: width, to: &text)
        case .null, .array, .dictionary:
            preconditionFailure("not a scalar")  // flatten() never stores these as scalars
        }
    }

    /// Non-negative integers in the smallest of 1, 2, 4 or 8 bytes; above Int64.max, 16 bytes.
    private static func writeUnsigned<Output>(_ number: UInt64, to text: inout ChunkedBuffer<Output>) {
        switch number {
        case ..<(1 << 8): text.append(0x10); writeUInt(number, width: 1, to: &text)
        case ..<(1 << 16): text.append(0x11); writeUInt(number, width: 2, to: &text)
        case ..<(1 << 32): text.append(0x12); writeUInt(number, width: 4, to: &text)
        case ...UInt64(Int64.max): text.append(0x13); writeUInt(number, width: 8, to: &text)
        default:
            text.append(0x14)
            writeUInt(0, width: 8, to: &text)
            writeUInt(number, width: 8, to: &text)
        }
    }

    private static func writeHeader<Output>(_ marker: UInt8, count: Int, to text: inout ChunkedBuffer<Output>) {
        if count < 15 {
            text.append(marker | UInt8(count))
        } else {
            text.append(marker | 0x0F)
            writeUnsigned(UInt64(count), to: &text)
        }
    }

    private static func byteWidth(_ number: UInt64) -> Int {
        switch number {
        case ..<(1 << 8): 1
        case ..<(1 << 16): 2
        case ..<(1 << 32): 4
        default: 8
        }
    }

    @inline(__always)
    private static func writeUInt<Output>(_ number: UInt64, width: Int, to text: inout ChunkedBuffer<Output>) {
        var shift = (width - 1) * 8
        while shift >= 0 {
            text.append(UInt8(truncatingIfNeeded: number >> UInt64(shift)))
            shift -= 8
        }
    }
}

/// A fast keyed hash for the writer's sharing tables: hashing each string once here is far
/// cheaper than `Hasher` over its bytes at every lookup. The key is random per process, so
/// crafted input cannot aim for collisions it cannot see.
enum FastHash {
    private static let seed: UInt64 = UInt64.random(in: .min ... .max) | 1

    @inline(__always)
    static func combine(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let product = (hash ^ word).multipliedFullWidth(by: 0x9E37_79B9_7F4A_7C15 ^ seed)
        return product.high ^ product.low
    }

    static func word(_ value: UInt64, kind: UInt64) -> UInt64 {
        combine(combine(seed, kind), value)
    }

    static func bytes(_ buffer: UnsafeRawBufferPointer, kind: UInt64) -> UInt64 {
        var hash = combine(seed ^ UInt64(buffer.count), kind)
        var offset = 0
        while offset + 8 <= buffer.count {
            hash = combine(hash, buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < buffer.count {
            tail |= UInt64(buffer[offset]) << shift
            shift += 8
            offset += 1
        }
        return combine(hash, tail)
    }
}

/// A hash set of object numbers, the objects themselves kept elsewhere: 12 bytes a slot where a
/// `Dictionary` keyed by the objects would hold a second copy of every key (which, for a large
/// save, is hundreds of megabytes). Open addressing with linear probing.
struct IndexTable {
    private var hashes: [UInt64] = []
    private var indices: [UInt32] = []  // object number + 1; 0 marks an empty slot
    private var count = 0

    /// The object number stored under `hash` for which `matches` is true.
    func find(_ hash: UInt64, matches: (UInt32) -> Bool) -> UInt32? {
        guard !indices.isEmpty else { return nil }
        let mask = indices.count - 1
        var slot = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
        while indices[slot] != 0 {
            if hashes[slot] == hash && matches(indices[slot] - 1) { return indices[slot] - 1 }
            slot = (slot + 1) & mask
        }
        return nil
    }

    mutating func insert(_ hash: UInt64, _ index: UInt32) {
        if (count + 1) * 4 > indices.count * 3 { grow() }
        let mask = indices.count - 1
        var slot = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
        while indices[slot] != 0 { slot = (slot + 1) & mask }
        hashes[slot] = hash
        indices[slot] = index + 1
        count += 1
    }

    private mutating func grow() {
        let oldHashes = hashes
        let oldIndices = indices
        let capacity = max(1024, indices.count * 2)
        hashes = Array(repeating: 0, count: capacity)
        indices = Array(repeating: 0, count: capacity)
        count = 0
        for slot in 0..<oldIndices.count where oldIndices[slot] != 0 {
            insert(oldHashes[slot], oldIndices[slot] - 1)
        }
    }
}
