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
        #expect(dryRun.outputText.hasPrefix("verified \(CLI.sampleFileCount) files in \(bundle); nothing written\n"))
        // It lists what the import would migrate: the same 16 files `migrate samples` migrates.
        #expect(dryRun.outputText.split(separator: "\n").filter { $0.hasPrefix("would migrate ") }.count == 16)
        #expect(dryRun.outputText.contains("would migrate kape/history/2024-v1/Documents/current_tournament.json (kape.tournament) from version 1 to 3\n"))
        #expect(!FileManager.default.fileExists(atPath: target))

        let restored = try CLI.run("import", bundle, "--into", target)
        #expect(restored.status == 0, "\(restored.errors)")
        #expect(try CLI.run("diff", CLI.kingdoms, target + "/kingdom/Library/Preferences/com.example.kingdoms.plist").status == 0)

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

    @Test func importMigratesRecognisedFilesUnlessToldNot() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", Corpus.packageRoot.appendingPathComponent("samples/kape").path, "-o", bundle).status == 0)
        let migrated = directory.appendingPathComponent("migrated").path
        let result = try CLI.run("import", bundle, "--into", migrated)
        #expect(result.outputText.contains("migrated history/2024-v1/Documents/current_tournament.json (kape.tournament) from version 1 to 3"))
        #expect(try CLI.run("validate", migrated + "/history/2024-v1/Documents/current_tournament.json").outputText.contains("version 3 of 3 (its path matches Documents/current_tournament.json), valid"))
        let raw = directory.appendingPathComponent("raw").path
        #expect(try CLI.run("import", bundle, "--into", raw, "--no-migrate").status == 0)
        #expect(try CLI.run("validate", raw + "/history/2024-v1/Documents/current_tournament.json").outputText.contains("version 1 of 3 (its path matches Documents/current_tournament.json), valid"))
    }
}
