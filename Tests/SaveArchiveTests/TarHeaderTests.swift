import Foundation
import SaveKit
import Testing

@testable import SaveArchive

/// The ustar headers written by hand are libarchive's, byte for byte: each generated entry's
/// header is compared with the one libarchive's pax writer makes, wherever ours makes one (and
/// the entries it leaves to libarchive are counted, so that neither side goes untested).
@Suite("Tar headers")
struct TarHeaderTests {
    @Test func plainHeadersAreLibarchivesBytes() throws {
        // From a seeded generator, so that a failure can be run again.
        var state: UInt64 = 0x7A2
        func pick(_ count: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % count
        }
        let segments = ["a", "save.json", "Library", "Preferences", "com.example.blocks.plist", "x y", "a\tb", "\u{7F}", "Zoë", "玩家", "-", ".hidden"]
        func path(bytes: Int? = nil) -> String {
            if let bytes { return String(repeating: "p", count: max(bytes - 2, 1)) + "/z" }
            return (0...pick(4)).map { _ in segments[pick(segments.count)] }.joined(separator: "/")
        }
        let lengths = [1, 2, 98, 99, 100, 101, 102, 155, 200, 256]
        let times: [Int64] = [0, 1, 1_700_000_000, 0x7FFF_FFFE, 0x7FFF_FFFF, (1 << 33) - 1, 1 << 33, -1, 4_102_444_800]
        let sizes: [Int64] = [0, 1, 511, 512, 513, 1 << 20, (1 << 33) - 1, 1 << 33]
        var (ours, libarchives) = (0, 0)
        for _ in 0..<8000 {
            let name = pick(3) == 0 ? path(bytes: lengths[pick(lengths.count)]) : path()
            let kind: ArchiveEntryInfo.Kind = switch pick(4) {
            case 0: .directory
            case 1: .symbolicLink(target: pick(2) == 0 ? path() : path(bytes: lengths[pick(lengths.count)]))
            case 2: .hardLink(target: path())
            default: .file
            }
            var info = ArchiveEntryInfo(path: name, kind: kind, size: kind == .file ? sizes[pick(sizes.count)] : nil, permissions: [0o644, 0o755, 0o4750, 0o1777, 0o600, 0][pick(6)])
            switch pick(3) {
            case 0: info.timestamp = Timestamp(seconds: times[pick(times.count)], nanoseconds: Int32(pick(1_000_000_000)))
            case 1: info.modified = Date(timeIntervalSince1970: Double(times[pick(times.count)]) + Double(pick(1000)) / 1000)
            default: break
            }
            if pick(10) == 0 { info.xattrs["user.note"] = Array("x".utf8) }
            guard let hand = TarHeader.ustar(for: info) else {
                libarchives += 1
                continue
            }
            ours += 1
            let expected = try ArchiveWriter.tarHeader(for: info, archive: "oracle")
            #expect(hand == expected, "\(info)")
            if hand != expected { break }
        }
        // Both ways are taken often.
        #expect(ours > 1800 && libarchives > 1800, "\(ours) by hand, \(libarchives) by libarchive")
    }

    /// A tar written with both kinds of header reads back as it was written: GNU tar lists
    /// every entry with its size, and the data follow their headers.
    @Test func anArchiveOfBothKindsReadsBack() throws {
        let root = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("both.tar").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(descriptor >= 0)
        let long = String(repeating: "d", count: 120) + "/long.json"
        let entries: [(ArchiveEntryInfo, [UInt8])] = [
            (.file("plain.json", size: 3, modified: Date(timeIntervalSince1970: 1_700_000_000)), Array("{}\n".utf8)),
            (ArchiveEntryInfo(path: "dir", kind: .directory, permissions: 0o750), []),
            (.file("Zoë.json", size: 513, permissions: 0o600), [UInt8](repeating: 0x41, count: 513)),
            (.file(long, size: 1), [0x42]),
            (ArchiveEntryInfo(path: "link", kind: .symbolicLink(target: "plain.json"), permissions: 0o777), []),
        ]
        do {
            let writer = try ArchiveWriter(fileDescriptor: descriptor, name: path, format: .tar(.none))
            for (info, data) in entries {
                try writer.begin(info)
                try writer.write(data)
            }
            try writer.close()
        }
        close(descriptor)
        let reader = try ArchiveReader(path: path)
        var read: [(String, [UInt8])] = []
        while let entry = try reader.next() {
            read.append((entry.path, try reader.readEntry(limit: 1 << 20) ?? []))
        }
        #expect(read.map(\.0) == entries.map(\.0.path))
        #expect(read.map(\.1) == entries.map(\.1))
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size.map { $0 % 512 } == 0)
    }

    /// Data past the size a header declared would be read as the next header: refused.
    @Test func moreDataThanDeclaredIsRefused() throws {
        let writer = try ArchiveWriter(output: ArchiveOutput(descriptor: open("/dev/null", O_WRONLY)), name: "x.tar", format: .tar(.none))
        try writer.begin(.file("a", size: 2))
        #expect(throws: ArchiveError.self) { try writer.write([1, 2, 3]) }
    }
}
