import CSaveToolSystem
import Foundation
@testable import SaveArchive
import SaveKit
import TestSupport
import Testing

@Suite("Bundle export")
struct BundleExportTests {
    /// A save tree: nested folders, names in several scripts, an empty file, plists and JSON.
    func makeTree() throws -> URL {
        let root = try Processes.temporaryDirectory("save-tree")
        let files: [(String, [UInt8])] = [
            ("Documents/current_tournament.json", Array(#"{"round": 2}"#.utf8)),
            ("Documents/Lojtari é.json", Array("{}".utf8)),
            ("Library/Preferences/玩家.plist", try BinaryPlistCodec().encode(["level": 3])),
            ("Library/🎮/empty", []),
            ("a.txt", Array("not a save\n".utf8)),
        ]
        for (path, bytes) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: root.appendingPathComponent("a.txt").path)
        return root
    }

    func entries(of bundle: String) throws -> [(path: String, data: [UInt8], permissions: UInt16)] {
        let reader = try ArchiveReader(path: bundle)
        var result: [(String, [UInt8], UInt16)] = []
        while let info = try reader.next() {
            result.append((info.path, try #require(try reader.readEntry(limit: .max)), info.permissions))
        }
        return result
    }

    /// A folder's contents sort after names that share its prefix (`a/x` after `a-c` and `a.b`,
    /// since `/` is 0x2F): the walk lists them in full-path byte order all the same, the order
    /// import checks without a table of every path.
    @Test func entriesComeInTheBytesOrderOfTheirFullPaths() throws {
        let root = try Processes.temporaryDirectory("order")
        defer { try? FileManager.default.removeItem(at: root) }
        for path in ["a/x", "a/y/z", "a-c", "a.b", "a0", "b", "a/x.d/e"] {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("{}".utf8).write(to: url)
        }
        let bundle = root.path + ".tar.gz"
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        try BundleExporter(createdAt: Date(timeIntervalSince1970: 0), createdBy: "test").export(directory: root.path, to: bundle)
        let paths = try BundleImporter(createdBy: "test").manifest(of: bundle).files.map(\.path)
        #expect(paths == ["a", "a-c", "a.b", "a/x", "a/x.d", "a/x.d/e", "a/y", "a/y/z", "a0", "b"])
        #expect(paths == paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none), .zip])
    func manifestFirstThenEveryFileWithItsChecksum(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let bundle = tree.deletingLastPathComponent().appendingPathComponent("\(tree.lastPathComponent).\(format.fileExtension)").path
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        try exporter.export(directory: tree.path, to: bundle)
        let manifest = try BundleImporter(createdBy: "test").manifest(of: bundle)

        let items = try entries(of: bundle)
        #expect(items.first?.path == "manifest.json")
        // Format 2 lists the directories too, each before what it holds (zip stores them with a "/").
        #expect(items.dropFirst().map(\.path) == manifest.files.map { "files/" + $0.path })
        #expect(manifest.files.map(\.path) == [
            "Documents", "Documents/Lojtari é.json", "Documents/current_tournament.json", "Library", "Library/Preferences",
            "Library/Preferences/玩家.plist", "Library/🎮", "Library/🎮/empty", "a.txt",
        ])
        #expect(manifest.files.map(\.type) == [.directory, .file, .file, .directory, .directory, .file, .directory, .file, .file])
        #expect(manifest.files.map(\.codec) == [nil, "json", "json", nil, nil, "bplist", nil, nil, nil])
        #expect(manifest.files.last?.mode == 0o600)
        #expect(items.last?.permissions == 0o600)
        // The manifest in the bundle is the one returned, and its checksums are those of sha256sum.
        let stored = try JSONCodec().decode(items[0].data)
        #expect(stored == manifest.value)
        for file in manifest.files where file.type == .file {
            let digest = try Processes.run(["sha256sum", tree.appendingPathComponent(file.path).path])
            #expect(digest.outputText.hasPrefix(file.sha256 + " "), "\(file.path)")
        }
    }

    @Test func theSameTreeGivesTheSameBytes() throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        let first = tree.path + "-1.tar.gz", second = tree.path + "-2.tar.gz"
        defer { try? FileManager.default.removeItem(atPath: first); try? FileManager.default.removeItem(atPath: second) }
        try exporter.export(directory: tree.path, to: first)
        try exporter.export(directory: tree.path, to: second)
        #expect(FileManager.default.contentsEqual(atPath: first, andPath: second))
    }

    /// A link inside the tree is kept as a link; one that leads out of it is left out with a
    /// warning (import would refuse it), and the rest of the folder is still backed up.
    @Test func linksInsideAreKeptAndLinksOutAreLeftOutWithAWarning() throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("Documents/out").path, withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("Documents/up").path, withDestinationPath: "../../x")
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("Documents/in").path, withDestinationPath: "../a.txt")
        let bundle = tree.path + ".tar.gz"
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        final class Warnings: @unchecked Sendable { var lines: [String] = []; let lock = NSLock() }
        let warnings = Warnings()
        var exporter = BundleExporter(createdAt: Date(), createdBy: "savetool test")
        exporter.warn = { line in warnings.lock.withLock { warnings.lines.append(line) } }
        try exporter.export(directory: tree.path, to: bundle)
        let manifest = try BundleImporter(createdBy: "test").manifest(of: bundle)
        let links = manifest.files.filter { $0.type == .symlink }
        #expect(links.map(\.path) == ["Documents/in"] && links.first?.target == "../a.txt")
        #expect(warnings.lines.count == 2 && warnings.lines.allSatisfy { $0.hasSuffix("; left out") }, "\(warnings.lines)")
        #expect(warnings.lines.contains { $0.hasPrefix(tree.appendingPathComponent("Documents/out").path + ": a symbolic link to the absolute path /etc/passwd") })
    }

    /// A tar bundle is written in one pass: its manifest's header and its data each compressed
    /// on its own, then the files compressed as they were read. GNU tar and bsdtar read it as one archive and extract every
    /// file as it was; nothing is left beside the bundle.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none)])
    func otherToolsExtractATarBundle(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }  // read in several chunks
        try Data(large).write(to: tree.appendingPathComponent("Library/large.bin"))
        let folder = try Processes.temporaryDirectory("one-pass")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bundle = folder.appendingPathComponent("bundle.\(format.fileExtension)").path
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        let summary = try exporter.export(directory: tree.path, to: bundle)
        #expect(summary.fileCount == 6)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["bundle.\(format.fileExtension)"])
        for tool in [["tar"] + (format == .tar(.zstd) ? ["--zstd"] : []), ["bsdtar"]] {
            let out = folder.appendingPathComponent(tool[0])
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let run = try Processes.run(tool + ["-xf", bundle, "-C", out.path])
            #expect(run.status == 0, "\(tool[0]): \(run.errors)")
            let manifest = try JSONCodec().decode(Array(try Data(contentsOf: out.appendingPathComponent("manifest.json"))))
            #expect(manifest == (try BundleImporter(createdBy: "test").manifest(of: bundle).value), "\(tool[0])")
            for path in ["Documents/current_tournament.json", "Documents/Lojtari é.json", "Library/Preferences/玩家.plist", "Library/large.bin", "a.txt"] {
                #expect(
                    FileManager.default.contentsEqual(atPath: tree.appendingPathComponent(path).path, andPath: out.appendingPathComponent("files/" + path).path),
                    "\(tool[0]): \(path)")
            }
        }
    }

    /// A file written to while the export reads it fails the export, which leaves nothing
    /// behind: the bundle would hold bytes that match no version of the file. (A writer
    /// appends without pause for the whole export, so the file changes while it is read.)
    @Test(arguments: [ArchiveFormat.tar(.zstd), .zip])
    func aFileThatChangesWhileItIsReadFailsTheExport(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let growing = tree.appendingPathComponent("Library/growing.bin")
        try Data(count: 16 << 20).write(to: growing)
        let folder = try Processes.temporaryDirectory("changing")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bundle = folder.appendingPathComponent("bundle.\(format.fileExtension)").path
        let appender = Appender(path: growing.path)
        appender.start()
        defer { appender.stop() }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        #expect(throws: BundleError.changedDuringExport(path: growing.path)) { try exporter.export(directory: tree.path, to: bundle) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
    }
}

extension BundleExportTests {
    /// A bundle written inside the folder it holds does not hold its own temporary file: the
    /// walk is over before that file is made.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .zip])
    func aBundleInsideItsFolderDoesNotHoldItself(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let bundle = tree.appendingPathComponent("out.\(format.fileExtension)").path
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        try exporter.export(directory: tree.path, to: bundle)
        let paths = try BundleImporter(createdBy: "test").manifest(of: bundle).files.map(\.path)
        #expect(!paths.contains { $0.contains("savetool-") }, "\(paths)")
        #expect(paths.count == 9)
    }

    /// An output that fails (an upload refused part way) is written to no more: not the rest
    /// of the stream, and not the compressor's buffered bytes or trailer when it is freed.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none), .zip])
    func afterAFailedWriteNothingMoreReachesTheOutput(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        var generator = SeededGenerator(seed: 7)
        try Data((0..<(2 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: tree.appendingPathComponent("Library/noise.bin"))
        final class Refusing: ByteOutput, @unchecked Sendable {
            var written = 0, refused = false, writesAfterRefusal = 0
            struct Refused: Error {}
            func write(_ bytes: UnsafeRawBufferPointer) throws {
                if refused { writesAfterRefusal += 1 }
                guard written + bytes.count <= 256 << 10 else { refused = true; throw Refused() }
                written += bytes.count
            }
        }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        let sink = Refusing()
        do {
            let output = ArchiveOutput(sink: sink)
            try exporter.write(try exporter.describe(directory: tree.path), into: output, name: "upload")
            Issue.record("the export went through a refusing output")
        } catch is Refusing.Refused {
        }
        #expect(sink.refused && sink.writesAfterRefusal == 0, "\(format): \(sink.writesAfterRefusal) writes after the refusal")
    }

    /// Written in one pass or in two (an upload, a backup compared first), a tar bundle of the
    /// same files is the same bytes: the manifest's header and data streams, then the files'.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none)])
    func oneAndTwoPassesGiveTheSameBytes(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        let folder = try Processes.temporaryDirectory("passes")
        defer { try? FileManager.default.removeItem(at: folder) }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        let once = folder.appendingPathComponent("once.\(format.fileExtension)").path
        let twice = folder.appendingPathComponent("twice.\(format.fileExtension)").path
        try exporter.export(directory: tree.path, to: once)
        try exporter.write(try exporter.describe(directory: tree.path), to: twice, replacing: false)
        #expect(FileManager.default.contentsEqual(atPath: once, andPath: twice), "\(format)")
    }

    /// The same with a manifest past 1 MiB and files past several of libzstd's 2 MiB jobs, so
    /// that the worker compresses the files and the manifest takes its own thread.
    @Test func oneAndTwoPassesGiveTheSameBytesPastOneJob() throws {
        let tree = try Processes.temporaryDirectory("many")
        defer { try? FileManager.default.removeItem(at: tree) }
        for folder in 0..<8 {
            let url = tree.appendingPathComponent("slot-\(folder)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for index in 0..<700 {
                let text = #"{"slot": \#(folder), "save": \#(index), "note": "\#(String(repeating: "ab\(index % 7)", count: 600))"}"#
                try Data(text.utf8).write(to: url.appendingPathComponent("save-\(index).json"))
            }
        }
        let folder = try Processes.temporaryDirectory("passes")
        defer { try? FileManager.default.removeItem(at: folder) }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = .tar(.zstd)
        let once = folder.appendingPathComponent("once.tar.zst").path, twice = folder.appendingPathComponent("twice.tar.zst").path
        let summary = try exporter.export(directory: tree.path, to: once)
        try exporter.write(try exporter.describe(directory: tree.path), to: twice, replacing: false)
        #expect(summary.byteCount > 4 * Int64(ZstdCompressor.jobSize))
        #expect(FileManager.default.contentsEqual(atPath: once, andPath: twice))
        let listing = try Processes.run(["tar", "--zstd", "-tf", once])
        #expect(listing.status == 0 && listing.outputText.split(separator: "\n").count == 1 + 8 + 8 * 700, "\(listing.errors)")
    }

    /// The spool is copied after the manifest a stretch at a time, each stretch freed once
    /// copied where the file system punches holes: the bytes arrive whole, and the spool no
    /// longer holds its blocks.
    @Test(arguments: [false, true])
    func appendingTheSpoolFreesItAsItGoes(appendMode: Bool) throws {
        let folder = try Processes.temporaryDirectory("append")
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let source = folder.appendingPathComponent("spool").path, target = folder.appendingPathComponent("bundle").path
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        try Data("head".utf8).write(to: URL(fileURLWithPath: target))
        // A file open for appending takes the buffered path (the kernel's copy refuses it).
        let from = open(source, O_RDWR), to = open(target, O_WRONLY | (appendMode ? O_APPEND : 0))
        defer { close(from); close(to) }
        if !appendMode { lseek(to, 0, SEEK_END) }
        // Whether this file system punches holes, asked of a file of its own.
        let probe = folder.appendingPathComponent("probe").path
        try Data(count: 1 << 20).write(to: URL(fileURLWithPath: probe))
        let punches = try Processes.run(["fallocate", "--punch-hole", "--offset", "0", "--length", "1048576", probe]).status == 0
        #expect(savetool_append_file(from, to, 1) == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("head".utf8) + Data(bytes))
        var info = stat()
        #expect(fstat(from, &info) == 0 && info.st_size == bytes.count, "the spool keeps its size")
        if punches {
            #expect(info.st_blocks * 512 < 64 << 10, "\(info.st_blocks) blocks left")
        } else {
            #expect(info.st_blocks * 512 >= bytes.count, "without holes the blocks stay until the spool is closed")
        }
    }

    /// The manifest's header declares what it lists before listing it — entries, files, their
    /// bytes, and those of sparse files — so that an import can check its room and limits first.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .zip])
    func theHeaderDeclaresTheTotalsOfWhatFollows(_ format: ArchiveFormat) throws {
        let tree = try makeTree()
        defer { try? FileManager.default.removeItem(at: tree) }
        // A file of a MiB with one byte of data at its start: sparse where the file system
        // keeps holes, whose bytes the totals then give apart.
        let sparse = try FileHandle(forWritingTo: try {
            let url = tree.appendingPathComponent("Documents/sparse.bin")
            try Data("x".utf8).write(to: url)
            return url
        }())
        try sparse.truncate(atOffset: 1 << 20)
        try sparse.close()
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("latest.json").path, withDestinationPath: "Documents/current_tournament.json")
        let folder = try Processes.temporaryDirectory("totals")
        defer { try? FileManager.default.removeItem(at: folder) }
        var exporter = BundleExporter(createdAt: Date(timeIntervalSince1970: 1_763_712_000), createdBy: "savetool test")
        exporter.format = format
        let bundle = folder.appendingPathComponent("b.\(format.fileExtension)").path
        let summary = try exporter.export(directory: tree.path, to: bundle)
        let manifest = try #require(try entries(of: bundle).first { $0.path == "manifest.json" }).data
        let text = String(decoding: manifest, as: UTF8.self)
        let files = try BundleImporter(createdBy: "test").manifest(of: bundle).files
        let sparseBytes = files.filter(\.sparse).reduce(Int64(0)) { $0 + $1.size }
        let expected = #"{"entries":\#(summary.entryCount),"files":\#(summary.fileCount),"bytes":\#(summary.byteCount)"#
            + (sparseBytes > 0 ? #","sparseBytes":\#(sparseBytes)}"# : "}")
        #expect(text.contains("\n  \"totals\": \(expected),\n  \"files\": [\n"), "\(text.prefix(400))")
        #expect(summary.entryCount == files.count && summary.fileCount == 6)
    }
}

/// Appends a byte at a time to a file on a thread of its own, from ``start()`` until ``stop()``.
private final class Appender: @unchecked Sendable {
    private let path: String
    private let condition = NSCondition()
    private var (started, stopping, stopped) = (false, false, false)

    init(path: String) { self.path = path }

    /// Returns once the first byte is written.
    func start() {
        Thread.detachNewThread { [self] in
            let handle = FileHandle(forWritingAtPath: path)!
            handle.seekToEndOfFile()
            while true {
                handle.write(Data([0x2A]))
                condition.lock()
                started = true
                condition.broadcast()
                let done = stopping
                condition.unlock()
                if done { break }
            }
            try? handle.close()
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        while !started { condition.wait() }
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopping = true
        while !stopped { condition.wait() }
        condition.unlock()
    }
}
