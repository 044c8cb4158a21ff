import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `savetool import` killed with SIGKILL at random moments: afterwards the destination holds
/// either all of its old contents or all of the new ones — never a mix, never nothing.
@Suite("Import crash safety")
struct ImportCrashTests {
    /// Relative path → bytes of every file under `root`.
    static func contents(of root: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for path in Files.regularFiles(under: root.path) {
            result[path] = try Data(contentsOf: root.appendingPathComponent(path))
        }
        return result
    }

    static func write(_ files: [String: Data], into root: URL) throws {
        try? FileManager.default.removeItem(at: root)
        for (path, data) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
    }

    @Test func killedImportsLeaveTheOldOrTheNewContents() throws {
        let workspace = try Processes.temporaryDirectory("import-crash")
        defer { try? FileManager.default.removeItem(at: workspace) }
        var generator = SystemRandomNumberGenerator()
        func randomData(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        var newFiles: [String: Data] = [:]
        for index in 0..<150 { newFiles["Documents/slot-\(index).json"] = randomData(40_000) }
        let oldFiles: [String: Data] = ["Documents/slot-0.json": Data("old 0".utf8), "Library/old.plist": Data("old".utf8)]

        let source = workspace.appendingPathComponent("new")
        try Self.write(newFiles, into: source)
        let bundle = workspace.appendingPathComponent("new.tar.gz").path
        try #require(try CLI.run("export", source.path, "-o", bundle).status == 0)
        let destination = workspace.appendingPathComponent("saves")
        let backups = workspace.appendingPathComponent("backups")
        try FileManager.default.createDirectory(at: backups, withIntermediateDirectories: true)
        try Self.write(oldFiles, into: destination)

        var outcomes = (old: 0, new: 0)
        for round in 0..<30 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.executable)
            process.arguments = ["import", bundle, "--into", destination.path, "--backup-repo", backups.path, "-q"]
            try process.run()
            // Kill times spread evenly over the import's duration (0 to 700 ms), so that some land
            // before the swap and some after, however loaded the machine is.
            usleep(UInt32(round) * 24_000)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let now = try Self.contents(of: destination)
            if now == oldFiles {
                outcomes.old += 1
            } else if now == newFiles {
                outcomes.new += 1
                try Self.write(oldFiles, into: destination)  // start the next round from the old contents again
            } else {
                Issue.record("round \(round): the destination holds \(now.count) files, neither the old \(oldFiles.count) nor the new \(newFiles.count)")
                try Self.write(oldFiles, into: destination)
            }
        }
        // A complete import afterwards cleans up what the killed ones left beside the destination.
        let final = try CLI.run("import", bundle, "--into", destination.path, "--backup-repo", backups.path)
        #expect(final.status == 0, "\(final.errors)")
        #expect(try Self.contents(of: destination) == newFiles)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: workspace.path).filter { $0.contains(".savetool-") }
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")
        // Kills landed both before and after the swap.
        #expect(outcomes.old > 0 && outcomes.new > 0, "old \(outcomes.old), new \(outcomes.new)")
    }
}
