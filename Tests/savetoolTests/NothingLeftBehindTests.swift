import Foundation
import TestSupport
import Testing

/// Every command that writes through a temporary file or folder — an export's bundle, an
/// import's staging folder, a migration's originals and outputs, a backup, a large manifest
/// spooled while it is read — leaves nothing in the temporary directory or beside its outputs
/// but what it reports.
@Suite("nothing left behind")
struct NothingLeftBehindTests {
    @Test func commandsLeaveOnlyWhatTheyReport() throws {
        let root = try Processes.temporaryDirectory("leftovers")
        defer { try? FileManager.default.removeItem(at: root) }
        let temporary = root.appendingPathComponent("tmp")
        let work = root.appendingPathComponent("work")
        for folder in [temporary, work] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try FileManager.default.copyItem(atPath: CLI.sample("kape"), toPath: work.appendingPathComponent("kape").path)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary.path
        func run(_ arguments: String...) throws {
            let result = try Processes.run([CLI.executable] + arguments, directory: work, environment: environment)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
        }
        try run("export", "kape", "-o", "kape.tar.gz")
        try run("import", "kape.tar.gz", "--into", "restored")
        try run("import", "kape.tar.gz", "--into", "restored")  // over existing contents: they are kept first
        try run("migrate", "kape/history", "--out", "migrated")
        try run("migrate", "kape/history", "--in-place")
        try run("backup", "create", "kape", "--repo", "backups", "--date", "2026-11-20")
        try run("backup", "create", "kape", "--repo", "backups", "--date", "2026-11-20")
        try run("backup", "verify", "--repo", "backups")

        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
        let left = try FileManager.default.contentsOfDirectory(atPath: work.path).sorted()
        #expect(left.filter { $0.hasPrefix(".") }.isEmpty, "\(left)")
        #expect(left.filter { !$0.contains("-before-") } == ["backups", "kape", "kape.tar.gz", "migrated", "restored"])
        // The originals, one bundle for each command that replaced something.
        #expect(left.filter { $0.hasPrefix("restored-before-import-") }.count == 1)
        let kape = try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("kape").path).sorted()
        #expect(kape.count == 3 && kape.prefix(2) == ["Documents", "history"] && kape[2].hasPrefix("history-before-migrate-"), "\(kape)")
        // The repository: its bundles and its lock file (kept: the lock is the file's flock, not its existence).
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("backups").path).filter { !$0.hasSuffix(".tar.gz") } == [".savetool-lock"])
    }
}
