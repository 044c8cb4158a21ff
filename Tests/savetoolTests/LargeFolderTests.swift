import Foundation
import TestSupport
import Testing

/// A large folder backs up, is `unchanged` the second time (nothing written), and restores with
/// the plain documented `import`. 20,000 files in every run (past the 10,000 where this used to
/// break); set SAVETOOL_LARGE_TESTS=1 for 100,000.
@Suite("large folders")
struct LargeFolderTests {
    static let fileCount = ProcessInfo.processInfo.environment["SAVETOOL_LARGE_TESTS"] == "1" ? 100_000 : 20_000

    @Test func unchangedAtAnySizeAndRestoredByThePlainImport() throws {
        let directory = try Processes.temporaryDirectory("large")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("saves").path
        let made = try Processes.run(["python3", "-c", """
            import os, sys
            root, count = sys.argv[1], int(sys.argv[2])
            for index in range(count):
                folder = f"{root}/device-{index // 1000}"
                if index % 1000 == 0: os.makedirs(folder)
                with open(f"{folder}/save-{index}.json", "w") as f: f.write('{"n": %d}' % index)
            """, source, String(Self.fileCount)])
        #expect(made.status == 0, "\(made.errors)")
        let repository = directory.appendingPathComponent("backups").path
        let first = try CLI.run("backup", "create", source, "--repo", repository, "--date", "2026-11-20")
        #expect(first.status == 0 && first.outputText.contains("created: ") && first.outputText.contains("(\(Self.fileCount) files)"), "\(first.outputText) \(first.errors)")
        let backup = repository + "/saves-2026-11-20.tar.gz"
        let before = try FileManager.default.attributesOfItem(atPath: backup)
        let second = try CLI.run("backup", "create", source, "--repo", repository, "--date", "2026-11-20")
        #expect(second.outputText.hasPrefix("unchanged: \(backup)"), "\(second.outputText) \(second.errors)")
        let after = try FileManager.default.attributesOfItem(atPath: backup)
        #expect(before[.modificationDate] as? Date == after[.modificationDate] as? Date && before[.systemFileNumber] as? Int == after[.systemFileNumber] as? Int)
        #expect(try FileManager.default.contentsOfDirectory(atPath: repository).filter { !$0.hasPrefix(".") } == ["saves-2026-11-20.tar.gz"])
        let restored = directory.appendingPathComponent("restored").path
        let imported = try CLI.run("import", backup, "--into", restored)
        #expect(imported.status == 0 && imported.outputText.hasPrefix("restored \(Self.fileCount) files"), "\(imported.errors)")
        let same = try Processes.run(["diff", "-r", source, restored])
        #expect(same.status == 0, "\(same.outputText.prefix(500))")
    }
}
