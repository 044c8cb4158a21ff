import Foundation
@testable import SaveArchive
import SaveKit
import TestSupport
import Testing

@Suite("Bundle import")
struct BundleImportTests {
    /// A workspace: a destination holding one file, and a sentinel folder beside it that
    /// nothing may touch.
    struct Workspace {
        let root: URL
        var destination: URL { root.appendingPathComponent("saves") }
        var sentinel: URL { root.appendingPathComponent("outside") }

        init() throws {
            root = try Processes.temporaryDirectory("import")
            try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: sentinel, withIntermediateDirectories: true)
            try Data("old\n".utf8).write(to: destination.appendingPathComponent("old.json"))
        }

        /// Every path under the workspace, for before/after comparisons.
        func listing() -> [String] {
            (FileManager.default.subpaths(atPath: root.path) ?? []).sorted()
        }
    }

    static let builder = Bundle.module.url(forResource: "hostile_bundle", withExtension: "py", subdirectory: "Fixtures")!

    func build(_ name: String, in workspace: Workspace) throws -> String {
        let bundle = workspace.root.appendingPathComponent("\(name).tar.gz").path
        let result = try Processes.run(["python3", Self.builder.path, name, bundle])
        try #require(result.status == 0, "hostile_bundle.py \(name): \(result.errors)")
        return bundle
    }

    @Test func exportThenImportGivesBackEveryByteAndModeBit() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let source = workspace.root.appendingPathComponent("source")
        var generator = SystemRandomNumberGenerator()
        let large = Data((0..<(50 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let files: [(String, Data, Int)] = [
            ("Documents/current_tournament.json", Data(#"{"round": 2}"#.utf8), 0o644),
            ("Documents/Lojtari é.json", Data("{}".utf8), 0o600),
            ("Library/Preferences/玩家.plist", Data("bplist00".utf8), 0o640),
            ("Library/🎮/empty", Data(), 0o644),
            ("large.bin", large, 0o755),
        ]
        for (path, data, mode) in files {
            let url = source.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        }
        let bundle = workspace.root.appendingPathComponent("bundle.tar.zst").path
        var exporter = BundleExporter(createdAt: Date(), createdBy: "test")
        exporter.format = .tar(.zstd)
        try exporter.export(directory: source.path, to: bundle)

        let restored = workspace.root.appendingPathComponent("restored")
        let outcome = try BundleImporter(createdBy: "test").restore(bundle, into: restored.path)
        #expect(outcome.previousContents == nil)
        for (path, data, mode) in files {
            let url = restored.appendingPathComponent(path)
            #expect(try Data(contentsOf: url) == data, "\(path)")
            #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int == mode, "\(path)")
        }
    }

    /// Links first, then names that need pax headers: the archive's reader keeps the character
    /// set of its first conversion, and a link's target read outside the UTF-8 locale would
    /// have made every later UTF-8 name fail to convert.
    @Test(arguments: [ArchiveFormat.tar(.gzip), .tar(.zstd)])
    func linksBeforeUnicodeNamesComeBack(_ format: ArchiveFormat) throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let source = workspace.root.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("d"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: source.appendingPathComponent("a.json"))
        try FileManager.default.createSymbolicLink(atPath: source.appendingPathComponent("alink").path, withDestinationPath: "a.json")
        try FileManager.default.linkItem(atPath: source.appendingPathComponent("a.json").path, toPath: source.appendingPathComponent("hard.json").path)
        let named = ["zé.json", "d/玩家.json", "é-ü.txt"]
        for path in named { try Data(path.utf8).write(to: source.appendingPathComponent(path)) }
        let bundle = workspace.root.appendingPathComponent("bundle.\(format.fileExtension)").path
        var exporter = BundleExporter(createdAt: Date(), createdBy: "test")
        exporter.format = format
        try exporter.export(directory: source.path, to: bundle)
        let restored = workspace.root.appendingPathComponent("restored")
        try BundleImporter(createdBy: "test").restore(bundle, into: restored.path)
        for path in named { #expect(try Data(contentsOf: restored.appendingPathComponent(path)) == Data(path.utf8), "\(path)") }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: restored.appendingPathComponent("alink").path) == "a.json")
        let inodes = try ["a.json", "hard.json"].map { try FileManager.default.attributesOfItem(atPath: restored.appendingPathComponent($0).path)[.systemFileNumber] as? Int }
        #expect(inodes[0] != nil && inodes[0] == inodes[1])
    }

    /// The engines refuse an empty path themselves, for the servers and apps that call them:
    /// `URL` and the system calls read it as the current folder.
    @Test func anEmptyPathIsRefusedByTheEngines() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("good", in: workspace)
        func isUsage(_ body: () throws -> Void) -> Bool {
            do { try body() } catch let error as SaveError { return error.category == .usage && error.message.hasPrefix("an empty path") } catch { return false }
            return false
        }
        #expect(isUsage { _ = try BundleImporter(createdBy: "test").restore(bundle, into: "") })
        #expect(isUsage { _ = try BundleImporter(createdBy: "test").restore(bundle, into: "", dryRun: true) })
        #expect(isUsage { try BundleExporter(createdAt: Date(), createdBy: "test").export(directory: "", to: workspace.root.appendingPathComponent("x.tar.gz").path) })
        let engine = BackupEngine(repository: BackupRepository(directory: workspace.root.appendingPathComponent("repo").path), createdBy: "test")
        let today = BackupRepository.Day.today()
        #expect(isUsage { _ = try engine.create(source: "", day: today, today: today, keep: 7) })
        #expect(!FileManager.default.fileExists(atPath: workspace.root.appendingPathComponent("x.tar.gz").path))
        #expect(!FileManager.default.fileExists(atPath: workspace.root.appendingPathComponent("repo").path))
    }

    @Test func theOldContentsAreSavedFirst() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("good", in: workspace)
        let outcome = try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
        #expect(try String(contentsOf: workspace.destination.appendingPathComponent("save.json"), encoding: .utf8) == "{\"round\": 2}\n")
        #expect(!FileManager.default.fileExists(atPath: workspace.destination.appendingPathComponent("old.json").path))
        let previous = try #require(outcome.previousContents)
        // Restoring the saved bundle gives the old contents back.
        try BundleImporter(createdBy: "test").restore(previous, into: workspace.destination.path)
        #expect(try String(contentsOf: workspace.destination.appendingPathComponent("old.json"), encoding: .utf8) == "old\n")
        #expect(!workspace.listing().contains { $0.contains(".savetool-") })
    }

    /// Two folders whose names differ only in Unicode normalisation are two folders on Linux:
    /// each file lands in its own, byte for byte (the staging tree once took the second folder
    /// for the first, which Swift's string comparison calls equal).
    @Test func foldersThatDifferOnlyInNormalisationStayTwo() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("nfc-nfd-folders", in: workspace)
        let destination = workspace.root.appendingPathComponent("restored")
        try BundleImporter(createdBy: "test").restore(bundle, into: destination.path)
        let nfc = "café".precomposedStringWithCanonicalMapping, nfd = "café".decomposedStringWithCanonicalMapping
        let folders = try FileManager.default.contentsOfDirectory(atPath: destination.path)
        #expect(Set(folders.map { Array($0.unicodeScalars) }) == Set([Array(nfc.unicodeScalars), Array(nfd.unicodeScalars)]))
        for folder in folders {
            let isNFC = Array(folder.unicodeScalars) == Array(nfc.unicodeScalars)
            #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path + "/" + folder) == [isNFC ? "a.json" : "b.json"])
        }
    }

    static let refused: [String] = [
        "dotdot", "absolute", "dotdot-entry-only", "symlink", "write-through-symlink", "hardlink", "fifo", "device",
        "duplicate", "nfc-nfd", "bigger-than-declared", "not-listed", "missing", "checksum", "future-format", "manifest-not-first",
        "hardlink-out", "totals-too-few", "totals-too-many", "totals-malformed", "totals-huge-entries", "sizes-overflow",
    ]

    /// A header's totals must be what the manifest lists: declared too low, the reading stops
    /// where the entries pass them (nothing past them lands); too high, once all are read;
    /// not numbers, at once. Each refusal says which.
    @Test(arguments: [
        ("totals-too-few", #"at f1000: 1001 entries listed so far, more than the 1000 its "totals" declare"#),
        ("totals-too-many", #"it lists 3000 entries, 3000 files of 13890 bytes where its "totals" declare 3000 entries, 3000 files of 13891 bytes"#),
        ("totals-malformed", #""totals" whose "bytes" is a string, expected a whole number from 0"#),
        ("totals-huge-entries", #"it lists 0 entries, 0 files of 0 bytes where its "totals" declare 4000000000000000 entries"#),
    ])
    func totalsThatAreNotTheListedOnesAreRefused(_ name: String, _ message: String) throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build(name, in: workspace)
        let furthest = Furthest()
        var importer = BundleImporter(createdBy: "test")
        importer.progress = { furthest.saw($0.entries) }
        do {
            try importer.restore(bundle, into: workspace.destination.path)
            Issue.record("\(name): accepted")
        } catch let error as BundleImportError {
            #expect("\(error)".contains(message), "\(error)")
        }
        if name == "totals-too-few" { #expect(furthest.value <= 1000, "\(furthest.value) entries landed") }
    }

    /// What `--max-ratio` a bundle needs when import's defaults would refuse it, as export tells:
    /// none up to 256 MiB written or 200 bytes per byte of bundle, the ratio past them, a sparse
    /// file's bytes counted a fiftieth.
    @Test func theRatioABundleNeedsIsToldWhenTheDefaultsWouldRefuseIt() {
        var summary = BundleSummary(createdAt: Date(), createdBy: "test", label: nil, source: "s", sourcePath: nil)
        summary.fileCount = 1
        summary.byteCount = 300 << 20  // 300 MiB of zeros, dense
        #expect(BundleImporter.ratioNeeded(for: summary, bundleSize: 10_000) == 31_458 + 1)
        #expect(BundleImporter.ratioNeeded(for: summary, bundleSize: 2 << 20) == nil, "150 bytes per byte")
        summary.byteCount = 200 << 20
        #expect(BundleImporter.ratioNeeded(for: summary, bundleSize: 10_000) == nil, "under the 256 MiB floor")
        summary.byteCount = 3 << 30
        summary.sparseByteCount = 3 << 30  // a sparse disk image: a fiftieth of it counts
        #expect(BundleImporter.ratioNeeded(for: summary, bundleSize: 10_000) == nil)
    }

    /// Declared entries past `--max-entries` are refused before anything lands, naming both.
    @Test func declaredEntriesPastTheLimitAreRefusedBeforeAnythingLands() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try bundleOfManyFiles(in: workspace)
        let furthest = Furthest()
        var importer = BundleImporter(createdBy: "test")
        importer.limits.maxEntries = 1000
        importer.progress = { furthest.saw($0.entries) }
        let before = workspace.listing()
        for dryRun in [true, false] {
            do {
                try importer.restore(bundle, into: workspace.destination.path, dryRun: dryRun)
                Issue.record("accepted 3,000 entries past a limit of 1,000")
            } catch let error as BundleImportError {
                #expect("\(error)".contains(#"more than 1000 entries (files, folders and links)"#), "\(error)")
            }
        }
        #expect(furthest.value == 0, "\(furthest.value) entries landed or were read")
        #expect(workspace.listing() == before)
    }

    /// With totals in its header (export writes them), a bundle is checked against the free
    /// space before anything lands and then lands while its manifest is read, however little
    /// room is left beyond what it needs; a bundle without them is read whole first where the
    /// room could run out.
    @Test func declaredTotalsLetABundleLandWhileItsManifestIsReadOnANearlyFullDisk() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try bundleOfManyFiles(in: workspace)
        let withoutTotals = try build("good", in: workspace)
        final class Seen: @unchecked Sendable {
            var wholeFirst: [Bool] = []
        }
        let seen = Seen()
        var importer = BundleImporter(createdBy: "test")
        // 3,000 files of 100 bytes and a block each, with 100 blocks to spare: far less than any
        // bundle of this size could need (the ratio floor, 256 MiB).
        importer.measureFreeSpace = { BundleImporter.FreeSpace(destination: $0, available: 300_000 + 3100 * 4096, block: 4096) }
        importer.readsManifestWholeFirst = { seen.wholeFirst.append($0) }
        let outcome = try importer.restore(bundle, into: workspace.destination.path)
        #expect(outcome.summary.fileCount == 3000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.destination.path).count == 3000)
        _ = try importer.restore(withoutTotals, into: workspace.root.appendingPathComponent("second").path)
        #expect(seen.wholeFirst == [false, true])
    }

    @Test(arguments: refused)
    func hostileBundlesAreRefusedAndNothingChanges(_ name: String) throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build(name, in: workspace)
        let before = workspace.listing()
        #expect(throws: BundleImportError.self, "\(name)") {
            try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
        }
        #expect(workspace.listing() == before, "\(name) changed the workspace")
        #expect(try String(contentsOf: workspace.destination.appendingPathComponent("old.json"), encoding: .utf8) == "old\n")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/savetool-absolute-escape.json"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/save.json"))
    }

    @Test func truncatedAndCorruptedBundlesAreRefused() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("good", in: workspace)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: bundle))
        let before = workspace.listing()
        for (label, damaged) in [("truncated", bytes.prefix(bytes.count - 20)), ("flipped", Self.flipping(bytes, at: bytes.count / 2))] {
            let path = workspace.root.appendingPathComponent("\(label).tar.gz").path
            try damaged.write(to: URL(fileURLWithPath: path))
            #expect(throws: (any Error).self, "\(label)") { try BundleImporter(createdBy: "test").restore(path, into: workspace.destination.path) }
            try FileManager.default.removeItem(atPath: path)
        }
        #expect(workspace.listing() == before)
    }

    static func flipping(_ data: Data, at index: Int) -> Data {
        var copy = data
        copy[copy.startIndex + index] ^= 0xFF
        return copy
    }

    @Test func aGigabyteOfZerosIsRefusedBeforeAnythingIsWritten() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("zeros-bomb", in: workspace)
        let before = workspace.listing()
        #expect(throws: BundleImportError.self) { try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path) }
        #expect(workspace.listing() == before)
    }

    /// A folder holding a file of padding (40 MB of spaces, a thousandfold in gzip) is an
    /// ordinary folder: its bundle restores with the default limits, ratio or not. Savetool's
    /// own bundle of a folder's previous contents was refused by the ratio alone.
    @Test func paddingUnderTheFloorRestoresWhateverItsRatio() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let source = workspace.root.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data(repeating: 0x20, count: 40 << 20).write(to: source.appendingPathComponent("padding.dat"))
        let bundle = workspace.root.appendingPathComponent("padding.tar.gz").path
        try BundleExporter(createdAt: Date(), createdBy: "test").export(directory: source.path, to: bundle)
        let size = try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? Int ?? 0
        #expect(size > 0 && (40 << 20) / size > 200, "\(size) bytes: a ratio under the limit tests nothing")
        try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
        #expect(try Data(contentsOf: workspace.destination.appendingPathComponent("padding.dat")).count == 40 << 20)
    }

    /// A hundred thousand files are an ordinary large folder: imported by default. Only a limit
    /// the user sets refuses them, before anything is written.
    @Test func aHundredThousandEntriesRestoreUnlessALowerLimitIsSet() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("many-entries", in: workspace)
        let before = workspace.listing()
        var limited = BundleImporter(createdBy: "test")
        limited.limits.maxEntries = 10_000
        do {
            try limited.restore(bundle, into: workspace.destination.path)
            Issue.record("accepted 100,000 entries past a limit of 10,000")
        } catch let error as BundleImportError {
            guard case .limitExceeded = error else { Issue.record("\(error)"); return }
        }
        #expect(workspace.listing() == before)
        let outcome = try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
        #expect(outcome.summary.fileCount == 100_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.destination.path).count == 100_000)
    }

    // The import lands entries while the manifest is still being read (ManifestStream): a
    // 3,000-entry manifest is more than it reads before the first files land.

    /// A fault of the manifest found after files had landed is the one reported, as when the
    /// manifest was read whole first (not the checksum of the first file, found wrong earlier),
    /// and nothing of what landed remains.
    @Test func aManifestFaultFoundAfterFilesLandedIsTheOneReported() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("late-manifest-fault", in: workspace)
        let before = workspace.listing()
        do {
            try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
            Issue.record("accepted a manifest with an unreadable mode")
        } catch let error as BundleImportError {
            #expect("\(error)".contains("f2999 has the mode \"9999\""), "\(error)")
        }
        #expect(workspace.listing() == before)
    }

    /// A manifest out of export's order cannot be landed as it is read: it is read whole first,
    /// and the bundle restores (what was staged meanwhile is gone).
    @Test func aManifestOutOfOrderIsReadWholeAndRestores() throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = try build("unordered-late", in: workspace)
        let outcome = try BundleImporter(createdBy: "test").restore(bundle, into: workspace.destination.path)
        #expect(outcome.summary.fileCount == 3000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.destination.path).count == 3000)
        #expect(try String(contentsOf: workspace.destination.appendingPathComponent("f2999"), encoding: .utf8) == "2999\n")
        #expect(workspace.listing().filter { $0.contains(".savetool-") }.isEmpty, "\(workspace.listing().filter { $0.contains(".savetool-") })")
    }

    /// Limits hold for the running totals as entries land: a file past the point where the
    /// manifest's total breaks `--max-bytes` never lands, and the error names the whole total.
    /// A bundle of 3,000 files of 100 bytes, made in the workspace.
    func bundleOfManyFiles(in workspace: Workspace) throws -> String {
        let source = workspace.root.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for index in 0..<3000 {
            try Data(repeating: UInt8(ascii: "a"), count: 100).write(to: source.appendingPathComponent(String(format: "f%04d", index)))
        }
        let bundle = workspace.root.appendingPathComponent("many.tar.gz").path
        try BundleExporter(createdAt: Date(), createdBy: "test").export(directory: source.path, to: bundle)
        return bundle
    }

    /// The most entries an import said it had landed.
    final class Furthest: @unchecked Sendable {
        private let lock = NSLock()
        private var entries = 0
        func saw(_ count: Int) { lock.lock(); defer { lock.unlock() }; entries = max(entries, count) }
        var value: Int { lock.lock(); defer { lock.unlock() }; return entries }
    }

    /// With totals in its header (export's), the bundle is refused before anything lands; without
    /// them (an older bundle), the running totals stop the landing where they break the limit.
    @Test(arguments: [true, false])
    func noFilePastABrokenLimitLands(declaringTotals: Bool) throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = declaringTotals ? try bundleOfManyFiles(in: workspace) : try build("many-without-totals", in: workspace)
        let furthest = Furthest()
        var importer = BundleImporter(createdBy: "test")
        importer.limits.maxTotalBytes = 150_000
        importer.progress = { furthest.saw($0.entries) }
        let before = workspace.listing()
        do {
            try importer.restore(bundle, into: workspace.destination.path)
            Issue.record("accepted 300,000 bytes past a limit of 150,000")
        } catch let error as BundleImportError {
            guard case .limitExceeded = error else { Issue.record("\(error)"); return }
            #expect("\(error)".contains("the files total 300000 bytes"), "\(error)")
        }
        // How many land before the limit is found depends on the threads' timing (on this
        // machine, over a thousand): never one past it.
        #expect(furthest.value * 100 <= 150_000, "\(furthest.value) files of 100 bytes landed")
        if declaringTotals { #expect(furthest.value == 0, "\(furthest.value) files landed") }
        #expect(workspace.listing() == before)
    }

    /// A bundle larger than the room is refused with nothing landed, and the message gives the
    /// whole need: checked against the totals its header declares, or, for a bundle without
    /// them, after reading its manifest whole first where the free space could run out.
    @Test(arguments: [true, false])
    func aBundleTooLargeForTheFreeSpaceIsRefusedBeforeAnythingLands(declaringTotals: Bool) throws {
        let workspace = try Workspace()
        defer { try? FileManager.default.removeItem(at: workspace.root) }
        let bundle = declaringTotals ? try bundleOfManyFiles(in: workspace) : try build("many-without-totals", in: workspace)
        let furthest = Furthest()
        var importer = BundleImporter(createdBy: "test")
        importer.measureFreeSpace = { BundleImporter.FreeSpace(destination: $0, available: 2000 * 4096, block: 4096) }
        importer.progress = { furthest.saw($0.entries) }
        let before = workspace.listing()
        do {
            try importer.restore(bundle, into: workspace.destination.path)
            Issue.record("accepted 3,000 entries where 2,000 blocks are free")
        } catch let error as BundleImportError {
            guard case .noSpace = error else { Issue.record("\(error)"); return }
            #expect("\(error)".contains("300000 bytes of files, and up to a block of 4096 bytes for each of its 3000 entries"), "\(error)")
        }
        #expect(furthest.value == 0, "\(furthest.value) entries landed")
        #expect(workspace.listing() == before)
    }

    /// The staging tree never leaves itself, whatever path it is given: a `..` in a hard link's
    /// target or a file's folder is refused, and nothing is made above the tree.
    @Test func theStagingTreeNeverClimbsOut() throws {
        let root = try Processes.temporaryDirectory("staging-tree")
        defer { try? FileManager.default.removeItem(at: root) }
        let tree = root.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: false)
        let staging = try StagingTree(root: tree.path)
        let file = try staging.createFile("inside")
        close(file)
        for (name, attempt) in [
            ("a hard link's target", { try staging.makeHardLink("link", to: "../outside-made/x") }),
            ("a file's folder", { _ = try staging.createFile("a/../../outside-made/x") }),
            ("a link's folder", { try staging.makeSymbolicLink("./../outside-made/l", to: "inside") }),
        ] as [(String, () throws -> Void)] {
            #expect(throws: BundleImportError.self, "\(name)") { try attempt() }
        }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("outside-made").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["tree"])
        // A hard link is a second name for a file only: to a link (which would then lead from
        // another folder) or a folder, it is refused.
        try staging.makeDirectory("a")
        try staging.makeDirectory("a/b")
        try staging.makeSymbolicLink("a/b/up", to: "../..")
        #expect(throws: BundleImportError.self) { try staging.makeHardLink("z", to: "a/b/up") }
        #expect(throws: BundleImportError.self) { try staging.makeHardLink("y", to: "a") }
        try staging.makeHardLink("x", to: "inside")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path).sorted() == ["a", "inside", "x"])
    }

    @Test func unsafePaths() {
        for path in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/.", "a\\b"] {
            #expect(BundleImporter.unsafePathReason(path) != nil, "\(path)")
        }
        for path in ["a", "a/b.json", "Lojtari é.json", "玩家/🎮.plist", "..a", "a..b"] {
            #expect(BundleImporter.unsafePathReason(path) == nil, "\(path)")
        }
    }

    /// The old contents an import keeps whole are moved beside it without a rename that
    /// refuses to replace (which some file systems lack): never over anything, a FIFO and a
    /// link intact.
    @Test func oldContentsAreMovedAsideNeverOverAnything() throws {
        let root = try Processes.temporaryDirectory("move-aside")
        defer { try? FileManager.default.removeItem(at: root) }
        let old = root.appendingPathComponent(".saves.savetool-ABCDEF").path
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: false)
        #expect(mkfifo(old + "/pipe", 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: old + "/cloud", withDestinationPath: "/somewhere/else")
        let kept = root.appendingPathComponent("saves-before-import-2026").path
        try Data("taken\n".utf8).write(to: URL(fileURLWithPath: kept))
        try FileManager.default.createDirectory(atPath: kept + "-2", withIntermediateDirectories: false)
        try Data("x".utf8).write(to: URL(fileURLWithPath: kept + "-2/x"))
        #expect(BundleImporter.moveAside(old, to: kept) == kept + "-3")
        #expect(try FileManager.default.contentsOfDirectory(atPath: kept + "-3").sorted() == ["cloud", "pipe"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept + "-3/cloud") == "/somewhere/else")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "taken\n" && FileManager.default.fileExists(atPath: kept + "-2/x"))
        #expect(!FileManager.default.fileExists(atPath: old))
    }

    /// A name taken in the same second is passed over before the folder is read again: the
    /// next name, and what the bundle leaves out said once.
    @Test func theOriginalsTakeTheNextFreeNameAndWarnOnce() throws {
        let root = try Processes.temporaryDirectory("keeper")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try Data("{}".utf8).write(to: folder.appendingPathComponent("a.json"))
        #expect(mkfifo(folder.appendingPathComponent("pipe").path, 0o644) == 0)
        final class Said: @unchecked Sendable {
            private let lock = NSLock()
            private var lines: [String] = []
            func add(_ line: String) { lock.lock(); defer { lock.unlock() }; lines.append(line) }
            var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        }
        let said = Said()
        var keeper = OriginalsKeeper(createdBy: "test", purpose: "import")
        keeper.now = { Date(timeIntervalSince1970: 1_795_000_000) }
        keeper.warn = { said.add($0) }
        var made: [String] = []
        for _ in 0..<3 { made.append(URL(fileURLWithPath: try #require(try keeper.keep(nil, under: folder.path, in: root.path, name: "saves"))).lastPathComponent) }
        #expect(made == ["saves-before-import-2026-11-18T110640Z.tar.gz", "saves-before-import-2026-11-18T110640Z-2.tar.gz", "saves-before-import-2026-11-18T110640Z-3.tar.gz"])
        #expect(said.all.count == 3 && said.all.allSatisfy { $0.hasSuffix("pipe: a FIFO, left out (a bundle holds files, folders and links)") }, "\(said.all)")
    }
}
