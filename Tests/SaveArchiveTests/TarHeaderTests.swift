import Foundation
import SaveKit
import Testing

@testable import SaveArchive

/// The tar headers written by hand are libarchive's, byte for byte: each generated entry's
/// header is compared with the one a fresh libarchive pax writer makes, wherever ours makes
/// one; the entries left to libarchive are compared as the one writer kept for an archive makes
/// them (described without their data, the size put in after) with a fresh writer's.
@Suite("Tar headers")
struct TarHeaderTests {
    /// Generated entries, from a seeded generator so that a failure can be run again.
    struct Entries: Sequence, IteratorProtocol {
        var state: UInt64 = 0x7A2
        var left: Int
        init(count: Int) { left = count }

        mutating func pick(_ count: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % count
        }

        static let segments = ["a", "save.json", "Library", "Preferences", "com.example.blocks.plist", "x y", "a\tb", "\u{7F}", "Zoë", "玩家", "-", ".hidden"]
        static let lengths = [1, 2, 3, 98, 99, 100, 101, 102, 155, 200, 256]
        static let times: [Int64] = [0, 1, 1_700_000_000, 0x7FFF_FFFE, 0x7FFF_FFFF, (1 << 33) - 1, 1 << 33, -1, 4_102_444_800]
        static let sizes: [Int64] = [0, 1, 511, 512, 513, 1 << 20, (1 << 33) - 1, 1 << 33, 1 << 40]

        mutating func path(bytes: Int? = nil) -> String {
            if let bytes { return bytes < 3 ? String(repeating: "q", count: bytes) : String(repeating: "p", count: bytes - 2) + "/z" }
            return (0...pick(4)).map { _ in Self.segments[pick(Self.segments.count)] }.joined(separator: "/")
        }

        mutating func next() -> ArchiveEntryInfo? {
            guard left > 0 else { return nil }
            left -= 1
            let name = pick(3) == 0 ? path(bytes: Self.lengths[pick(Self.lengths.count)]) : path()
            let kind: ArchiveEntryInfo.Kind = switch pick(4) {
            case 0: .directory
            case 1: .symbolicLink(target: pick(2) == 0 ? path() : path(bytes: Self.lengths[pick(Self.lengths.count)]))
            case 2: .hardLink(target: path())
            default: .file
            }
            var info = ArchiveEntryInfo(
                path: name, kind: kind, size: kind == .file ? Self.sizes[pick(Self.sizes.count)] : nil, permissions: [0o644, 0o755, 0o4750, 0o1777, 0o600, 0][pick(6)])
            switch pick(3) {
            case 0: info.timestamp = Timestamp(seconds: Self.times[pick(Self.times.count)], nanoseconds: Int32(pick(1_000_000_000)))
            case 1: info.modified = Date(timeIntervalSince1970: Double(Self.times[pick(Self.times.count)]) + Double(pick(1000)) / 1000)
            default: break
            }
            if pick(10) == 0 { info.xattrs["user.note"] = Array("x".utf8) }
            return info
        }
    }

    /// libarchive's header for `info`, from a writer of its own.
    static func libarchives(_ info: ArchiveEntryInfo) throws -> [UInt8] {
        try ArchiveWriter.PaxHeaderWriter(archive: "oracle").header(for: info, describedWithItsSize: true)
    }

    @Test func plainHeadersAreLibarchivesBytes() throws {
        var (ours, libarchives) = (0, 0)
        for info in Entries(count: 8000) {
            guard let hand = TarHeader.ustar(for: info) else {
                libarchives += 1
                continue
            }
            ours += 1
            let expected = try Self.libarchives(info)
            #expect(hand == expected, "\(info)")
            if hand != expected { break }
        }
        // Both ways are taken often.
        #expect(ours > 1800 && libarchives > 1800, "\(ours) by hand, \(libarchives) by libarchive")
    }

    /// The one writer kept for an archive gives each entry the header a fresh writer gives it,
    /// one entry after another, whatever the sizes before.
    @Test func paxHeadersFromOneWriterAreAFreshWritersBytes() throws {
        let kept = try ArchiveWriter.PaxHeaderWriter(archive: "kept")
        var count = 0
        for info in Entries(count: 3000) where TarHeader.ustar(for: info) == nil {
            count += 1
            let header = try kept.header(for: info)
            let expected = try Self.libarchives(info)
            #expect(header == expected, "\(info)")
            if header != expected { break }
        }
        #expect(count > 1500)
        // Two edge cases the hand path leaves to libarchive: an empty name, and nanoseconds
        // that libarchive carries into the seconds.
        var odd = ArchiveEntryInfo(path: "a", kind: .file, size: 3)
        odd.timestamp = Timestamp(seconds: 5, nanoseconds: 1_500_000_000)
        #expect(TarHeader.ustar(for: odd) == nil)
        #expect(TarHeader.ustar(for: ArchiveEntryInfo(path: "", kind: .directory)) == nil)
    }

    /// A tar of both kinds of header is laid out record by record as tar reads it: each header
    /// (libarchive's bytes), the data, zeros to the next 512 bytes, and two empty records at the
    /// end; a second close adds nothing, and an entry begun after it is refused.
    @Test func anArchiveIsLaidOutRecordByRecord() throws {
        let root = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("both.tar").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let long = String(repeating: "d", count: 120) + "/long.json"
        var withXattr = ArchiveEntryInfo.file("noted.json", size: 700)
        withXattr.xattrs["user.origin"] = Array("phone".utf8)
        let entries: [(ArchiveEntryInfo, [UInt8])] = [
            (.file("plain.json", size: 3, modified: Date(timeIntervalSince1970: 1_700_000_000)), Array("{}\n".utf8)),
            (ArchiveEntryInfo(path: "dir", kind: .directory, permissions: 0o750), []),
            (.file("Zoë.json", size: 513, permissions: 0o600), [UInt8](repeating: 0x41, count: 513)),
            (.file(long, size: 1), [0x42]),
            (withXattr, [UInt8](repeating: 0x43, count: 700)),
            (ArchiveEntryInfo(path: "link", kind: .symbolicLink(target: "plain.json"), permissions: 0o777), []),
            (ArchiveEntryInfo(path: "again.json", kind: .hardLink(target: "plain.json")), []),
            (.file("empty.json", size: 0), []),
        ]
        let writer = try ArchiveWriter(fileDescriptor: descriptor, name: path, format: .tar(.none))
        for (info, data) in entries {
            try writer.begin(info)
            try writer.write(data)
        }
        try writer.close()
        try writer.close()
        #expect(throws: ArchiveError.self) { try writer.begin(.file("late.json", size: 0)) }

        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        var offset = 0
        for (info, data) in entries {
            let header = try Self.libarchives(info)
            #expect(Array(bytes[offset..<offset + header.count]) == header, "\(info.path)")
            offset += header.count
            #expect(Array(bytes[offset..<offset + data.count]) == data, "\(info.path)")
            offset += data.count
            let padding = (512 - data.count % 512) % 512
            #expect(bytes[offset..<offset + padding].allSatisfy { $0 == 0 }, "\(info.path)")
            offset += padding
        }
        #expect(bytes.count == offset + 1024 && bytes[offset...].allSatisfy { $0 == 0 }, "\(bytes.count) bytes, \(offset) before the end")

        // And libarchive reads it back as it was written (a hard link holds no data of its own).
        let reader = try ArchiveReader(path: path)
        var read: [(String, [UInt8])] = []
        while let entry = try reader.next() { read.append((entry.path, try reader.readEntry(limit: 1 << 20) ?? [])) }
        #expect(read.map(\.0) == entries.map(\.0.path))
        #expect(read.map(\.1) == entries.map(\.1))
    }

    /// A close that failed (a full disk) fails again when tried again, rather than reporting a
    /// cut archive whole; an empty name is refused (libarchive would read before it).
    @Test func aFailedArchiveStaysFailed() throws {
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let writer = try ArchiveWriter(fileDescriptor: descriptor, name: "full.tar", format: .tar(.none))
        #expect(throws: ArchiveError.self) { try writer.begin(ArchiveEntryInfo(path: "", kind: .directory)) }
        let fresh = try ArchiveWriter(fileDescriptor: descriptor, name: "full.tar", format: .tar(.none))
        try fresh.begin(.file("a.json", size: 2))
        try fresh.write([0x7B, 0x7D])
        #expect(throws: ArchiveError.self) { try fresh.close() }
        #expect(throws: ArchiveError.self) { try fresh.close() }
        #expect(throws: ArchiveError.self) { try fresh.begin(.file("b.json", size: 0)) }
    }

    /// Data past the size a header declared would be read as the next header: refused.
    @Test func moreDataThanDeclaredIsRefused() throws {
        let descriptor = open("/dev/null", O_WRONLY)
        defer { close(descriptor) }
        let writer = try ArchiveWriter(fileDescriptor: descriptor, name: "x.tar", format: .tar(.none))
        try writer.begin(.file("a", size: 2))
        #expect {
            try writer.write([1, 2, 3])
        } throws: { error in
            guard case .sizeMismatch(_, "a", 2, 3) = error as? ArchiveError else { return false }
            return true
        }
    }
}
