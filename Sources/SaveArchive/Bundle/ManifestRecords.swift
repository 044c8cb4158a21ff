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
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: [0, 0, 0, 0])  // the length, set below
        var flags: UInt8 = 0
        if file.sparse { flags |= Flag.sparse }
        if file.target != nil { flags |= Flag.target }
        if file.owner != nil { flags |= Flag.owner }
        if file.codec != nil { flags |= Flag.codec }
        if file.kind != nil { flags |= Flag.kind }
        if file.version != nil { flags |= Flag.version }
        scratch.append(UInt8(Self.types.firstIndex(of: file.type)!))
        scratch.append(flags)
        put(file.mode)
        put(file.size)
        put(file.modified.seconds)
        put(file.modified.nanoseconds)
        put(file.owner?.uid ?? 0)
        put(file.owner?.gid ?? 0)
        put(Int64(file.version ?? 0))
        put(file.path.utf8)
        put(file.sha256.utf8)
        put((file.target ?? "").utf8)
        put((file.codec ?? "").utf8)
        put((file.kind ?? "").utf8)
        put(UInt32(file.xattrs.count))
        for (name, value) in file.xattrs {
            put(name.utf8)
            put(value)
        }
        withUnsafeBytes(of: UInt32(scratch.count - 4).littleEndian) { length in
            for index in 0..<4 { scratch[index] = length[index] }
        }
        try spool.append(contentsOf: scratch)
        count += 1
    }

    private func put<Integer: FixedWidthInteger>(_ value: Integer) {
        withUnsafeBytes(of: value.littleEndian) { scratch.append(contentsOf: $0) }
    }

    private func put<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        put(UInt32(bytes.count))
        scratch.append(contentsOf: bytes)
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
            let (target, codec, kind) = (text(), text(), text())
            if flags & Flag.target != 0 { file.target = target }
            if flags & Flag.owner != 0 { file.owner = owner }
            if flags & Flag.codec != 0 { file.codec = codec }
            if flags & Flag.kind != 0 { file.kind = kind }
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
