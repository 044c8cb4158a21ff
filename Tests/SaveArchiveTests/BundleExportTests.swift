import Foundation
import SaveArchive
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

    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd), .zip])
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
}
