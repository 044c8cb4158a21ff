import Foundation
import OrderedCollections

/// Manifest entries, once checked (or just described), kept in a compact binary form in a
/// spool: how a manifest too large to hold is gone through again without decoding its JSON a
/// second time (a profile of a 10,000-file import put 8% of samples in that second decoding).
///
/// A record is its length (4 bytes) and then, little-endian: the type, which optional fields
/// are there, the mode, size, seconds, nanoseconds, owner, version, then path, checksum,
/// target, codec and kind as length and UTF-8 bytes, then the extended attributes. The records
/// live only as long as one import or export: the layout is no format anyone else reads.
final class ManifestRecords {
    private let spool = Spool()
    private var scratch: [UInt8] = []
    private(set) var count = 0

    private enum Flag {
        static let sparse: UInt8 = 1, target: UInt8 = 2, owner: UInt8 = 4, codec: UInt8 = 8, kind: UInt8 = 16, version: UInt8 = 32
    }

    private static let types: [BundleManifest.File.EntryType] = [.file, .directory, .symlink, .hardlink]

    func append(_ file: BundleManifest.File) throws {
        // Written through a value of its own, then put back: the class's property (or a local
        // captured by nested functions) is checked for exclusive access at every append.
        var record = RecordWriter(bytes: scratch)
        scratch = []
        defer { scratch = record.bytes }
        record.bytes.removeAll(keepingCapacity: true)
        record.put(UInt32(0))  // the length, set below
        var flags: UInt8 = 0
        if file.sparse { flags |= Flag.sparse }
        if file.target != nil { flags |= Flag.target }
        if file.owner != nil { flags |= Flag.owner }
        if file.codec != nil { flags |= Flag.codec }
        if file.kind != nil { flags |= Flag.kind }
        if file.version != nil { flags |= Flag.version }
        record.bytes.append(UInt8(Self.types.firstIndex(of: file.type)!))
        record.bytes.append(flags)
        record.put(file.mode)
        record.put(file.size)
        record.put(file.modified.seconds)
        record.put(file.modified.nanoseconds)
        record.put(file.owner?.uid ?? 0)
        record.put(file.owner?.gid ?? 0)
        record.put(Int64(file.version ?? 0))
        record.put(file.path)
        record.put(file.sha256)
        record.put(file.target ?? "")
        record.put(file.codec ?? "")
        record.put(file.kind ?? "")
        record.put(UInt32(file.xattrs.count))
        if !file.xattrs.isEmpty {
            for (name, value) in file.xattrs {
                record.put(name)
                record.put(UInt32(value.count))
                record.bytes.append(contentsOf: value)
            }
        }
        withUnsafeBytes(of: UInt32(record.bytes.count - 4).littleEndian) { length in
            for index in 0..<4 { record.bytes[index] = length[index] }
        }
        try spool.append(contentsOf: record.bytes)
        count += 1
    }

    private struct RecordWriter {
        var bytes: [UInt8]

        mutating func put<Integer: FixedWidthInteger>(_ value: Integer) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        /// A length, then the text's UTF-8 bytes.
        mutating func put(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                put(UInt32(utf8.count))
                bytes.append(contentsOf: utf8)
            }
        }
    }

    func makeIterator() -> Iterator { Iterator(spool: spool) }

    /// Reads the records back in order, through a window of the spool.
    struct Iterator {
        private let spool: Spool
        private var window: [UInt8] = []
        private var windowStart = 0
        private var offset = 0

        fileprivate init(spool: Spool) { self.spool = spool }

        mutating func next() throws -> BundleManifest.File? {
            guard offset < spool.count else { return nil }
            let length = Int(try bytes(4).withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
            let body = try bytes(length)
            return body.withUnsafeBytes { Self.file(from: $0) }
        }

        /// The next `count` bytes of the spool.
        private mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
            if offset + count > windowStart + window.count {
                let size = max(count, 1 << 20)
                window = try spool.bytes(in: offset..<min(spool.count, offset + size))
                windowStart = offset
                guard window.count >= count else { throw BundleError.unreadable(path: "a temporary file", reason: "it ended early") }
            }
            defer { offset += count }
            return window[(offset - windowStart)..<(offset - windowStart + count)]
        }

        private static func file(from body: UnsafeRawBufferPointer) -> BundleManifest.File {
            var at = 0
            func integer<Integer: FixedWidthInteger>(_: Integer.Type) -> Integer {
                defer { at += MemoryLayout<Integer>.size }
                return Integer(littleEndian: body.loadUnaligned(fromByteOffset: at, as: Integer.self))
            }
            func bytes() -> UnsafeRawBufferPointer {
                let count = Int(integer(UInt32.self))
                defer { at += count }
                return UnsafeRawBufferPointer(rebasing: body[at..<at + count])
            }
            func text() -> String { String(decoding: bytes(), as: UTF8.self) }
            let type = ManifestRecords.types[Int(body[0])]
            let flags = body[1]
            at = 2
            let mode = integer(UInt16.self)
            let size = integer(Int64.self)
            let modified = Timestamp(seconds: integer(Int64.self), nanoseconds: integer(Int32.self))
            let owner = (uid: integer(UInt32.self), gid: integer(UInt32.self))
            let version = integer(Int64.self)
            var file = BundleManifest.File(path: text(), type: type, size: size, sha256: text(), mode: mode, modified: modified)
            // Strings made only for the members there are.
            let (target, codec, kind) = (bytes(), bytes(), bytes())
            if flags & Flag.target != 0 { file.target = String(decoding: target, as: UTF8.self) }
            if flags & Flag.owner != 0 { file.owner = owner }
            if flags & Flag.codec != 0 { file.codec = String(decoding: codec, as: UTF8.self) }
            if flags & Flag.kind != 0 { file.kind = String(decoding: kind, as: UTF8.self) }
            if flags & Flag.version != 0 { file.version = Int(version) }
            file.sparse = flags & Flag.sparse != 0
            let attributes = Int(integer(UInt32.self))
            if attributes > 0 {
                var xattrs: OrderedDictionary<String, [UInt8]> = [:]
                for _ in 0..<attributes {
                    let name = text()
                    xattrs[name] = Array(bytes())
                }
                file.xattrs = xattrs
            }
            return file
        }
    }
}
