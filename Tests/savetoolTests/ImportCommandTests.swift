import Foundation
import TestSupport
import Testing

@Suite("savetool import")
struct ImportCommandTests {
    @Test func dryRunThenRestoreThenRefuseADamagedBundle() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("samples.tar.gz").path
        #expect(try CLI.run("export", Corpus.packageRoot.appendingPathComponent("samples").path, "-o", bundle).status == 0)
        let target = directory.appendingPathComponent("restored").path

        let dryRun = try CLI.run("import", bundle, "--into", target, "--dry-run")
        #expect(dryRun.status == 0)
        #expect(dryRun.outputText == "verified 7 files in \(bundle); nothing written\n")
        #expect(!FileManager.default.fileExists(atPath: target))

        let restored = try CLI.run("import", bundle, "--into", target)
        #expect(restored.status == 0, "\(restored.errors)")
        #expect(try CLI.run("diff", CLI.blocks, target + "/blocks/Library/Preferences/com.example.blocks.plist").status == 0)

        // One byte changed inside a file's data: the checksum catches what gzip does not.
        let tar = directory.appendingPathComponent("plain.tar").path
        #expect(try CLI.run("export", Corpus.packageRoot.appendingPathComponent("samples").path, "-o", tar).status == 0)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: tar))
        let marker = try #require(bytes.range(of: Data("\"classic\"".utf8)))
        bytes[marker.lowerBound + 1] = UInt8(ascii: "C")
        try bytes.write(to: URL(fileURLWithPath: tar))
        let before = try FileManager.default.subpathsOfDirectory(atPath: target).sorted()
        let refused = try CLI.run("import", tar, "--into", target)
        #expect(refused.status == 65)
        #expect(refused.errors.hasPrefix("savetool: \(tar): files/"))
        #expect(refused.errors.contains(": SHA-256 ") && refused.errors.contains(", expected "))
        #expect(try FileManager.default.subpathsOfDirectory(atPath: target).sorted() == before)
        #expect(try CLI.run("import", "/nonexistent.tar.gz", "--into", target).status == 66)
    }
}
