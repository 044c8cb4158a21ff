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
    private enum Object {
        case scalar(SaveValue)
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    /// Scalars are shared when equal code unit for code unit and bit for bit.
    private enum ScalarKey: Hashable {
        case null, bool(Bool), integer(Int64), unsignedInteger(UInt64), real(UInt64), date(UInt64), uid(UInt64)
        case string(ExactString), data(Data)
    }

    /// A string compared by its UTF-8 bytes: Swift's `==` treats canonically equivalent
    /// strings (NFC "é" and NFD "é") as equal, and sharing them would change the file.
    private struct ExactString: Hashable {
        var text: String
        static func == (lhs: ExactString, rhs: ExactString) -> Bool { lhs.text.utf8.elementsEqual(rhs.text.utf8) }
        func hash(into hasher: inout Hasher) {
            var copy = text
            copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    private var objects: [Object] = []
    private var sharedScalars: [ScalarKey: Int] = [:]
    /// Containers by their children's object numbers: equal children get equal numbers, so
    /// equal containers have equal keys.
    private var sharedContainers: [ContainerKey: Int] = [:]

    private enum ContainerKey: Hashable {
        case array([Int])
        case dictionary([Int], [Int])
    }
    private let maxDepth: Int

    init(maxDepth: Int) { self.maxDepth = maxDepth }

    static func encode(_ value: SaveValue, maxDepth: Int) throws(CodecError) -> [UInt8] {
        var writer = BinaryPlistWriter(maxDepth: maxDepth)
        var path: [String] = []
        _ = try writer.flatten(value, depth: 0, path: &path)
        return writer.serialize()
    }

    // MARK: - Numbering

    private mutating func flatten(_ value: SaveValue, depth: Int, path: inout [String]) throws(CodecError) -> Int {
        let key: ScalarKey
        switch value {
        case .array(let items):
            try checkDepth(depth, path)
            let index = objects.count
            objects.append(.array([]))
            var references: [Int] = []
            references.reserveCapacity(items.count)
            for (position, item) in items.enumerated() {
                path.append(String(position))
                references.append(try flatten(item, depth: depth + 1, path: &path))
                path.removeLast()
            }
            return share(.array(references), key: .array(references), placeholder: index)
        case .dictionary(let entries):
            try checkDepth(depth, path)
            let index = objects.count
            objects.append(.array([]))
            var keys: [Int] = []
            keys.reserveCapacity(entries.count)
            for entryKey in entries.keys { keys.append(try flatten(.string(entryKey), depth: depth + 1, path: &path)) }
            var values: [Int] = []
            values.reserveCapacity(entries.count)
            for (entryKey, item) in entries {
                path.append(entryKey)
                values.append(try flatten(item, depth: depth + 1, path: &path))
                path.removeLast()
            }
            return share(.dictionary(keys: keys, values: values), key: .dictionary(keys, values), placeholder: index)
        case .null:
            throw .unrepresentable(codec: "bplist", at: JSONPointer(tokens: path), found: "null", expected: "a value (plist has no null)")
        case .bool(let flag): key = .bool(flag)
        case .integer(let number): key = .integer(number)
        case .unsignedInteger(let number): key = .unsignedInteger(number)
        case .real(let number): key = .real(number.bitPattern)
        case .date(let date): key = .date(date.timeIntervalSinceReferenceDate.bitPattern)
        case .uid(let number): key = .uid(number)
        case .string(let text): key = .string(ExactString(text: text))
        case .data(let bytes): key = .data(bytes)
        }
        if let shared = sharedScalars[key] { return shared }
        let index = objects.count
        objects.append(.scalar(value))
        sharedScalars[key] = index
        return index
    }

    /// Keeps a container at its placeholder, or drops the placeholder for an equal container
    /// already numbered. A duplicate's children were all duplicates too, so its placeholder is
    /// the last object and removing it renumbers nothing.
    private mutating func share(_ object: Object, key: ContainerKey, placeholder index: Int) -> Int {
        if let existing = sharedContainers[key], objects.count == index + 1 {
            objects.removeLast()
            return existing
        }
        objects[index] = object
        sharedContainers[key] = index
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

    private func serialize() -> [UInt8] {
        let referenceSize = Self.byteWidth(UInt64(objects.count))
        var output: [UInt8] = Array("bplist00".utf8)
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        for object in objects {
            offsets.append(output.count)
            switch object {
            case .scalar(let value):
                Self.writeScalar(value, to: &output)
            case .array(let references):
                Self.writeHeader(0xA0, count: references.count, to: &output)
                for reference in references { Self.writeUInt(UInt64(reference), width: referenceSize, to: &output) }
            case .dictionary(let keys, let values):
                Self.writeHeader(0xD0, count: keys.count, to: &output)
                for reference in keys { Self.writeUInt(UInt64(reference), width: referenceSize, to: &output) }
                for reference in values { Self.writeUInt(UInt64(reference), width: referenceSize, to: &output) }
            }
        }
        let tableStart = output.count
        let offsetSize = Self.byteWidth(UInt64(tableStart))
        for offset in offsets { Self.writeUInt(UInt64(offset), width: offsetSize, to: &output) }
        output.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        Self.writeUInt(UInt64(objects.count), width: 8, to: &output)
        Self.writeUInt(0, width: 8, to: &output)  // the top object is always the first
        Self.writeUInt(UInt64(tableStart), width: 8, to: &output)
        return output
    }

    private static func writeScalar(_ value: SaveValue, to output: inout [UInt8]) {
        switch value {
        case .bool(let flag):
            output.append(flag ? 0x09 : 0x08)
        case .integer(let number):
            if number < 0 {
                output.append(0x13)
                writeUInt(UInt64(bitPattern: number), width: 8, to: &output)
            } else {
                writeUnsigned(UInt64(number), to: &output)
            }
        case .unsignedInteger(let number):
            writeUnsigned(number, to: &output)
        case .real(let number):
            output.append(0x23)
            writeUInt(number.bitPattern, width: 8, to: &output)
        case .date(let date):
            output.append(0x33)
            writeUInt(date.timeIntervalSinceReferenceDate.bitPattern, width: 8, to: &output)
        case .data(let bytes):
            writeHeader(0x40, count: bytes.count, to: &output)
            output.append(contentsOf: bytes)
        case .string(let text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                writeHeader(0x50, count: text.utf8.count, to: &output)
                output.append(contentsOf: text.utf8)
            } else {
                writeHeader(0x60, count: text.utf16.count, to: &output)
                for unit in text.utf16 {
                    output.append(UInt8(unit >> 8))
                    output.append(UInt8(unit & 0xFF))
                }
            }
        case .uid(let number):
            let width = byteWidth(number)
            output.append(0x80 | UInt8(width - 1))
            writeUInt(number, width: width, to: &output)
        case .null, .array, .dictionary:
            preconditionFailure("not a scalar")  // flatten() never stores these as scalars
        }
    }

    /// Non-negative integers in the smallest of 1, 2, 4 or 8 bytes; above Int64.max, 16 bytes.
    private static func writeUnsigned(_ number: UInt64, to output: inout [UInt8]) {
        switch number {
        case ..<(1 << 8): output.append(0x10); writeUInt(number, width: 1, to: &output)
        case ..<(1 << 16): output.append(0x11); writeUInt(number, width: 2, to: &output)
        case ..<(1 << 32): output.append(0x12); writeUInt(number, width: 4, to: &output)
        case ...UInt64(Int64.max): output.append(0x13); writeUInt(number, width: 8, to: &output)
        default:
            output.append(0x14)
            writeUInt(0, width: 8, to: &output)
            writeUInt(number, width: 8, to: &output)
        }
    }

    private static func writeHeader(_ marker: UInt8, count: Int, to output: inout [UInt8]) {
        if count < 15 {
            output.append(marker | UInt8(count))
        } else {
            output.append(marker | 0x0F)
            writeUnsigned(UInt64(count), to: &output)
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
    private static func writeUInt(_ number: UInt64, width: Int, to output: inout [UInt8]) {
        var shift = (width - 1) * 8
        while shift >= 0 {
            output.append(UInt8(truncatingIfNeeded: number >> UInt64(shift)))
            shift -= 8
        }
    }
}
