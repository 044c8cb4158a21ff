import Foundation
import TestSupport
import Testing

/// An installed savetool is the binary alone, copied anywhere (as `scripts/install` and the
/// cron, systemd and launchd recipes of docs/backups.md assume): the built-in kinds are
/// compiled into it, so every command works with no build folder or resource bundle beside it.
@Suite("the binary alone")
struct InstalledBinaryTests {
    @Test func theBinaryCopiedAloneRunsEveryKindOfCommand() throws {
        let root = try Processes.temporaryDirectory("installed")
        defer { try? FileManager.default.removeItem(at: root) }
        let bin = root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let binary = bin.appendingPathComponent("savetool").path
        try FileManager.default.copyItem(atPath: CLI.executable, toPath: binary)
        #expect(try FileManager.default.contentsOfDirectory(atPath: bin.path) == ["savetool"])
        let saves = root.appendingPathComponent("kape")
        try FileManager.default.copyItem(atPath: CLI.sample("kape"), toPath: saves.path)
        func run(_ arguments: String...) throws -> ProcessResult {
            try Processes.run([binary] + arguments, directory: root)
        }

        let formats = try run("formats", "list")
        #expect(formats.status == 0 && formats.outputText.contains("kape.tournament"), "\(formats.errors)")
        let tournament = "kape/Documents/current_tournament.json"
        let inspected = try run("inspect", tournament)
        #expect(inspected.status == 0 && inspected.outputText.contains("kape.tournament"), "\(inspected.errors)")
        let validated = try run("validate", tournament)
        #expect(validated.status == 0, "\(validated.errors)")
        let migrated = try run("migrate", "kape/history", "--dry-run")
        #expect(migrated.status == 0 && migrated.outputText.contains("6 would be migrated, 1 unchanged"), "\(migrated.outputText) \(migrated.errors)")
        let backup = try run("backup", "create", "kape", "--repo", "backups")
        #expect(backup.status == 0 && backup.outputText.contains("created: backups/kape-"), "\(backup.errors)")
    }
}
