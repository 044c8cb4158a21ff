import Foundation
@testable import SaveArchive
import TestSupport
import Testing

@Suite("Archive reader and writer")
struct ArchiveRoundTripTests {
    struct Item {
        var info: ArchiveEntryInfo
        var data: [UInt8]
    }

    static let modified = Date(timeIntervalSince1970: 1_763_712_000)

    /// Nested folders, names in several scripts, an empty file, a larger binary file.
    static let items: [Item] = {
        var generator = SystemRandomNumberGenerator()
        let large = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return [
            Item(info: ArchiveEntryInfo(path: "Documents", kind: .directory, permissions: 0o755, modified: modified), data: []),
            Item(info: .file("Documents/current_tournament.json", size: 13, modified: modified), data: Array(#"{"round": 2}"#.utf8) + [0x0A]),
            Item(info: .file("Documents/Lojtari é.json", size: 2, permissions: 0o600, modified: modified), data: Array("{}".utf8)),
            Item(info: .file("Library/Preferences/玩家.plist", size: 8, modified: modified), data: Array("bplist00".utf8)),
            Item(info: .file("Library/🎮 saves/empty", size: 0, modified: modified), data: []),
            Item(info: .file("Library/blob.bin", size: Int64(large.count), permissions: 0o640, modified: modified), data: large),
            Item(info: ArchiveEntryInfo(path: "Library/latest", kind: .symbolicLink(target: "blob.bin"), permissions: 0o777, modified: modified), data: []),
        ]
    }()

    static let formats: [ArchiveFormat] = [.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none), .zip]

    func write(_ items: [Item], format: ArchiveFormat, to url: URL) throws {
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let writer = try ArchiveWriter(fileDescriptor: handle.fileDescriptor, name: url.lastPathComponent, format: format)
        for item in items {
            try writer.begin(item.info)
            if !item.data.isEmpty { try writer.write(item.data) }
        }
        try writer.close()
    }

    func read(_ url: URL) throws -> [Item] {
        let reader = try ArchiveReader(path: url.path)
        var items: [Item] = []
        while let info = try reader.next() {
            items.append(Item(info: info, data: try #require(try reader.readEntry(limit: .max))))
        }
        return items
    }

    @Test(arguments: formats)
    func everythingComesBack(_ format: ArchiveFormat) throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("bundle.\(format.fileExtension)")
        try write(Self.items, format: format, to: url)
        let back = try read(url)
        #expect(back.map(\.info.path) == Self.items.map(\.info.path))
        for (original, copy) in zip(Self.items, back) {
            #expect(copy.data == original.data, "\(format): \(original.info.path)")
            #expect(copy.info.kind == original.info.kind, "\(format): \(original.info.path)")
            #expect(copy.info.modified == original.info.modified, "\(format): \(original.info.path)")
            if case .symbolicLink = original.info.kind { continue }
            #expect(copy.info.permissions == original.info.permissions, "\(format): \(original.info.path)")
            if case .file = original.info.kind { #expect(copy.info.size == original.info.size) }
        }
    }

    @Test(arguments: formats)
    func sameEntriesGiveTheSameBytes(_ format: ArchiveFormat) throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("a.\(format.fileExtension)")
        let second = directory.appendingPathComponent("b.\(format.fileExtension)")
        try write(Self.items, format: format, to: first)
        Thread.sleep(forTimeInterval: 1.1)  // a writer that stamps the current time would differ now
        try write(Self.items, format: format, to: second)
        #expect(FileManager.default.contentsEqual(atPath: first.path, andPath: second.path))
    }

    /// GNU tar and Python's zipfile, independent of libarchive, open what we write.
    @Test(arguments: formats)
    func otherToolsOpenTheArchives(_ format: ArchiveFormat) throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("bundle.\(format.fileExtension)")
        try write(Self.items, format: format, to: url)
        let listing: ProcessResult
        switch format {
        case .zip:
            listing = try Processes.run(["python3", "-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist())); zipfile.ZipFile(sys.argv[1]).testzip()", url.path])
        case .tar(.zstd):
            listing = try Processes.run(["tar", "--zstd", "-tf", url.path])
        default:
            listing = try Processes.run(["tar", "-tf", url.path])
        }
        #expect(listing.status == 0, "\(listing.errors)")
        let names = listing.outputText.split(separator: "\n").map { $0.hasSuffix("/") ? String($0.dropLast()) : String($0) }
        #expect(names == Self.items.map(\.info.path), "\(format)")
        // bsdtar reads every format; unzip tests every zip entry's CRC.
        let bsdtar = try Processes.run(["bsdtar", "-tf", url.path])
        #expect(bsdtar.status == 0 && bsdtar.outputText.split(separator: "\n").count == Self.items.count, "bsdtar: \(bsdtar.errors)")
        if format == .zip {
            let unzip = try Processes.run(["unzip", "-tq", url.path])
            #expect(unzip.status == 0, "unzip: \(unzip.outputText) \(unzip.errors)")
        }
    }

    /// Entries written as streams of their own (each header once its data is known, then the
    /// data), then an archive after them, each stream compressed on its own: libarchive, GNU tar
    /// and bsdtar read them as one archive (gzip members, zstd frames and xz streams follow one
    /// another), which is how a bundle puts its manifest, known last, first.
    @Test(arguments: formats.filter { $0 != .zip })
    func entriesInStreamsOfTheirOwnGoOnInTheArchive(_ format: ArchiveFormat) throws {
        guard case .tar(let compression) = format else { return }
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("parts.\(format.fileExtension)")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        let (head, rest) = (Self.items.prefix(2), Self.items.dropFirst(2))
        var plainSizes: [UInt64] = []
        for item in head {
            let before = try handle.seekToEnd()
            try TarEntryStream.writeHeader(item.info, into: ArchiveOutput(descriptor: handle.fileDescriptor), name: url.lastPathComponent, compression: compression)
            let data = try TarEntryStream(into: ArchiveOutput(descriptor: handle.fileDescriptor), name: url.lastPathComponent, compression: compression)
            // In pieces, as a manifest's entries come.
            for start in stride(from: 0, to: item.data.count, by: 5) { try data.write(Array(item.data[start..<min(start + 5, item.data.count)])) }
            #expect(data.count == Int64(item.data.count))
            try data.finish()
            plainSizes.append(try handle.seekToEnd() - before)
        }
        let writer = try ArchiveWriter(output: ArchiveOutput(descriptor: handle.fileDescriptor), name: url.lastPathComponent, format: format)
        for item in rest {
            try writer.begin(item.info)
            if !item.data.isEmpty { try writer.write(item.data) }
        }
        try writer.close()
        try handle.close()
        let back = try read(url)
        #expect(back.map(\.info.path) == Self.items.map(\.info.path), "\(format)")
        #expect(back.map(\.data) == Self.items.map(\.data), "\(format)")
        let headers = { (items: ArraySlice<Item>) in items.map { "\($0.info.kind) \($0.info.permissions) \(String(describing: $0.info.modified))" } }
        #expect(headers(back.prefix(2)) == headers(head), "\(format)")
        let gnu = try Processes.run(format == .tar(.zstd) ? ["tar", "--zstd", "-tvf", url.path] : ["tar", "-tvf", url.path])
        #expect(gnu.status == 0 && gnu.outputText.split(separator: "\n").count == Self.items.count, "GNU tar: \(gnu.errors)")
        let bsdtar = try Processes.run(["bsdtar", "-tf", url.path])
        #expect(bsdtar.status == 0 && bsdtar.outputText.split(separator: "\n").count == Self.items.count, "bsdtar: \(bsdtar.errors)")
        // Uncompressed, each entry is its header record and its data padded to whole records.
        if compression == .none { #expect(plainSizes == [512, 1024], "\(plainSizes)") }
    }

    /// A zstd tar is compressed by libzstd's worker in jobs of 2 MiB: a stream of many jobs,
    /// in small and large writes, half of it compressible, reads back byte for byte with
    /// libarchive, and the `zstd` program finds it one valid frame.
    @Test func aZstdStreamOfManyJobsReadsBackWhole() throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("jobs.tar.zst")
        var generator = SystemRandomNumberGenerator()
        let items = (0..<24).map { index in
            let size = index % 3 == 0 ? 1_300_000 : 5_000 + index * 97
            let data = index.isMultiple(of: 2)
                ? (0..<size).map { UInt8(truncatingIfNeeded: $0 / 7 + index) }
                : (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            return Item(info: .file("save-\(index).bin", size: Int64(size), modified: Self.modified), data: data)
        }
        #expect(items.reduce(0) { $0 + $1.data.count } > 4 * Int(ZstdCompressor.jobSize))
        try write(items, format: .tar(.zstd), to: url)
        let back = try read(url)
        #expect(back.map(\.info.path) == items.map(\.info.path))
        #expect(back.map(\.data) == items.map(\.data))
        let check = try Processes.run(["zstd", "-t", "-q", url.path])
        #expect(check.status == 0, "zstd: \(check.errors)")
    }

    /// Decompressing runs ahead on its own thread: a damaged tar header is reported as such,
    /// even when the decompressor has already met the stream cut short further on.
    @Test func theFirstFaultIsTheOneReported() throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("plain.tar")
        let tail = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        try write(Self.items + [Item(info: .file("Library/tail.bin", size: Int64(tail.count), modified: Self.modified), data: tail)], format: .tar(.none), to: plain)
        var bytes = [UInt8](try Data(contentsOf: plain))
        // The header of the link, between the large file and the tail that will be cut.
        var offset = 0, link = 0
        while offset + 512 <= bytes.count, bytes[offset] != 0 {
            if bytes[offset..<(offset + 14)].elementsEqual("Library/latest".utf8) { link = offset }
            let size = Int(String(decoding: bytes[(offset + 124)..<(offset + 135)], as: UTF8.self), radix: 8) ?? 0
            offset += 512 + (size + 511) / 512 * 512
        }
        #expect(link > 1 << 20)
        for index in (link + 148)..<(link + 156) { bytes[index] = UInt8(ascii: "9") }  // its checksum
        try Data(bytes).write(to: plain)
        #expect(try Processes.run(["gzip", "-k", "-n", plain.path]).status == 0)
        let whole = directory.appendingPathComponent("plain.tar.gz")
        let compressed = try Data(contentsOf: whole)
        let cut = directory.appendingPathComponent("cut.tar.gz")
        try compressed.prefix(compressed.count - 2000).write(to: cut)
        func failure(_ url: URL) -> String {
            do {
                let reader = try ArchiveReader(path: url.path)
                while let info = try reader.next() {
                    _ = try reader.readEntry(limit: .max)
                    // Time for the decompressor to reach the cut before the damaged header is read.
                    if info.path == "Library/blob.bin" { Thread.sleep(forTimeInterval: 0.3) }
                }
                return "no error"
            } catch {
                return "\(error)".replacingOccurrences(of: url.path, with: "ARCHIVE")
            }
        }
        #expect(failure(whole) != "no error")
        #expect(failure(cut) == failure(whole))
        #expect(!failure(cut).contains("truncated"), "\(failure(cut))")
    }

    @Test func aFileMustGetTheBytesItsHeaderDeclares() throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("short.tar")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let writer = try ArchiveWriter(fileDescriptor: handle.fileDescriptor, name: "short.tar", format: .tar(.none))
        try writer.begin(.file("a", size: 10))
        try writer.write(Array("12345".utf8))
        #expect(throws: ArchiveError.sizeMismatch(archive: "short.tar", entry: "a", declared: 10, written: 5)) { try writer.finishEntry() }
    }

    @Test func linksAndSpecialEntriesAreReportedForWhatTheyAre() throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("special.tar")
        let script = """
            import io, sys, tarfile
            with tarfile.open(sys.argv[1], "w") as tar:
                for name, kind, extra in [("fifo", tarfile.FIFOTYPE, {}), ("dev", tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}),
                                          ("link", tarfile.SYMTYPE, {"linkname": "../../etc/passwd"}), ("hard", tarfile.LNKTYPE, {"linkname": "fifo"})]:
                    info = tarfile.TarInfo(name); info.type = kind
                    for key, value in extra.items(): setattr(info, key, value)
                    tar.addfile(info)
            """
        #expect(try Processes.run(["python3", "-c", script, url.path]).status == 0)
        let kinds = try read(url).map(\.info.kind)
        #expect(kinds == [.special("FIFO"), .special("character device"), .symbolicLink(target: "../../etc/passwd"), .hardLink(target: "fifo")])
    }

    @Test(arguments: formats)
    func truncatedArchivesAreErrors(_ format: ArchiveFormat) throws {
        let directory = try Processes.temporaryDirectory("archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("bundle.\(format.fileExtension)")
        try write(Self.items, format: format, to: url)
        let bytes = try Data(contentsOf: url)
        let cut = directory.appendingPathComponent("cut.\(format.fileExtension)")
        try bytes.prefix(bytes.count / 2).write(to: cut)
        #expect(throws: ArchiveError.self, "\(format)") { _ = try read(cut) }
    }
}

extension ArchiveFormat: CustomTestStringConvertible {
    public var testDescription: String { fileExtension }
}
