import Foundation
import SaveKit
import Testing

@testable import SaveArchive

/// The tar reader of bundles reads what libarchive reads, entry for entry and byte for byte,
/// however the decompressed stream is cut into blocks; and what it refuses, it refuses with
/// the byte offset, never reading past a block it was given.
@Suite("Tar reader")
struct TarReaderTests {
    /// Hands a stream out in blocks of the sizes given (cycled), each a copy of its own that is
    /// overwritten and freed when the next is asked for: a reader that kept a pointer into a
    /// block it no longer holds would read garbage, and be caught.
    final class Blocks {
        let bytes: [UInt8]
        let sizes: [Int]
        var offset = 0, turn = 0
        var current: UnsafeMutableRawBufferPointer?
        var failure: String?

        init(_ bytes: [UInt8], sizes: [Int], failure: String? = nil) { (self.bytes, self.sizes, self.failure) = (bytes, sizes, failure) }
        deinit { release() }

        func release() {
            if let current {
                current.initializeMemory(as: UInt8.self, repeating: 0xAA)
                current.deallocate()
            }
            current = nil
        }

        func next() -> UnsafeRawBufferPointer? {
            release()
            guard offset < bytes.count else { return nil }
            let count = min(sizes[turn % sizes.count], bytes.count - offset)
            turn += 1
            let block = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
            bytes[offset..<offset + count].withUnsafeBytes { block.copyMemory(from: $0) }
            offset += count
            current = block
            return UnsafeRawBufferPointer(block)
        }

        var reader: TarReader {
            TarReader(archive: "test.tar", nextBlock: next, failure: { [unowned self] in offset >= bytes.count ? failure : nil })
        }
    }

    struct Entry: Equatable, CustomStringConvertible {
        var exactPath: String
        var path: String
        var kind: ArchiveEntryInfo.Kind
        var size: Int64
        var permissions: UInt16
        var data: [UInt8]
        var description: String { "\(ExactFileName.printable(exactPath)) \(kind) \(size) 0o\(String(permissions, radix: 8))" }
    }

    static func readWithTarReader(_ bytes: [UInt8], sizes: [Int]) throws -> [Entry] {
        let blocks = Blocks(bytes, sizes: sizes)
        let reader = blocks.reader
        var entries: [Entry] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 777, alignment: 1)  // an odd size on purpose
        defer { buffer.deallocate() }
        while let info = try reader.next() {
            var data: [UInt8] = []
            // Every other entry is left unread, to be skipped by the next header's read; of the
            // others, half are copied out and half borrowed where the blocks hold them.
            if entries.count % 4 == 0 {
                while case let count = try reader.read(into: buffer), count > 0 { data += buffer[..<count] }
            } else if entries.count % 4 == 2 {
                while case let chunk = try reader.borrowChunk(), !chunk.isEmpty { data += chunk }
            }
            entries.append(Entry(exactPath: info.exactPath, path: info.path, kind: info.kind, size: info.size ?? 0, permissions: info.permissions, data: data))
        }
        return entries
    }

    static func readWithLibarchive(_ bytes: [UInt8]) throws -> [Entry] {
        let reader = try ArchiveReader(bytes: bytes, name: "test.tar", reading: .bundle)
        var entries: [Entry] = []
        while let info = try reader.next() {
            let data = entries.count % 2 == 0 ? try reader.readEntry(limit: 1 << 24) ?? [] : []
            entries.append(Entry(exactPath: info.exactPath, path: info.path, kind: info.kind, size: info.size ?? 0, permissions: info.permissions, data: data))
        }
        return entries
    }

    /// A tar written by savetool's own writer (hand-made ustar headers and libarchive's pax ones).
    static func writtenBySavetool(_ entries: [(ArchiveEntryInfo, [UInt8])]) throws -> [UInt8] {
        let root = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("t.tar").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(descriptor) }
        let writer = try ArchiveWriter(fileDescriptor: descriptor, name: path, format: .tar(.none))
        for (info, data) in entries {
            try writer.begin(info)
            try writer.write(data)
        }
        try writer.close()
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Generated entries with small data of their own, and names of every sort: long ones that
    /// need pax records, prefixes, non-ASCII, and bytes that are not UTF-8.
    static func generatedEntries(count: Int) -> [(ArchiveEntryInfo, [UInt8])] {
        var generator = TarHeaderTests.Entries(count: count)
        var entries: [(ArchiveEntryInfo, [UInt8])] = []
        var index = 0
        while var info = generator.next() {
            index += 1
            if index % 37 == 0 { info.path = ExactFileName.string([0x66, 0xE9, 0x2F, 0x5A] + Array(String(index).utf8)) }
            var data: [UInt8] = []
            if info.kind == .file {
                let size = Int(info.size ?? 0) % 3000
                info.size = Int64(size)
                data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            }
            entries.append((info, data))
        }
        return entries
    }

    static let blockSizes: [[Int]] = [[1], [7, 505], [511], [512], [513], [4096], [1 << 20], [3, 1000, 17, 512, 9000]]

    @Test func archivesSavetoolWritesReadAsLibarchiveReadsThem() throws {
        let bytes = try Self.writtenBySavetool(Self.generatedEntries(count: 400))
        let expected = try Self.readWithLibarchive(bytes)
        #expect(expected.count == 400)
        #expect(expected.contains { $0.path.utf8.count > 100 } && expected.contains { $0.exactPath != $0.path })
        for sizes in Self.blockSizes {
            let read = try Self.readWithTarReader(bytes, sizes: sizes)
            #expect(read.count == expected.count, "blocks of \(sizes)")
            for (ours, theirs) in zip(read, expected) where ours != theirs {
                Issue.record("blocks of \(sizes): \(ours), libarchive read \(theirs)")
                break
            }
        }
    }

    /// GNU tar's three formats: GNU's long names (`L`, `K`), POSIX pax, and ustar's prefix.
    @Test(arguments: ["gnu", "pax", "ustar"])
    func archivesGNUTarWritesReadAsLibarchiveReadsThem(_ format: String) throws {
        let root = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let tree = root.appendingPathComponent("tree")
        // ustar holds at most 155 + 100 bytes of name (split at a slash) and 100 of link target.
        let deep = format == "ustar" ? String(repeating: "d", count: 90) : String(repeating: "d", count: 150) + "/" + String(repeating: "e", count: 150)
        let folder = tree.appendingPathComponent(deep)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let long = folder.appendingPathComponent(String(repeating: "f", count: format == "ustar" ? 90 : 120) + ".json")
        try Data("{\"round\": 2}\n".utf8).write(to: long)
        try Data(repeating: 0x5A, count: 5000).write(to: tree.appendingPathComponent("Zoë.bin"))
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("link").path, withDestinationPath: format == "ustar" ? "Zoë.bin" : deep + "/x")
        let linked = format == "ustar" ? tree.appendingPathComponent("Zoë.bin") : long
        #expect(link(linked.path, tree.appendingPathComponent("hard.json").path) == 0)
        let output = root.appendingPathComponent("t.tar").path
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tar.arguments = ["tar", "--format=\(format)", "-C", tree.path, "-cf", output, "."]
        try tar.run()
        tar.waitUntilExit()
        try #require(tar.terminationStatus == 0)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: output)))
        let expected = try Self.readWithLibarchive(bytes)
        #expect(expected.count == (format == "ustar" ? 6 : 7))  // ".", the folders, three files and a link
        for sizes in Self.blockSizes {
            #expect(try Self.readWithTarReader(bytes, sizes: sizes) == expected, "\(format), blocks of \(sizes)")
        }
    }

    /// Cut anywhere, an archive is read up to the cut and then refused with where it ends (or,
    /// cut between two entries, ends there, as tar reads it); never a crash or a hang.
    @Test func anArchiveCutAnywhereIsRefusedOrEndsBetweenEntries() throws {
        let entries = Self.generatedEntries(count: 12)
        let bytes = try Self.writtenBySavetool(entries)
        let whole = try Self.readWithTarReader(bytes, sizes: [600])
        var refused = 0
        for cut in stride(from: 1, to: bytes.count - 1024, by: 97) {
            do {
                let read = try Self.readWithTarReader(Array(bytes[..<cut]), sizes: [600])
                #expect(cut % 512 == 0 && read.count < whole.count && read == Array(whole.prefix(read.count)), "cut at \(cut)")
            } catch let error as ArchiveError {
                refused += 1
                #expect("\(error)".contains("the archive ends inside") || "\(error)".contains("after an extended header"), "cut at \(cut): \(error)")
            }
        }
        #expect(refused > 10)
    }

    /// A byte changed in a header makes its checksum fail (or leaves a header that still reads),
    /// and the refusal names the header's offset.
    @Test func aDamagedHeaderIsRefusedWithItsOffset() throws {
        let bytes = try Self.writtenBySavetool([(.file("a.json", size: 600), [UInt8](repeating: 1, count: 600)), (.file("b.json", size: 3), [1, 2, 3])])
        // The second header is at 512 + 1024 (the first's data padded to two blocks).
        for position in [1536, 1536 + 100, 1536 + 148, 1536 + 257, 1536 + 511] {
            var damaged = bytes
            damaged[position] ^= 0x55
            #expect {
                _ = try Self.readWithTarReader(damaged, sizes: [4096])
            } throws: { error in
                "\(error)".contains("at byte 1536 of the tar stream, after a.json")
            }
        }
    }

    @Test func whatABundleNeverHoldsIsRefusedByName() throws {
        func header(_ name: String, type: UInt8, size: Int, sizeField: [UInt8]? = nil) -> [UInt8] {
            var block = [UInt8](repeating: 0, count: 512)
            block.replaceSubrange(0..<name.utf8.count, with: Array(name.utf8))
            block.replaceSubrange(100..<108, with: Array("0000644\0".utf8))
            let size = sizeField ?? Array((String(repeating: "0", count: 11 - String(size, radix: 8).count) + String(size, radix: 8) + "\0").utf8)
            block.replaceSubrange(124..<136, with: size)
            block.replaceSubrange(136..<148, with: Array("00000000000\0".utf8))
            block[156] = type
            block.replaceSubrange(257..<265, with: Array("ustar\u{0}00".utf8))
            block.replaceSubrange(148..<156, with: [UInt8](repeating: 0x20, count: 8))
            let sum = block.reduce(0) { $0 + Int($1) }
            let checksum = String(sum, radix: 8)
            block.replaceSubrange(148..<156, with: Array((String(repeating: "0", count: 6 - checksum.count) + checksum + "\0 ").utf8))
            return block
        }
        func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: (512 - bytes.count % 512) % 512) }
        func pax(_ records: String) -> [UInt8] { header("PaxHeader", type: UInt8(ascii: "x"), size: records.utf8.count) + padded(Array(records.utf8)) }
        let end = [UInt8](repeating: 0, count: 1024)
        let sparse = "22 GNU.sparse.major=1\n22 GNU.sparse.minor=0\n"
        let cases: [(String, [UInt8], String)] = [
            ("sparse", pax(sparse) + header("s.bin", type: UInt8(ascii: "0"), size: 0) + end, "GNU's sparse format"),
            ("folder with data", header("dir", type: UInt8(ascii: "5"), size: 10) + padded([UInt8](repeating: 1, count: 10)) + end, "a directory entry with 10 bytes of data"),
            ("record length", pax("99 path=x\n") + header("a", type: UInt8(ascii: "0"), size: 0) + end, "whose length does not hold"),
            ("record key", pax("7 =abc\n") + header("a", type: UInt8(ascii: "0"), size: 0) + end, "without a key"),
            ("pax size", pax("11 size=1x\n") + header("a", type: UInt8(ascii: "0"), size: 0) + end, "a pax size that is not a decimal"),
            ("size field", header("a", type: UInt8(ascii: "0"), size: 0, sizeField: Array("0000000009a\0".utf8)) + end, "size field that is not an octal number"),
            ("negative size", header("a", type: UInt8(ascii: "0"), size: 0, sizeField: [0xFF] + [UInt8](repeating: 0xFF, count: 11)) + end, "a negative size"),
            ("huge pax", header("PaxHeader", type: UInt8(ascii: "x"), size: 0, sizeField: [0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]) + end, "expected at most"),
            ("pax at the end", pax("12 path=abc\n") + end, "ends after an extended header"),
            ("pax length past 2^63", pax("9999999999999999999 a=b\n") + header("a", type: UInt8(ascii: "0"), size: 0) + end, "whose length does not hold"),
            ("unknown type with data", header("s", type: UInt8(ascii: "S"), size: 3) + padded([1, 2, 3]) + end, "an entry of tar type 'S' with 3 bytes of data"),
            ("pax cut short", header("PaxHeader", type: UInt8(ascii: "x"), size: 600) + [UInt8](repeating: 0x31, count: 300), "inside a pax extended header"),
            ("not a header", header("a", type: UInt8(ascii: "0"), size: 0) + [UInt8](repeating: 0x41, count: 512) + end, "no ustar magic"),
        ]
        for (label, bytes, expected) in cases {
            for sizes in [[512], [1], [100_000]] {
                #expect {
                    _ = try Self.readWithTarReader(bytes, sizes: sizes)
                } throws: { error in
                    "\(error)".contains(expected) && "\(error)".contains("at byte")
                }
                if (try? Self.readWithTarReader(bytes, sizes: sizes)) != nil { Issue.record("\(label), blocks of \(sizes): read") }
            }
        }
        // Extended headers before one entry are bounded together, not only each: a second long
        // name after one of 40 MiB is refused before it is read.
        let longName = header("././@LongLink", type: UInt8(ascii: "L"), size: 40 << 20) + [UInt8](repeating: 0x61, count: 40 << 20)
        let twice = longName + header("././@LongLink", type: UInt8(ascii: "L"), size: 30 << 20)
        #expect { _ = try Self.readWithTarReader(twice, sizes: [1 << 20]) } throws: { "\($0)".contains("extended headers of more than 67108864 bytes before one entry") }
        // A size near 2^63 (base-256) is read as declared and, skipped, ends at the stream's end.
        let largest = [0x80] + [UInt8](repeating: 0, count: 3) + [0x7F] + [UInt8](repeating: 0xFF, count: 7)
        for sizes in [[512], [1]] {
            let reader = Blocks(header("big", type: UInt8(ascii: "0"), size: 0, sizeField: largest) + [1, 2, 3], sizes: sizes).reader
            #expect(try reader.next()?.size == Int64.max)
            #expect { _ = try reader.next() } throws: { "\($0)".contains("at byte 515 of the tar stream") && "\($0)".contains("ends inside the data of big") }
        }
        // A pax path that is not UTF-8 is kept byte for byte, as GNU tar keeps it (libarchive
        // refuses it unless the header says `hdrcharset=BINARY`); an unknown type is read as a
        // special entry, for the importer to refuse by name.
        let rawName: [UInt8] = [0x66, 0xE9]
        let record = Array("11 path=".utf8) + rawName + [0x0A]
        let bytes = header("PaxHeader", type: UInt8(ascii: "x"), size: record.count) + padded(record)
            + header("a", type: UInt8(ascii: "0"), size: 0) + header("fifo", type: UInt8(ascii: "6"), size: 0) + header("v", type: UInt8(ascii: "V"), size: 0) + end
        let read = try Self.readWithTarReader(bytes, sizes: [512])
        #expect(read.map(\.exactPath) == [ExactFileName.string(rawName), "fifo", "v"])
        #expect(read.map(\.kind) == [.file, .special("FIFO"), .special("entry of tar type 'V'")])
    }

    /// Thousands of damaged archives (bytes changed, runs of bytes copied over others, cuts):
    /// each is read to the end or refused with an `ArchiveError` (a trap on an overflow or a
    /// bad index would stop the test), and one read block by block says exactly what a read of
    /// it whole says. Headers and pax records are aimed at, where the parsing is.
    @Test func damagedArchivesAreReadOrRefusedAlikeInAnyBlocks() throws {
        var entries = Self.generatedEntries(count: 10)
        var long = ArchiveEntryInfo.file(String(repeating: "n", count: 130) + "/x.json", size: 5)
        long.xattrs["user.a"] = [1, 2, 3]
        entries.append((long, [1, 2, 3, 4, 5]))
        let original = try Self.writtenBySavetool(entries)
        var state: UInt64 = 0xD00D
        func pick(_ count: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % count
        }
        func outcome(_ bytes: [UInt8], sizes: [Int]) -> String {
            do { return try Self.readWithTarReader(bytes, sizes: sizes).map(\.description).joined(separator: "|") } catch let error as ArchiveError {
                return "refused: \(error)"
            } catch {
                return "another error: \(error)"
            }
        }
        var refused = 0
        for round in 0..<3000 {
            var bytes = original
            for _ in 0...pick(3) {
                // Most changes land in the first bytes of a 512-byte block: a header's fields.
                let block = pick(max(1, bytes.count / 512)) * 512
                let at = min(bytes.count - 1, block + (pick(2) == 0 ? pick(160) : pick(512)))
                switch pick(4) {
                case 0: bytes[at] = UInt8(pick(256))
                case 1: bytes[at] = [0x30, 0x37, 0x20, 0x00, 0x80, 0xFF, 0x0A, 0x3D][pick(8)]  // digits, ends, base-256, record marks
                case 2:
                    let from = pick(bytes.count), count = min(pick(64), bytes.count - max(from, at))
                    if count > 0 { bytes.replaceSubrange(at..<at + count, with: bytes[from..<from + count]) }
                default: bytes = Array(bytes.prefix(at))
                }
                if bytes.isEmpty { break }
            }
            let whole = outcome(bytes, sizes: [1 << 20])
            #expect(!whole.hasPrefix("another error"), "round \(round): \(whole)")
            #expect(outcome(bytes, sizes: [1, 511, 7]) == whole, "round \(round)")
            if whole.hasPrefix("refused") { refused += 1 }
        }
        #expect(refused > 500 && refused < 2900, "\(refused) of 3000 refused")
    }

    /// A compressed bundle is read by this reader, and a zip under the same compression is still
    /// read by libarchive: what is not a tar header at the start goes on as before.
    @Test func aCompressedTarIsReadHereAndACompressedZipByLibarchive() throws {
        let root = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()), create: true)
        defer { try? FileManager.default.removeItem(at: root) }
        for (name, format) in [("t.tar.gz", ArchiveFormat.tar(.gzip)), ("t.tar.zst", .tar(.zstd)), ("t.tar.xz", .tar(.xz)), ("z.zip", .zip)] {
            let path = root.appendingPathComponent(name).path
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let writer = try ArchiveWriter(fileDescriptor: descriptor, name: path, format: format)
            try writer.begin(.file("manifest.json", size: 2))
            try writer.write(Array("{}".utf8))
            try writer.close()
            close(descriptor)
        }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-k", root.appendingPathComponent("z.zip").path]
        try gzip.run()
        gzip.waitUntilExit()
        for (name, format) in [("t.tar.gz", "tar"), ("t.tar.zst", "tar"), ("t.tar.xz", "tar"), ("z.zip.gz", "ZIP")] {
            let reader = try ArchiveReader(path: root.appendingPathComponent(name).path)
            #expect(try reader.contents(of: "manifest.json") == Array("{}".utf8), "\(name)")
            #expect(reader.formatName?.hasPrefix(format) == true, "\(name): \(reader.formatName ?? "none")")
        }
    }
}
