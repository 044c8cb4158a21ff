import Foundation
import SaveKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("savetool backup")
struct BackupCommandTests {
    struct Fixture {
        let root: URL
        var repo: String { root.appendingPathComponent("repo").path }
        var source: URL { root.appendingPathComponent("kape") }

        init(size: Int = 20_000) throws {
            root = try Processes.temporaryDirectory("backup-cli")
            try FileManager.default.createDirectory(atPath: root.appendingPathComponent("repo").path, withIntermediateDirectories: true)
            let documents = root.appendingPathComponent("kape/Documents")
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            var generator = SystemRandomNumberGenerator()
            for index in 0..<5 {
                try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: documents.appendingPathComponent("slot-\(index).bin"))
            }
        }

        func repoFiles() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: repo).sorted() }
    }

    @Test func createListVerifyPrune() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        // An empty repository: verify says it checked nothing, rather than nothing at all.
        try FileManager.default.createDirectory(atPath: fixture.repo, withIntermediateDirectories: true)
        let empty = try CLI.run("backup", "verify", "--repo", fixture.repo)
        #expect(empty.status == 0 && empty.outputText == "no backups to verify in \(fixture.repo)\n", "\(empty.outputText)\(empty.errors)")
        for day in ["2026-11-18", "2026-11-19", "2026-11-20"] {
            let created = try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", day)
            #expect(created.status == 0, "\(created.errors)")
            #expect(created.outputText.hasPrefix("created: \(fixture.repo)/kape-\(day).tar.gz (5 files)"))
        }
        let again = try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-20")
        #expect(again.outputText.hasPrefix("unchanged: "))
        let list = try CLI.run("backup", "list", "--repo", fixture.repo)
        #expect(list.outputText.split(separator: "\n").map { String($0.prefix(10)) } == ["2026-11-20", "2026-11-19", "2026-11-18"])
        #expect(list.outputText.components(separatedBy: "verified").count == 4)
        #expect(try CLI.run("backup", "verify", "--repo", fixture.repo).status == 0)
        let verifiedJSON = try CLI.run("--json", "backup", "verify", "--repo", fixture.repo)
        #expect(try Codecs.value(verifiedJSON.outputText).arrayValue?.map { $0["ok"] } == [true, true, true], "\(verifiedJSON.outputText)")
        let pruned = try CLI.run("backup", "prune", "--repo", fixture.repo, "--keep", "1", "--dry-run")
        #expect(pruned.outputText.contains("would delete: \(fixture.repo)/kape-2026-11-18.tar.gz"))
        #expect(try fixture.repoFiles().filter { $0.hasSuffix(".tar.gz") }.count == 3)
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--keep", "0").status == 64)
        #expect(try CLI.run("backup", "prune", "--repo", fixture.repo, "--keep", "0").status == 64)
    }

    /// A folder that is no repository (a save folder given to --repo by mistake) is refused by
    /// list, verify and prune, and nothing is written into it; a first create that fails leaves
    /// no repository behind, so that the next one makes it and says so.
    @Test func aFolderThatIsNoRepositoryIsSaidToBeOne() throws {
        let fixture = try Fixture(size: 10)
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        let saves = fixture.source.path
        for arguments in [["list"], ["verify"], ["prune", "--keep", "2", "--dry-run"], ["prune", "--keep", "2"]] {
            let refused = try Processes.run([CLI.executable, "backup"] + arguments + ["--repo", saves])
            #expect(refused.status == 66, "\(arguments): \(refused.outputText) \(refused.errors)")
            #expect(refused.errors == "savetool: \(saves): holds no backups and was never a repository, expected a folder that backup create made\n", "\(refused.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: saves + "/.savetool-lock"), "nothing written into it")

        let file = fixture.root.appendingPathComponent("a-file").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let onAFile = try CLI.run("backup", "create", saves, "--repo", file)
        #expect(onAFile.status == 73 && onAFile.errors == "savetool: \(file): a file, expected a folder for the backups\n", "\(onAFile.errors)")

        let fresh = fixture.root.appendingPathComponent("fresh").path
        let missing = try CLI.run("backup", "create", fixture.root.appendingPathComponent("no-such-saves").path, "--repo", fresh)
        #expect(missing.status == 66, "\(missing.errors)")
        // A source that fails part way (a name no bundle holds), not only one that is missing.
        let odd = saves + "/Documents/a\\b.json"
        try Data("{}".utf8).write(to: URL(fileURLWithPath: odd))
        let failed = try CLI.run("backup", "create", saves, "--repo", fresh)
        #expect(failed.status == 65, "\(failed.errors)")
        #expect(!FileManager.default.fileExists(atPath: fresh), "no repository left by a failed first run")
        try FileManager.default.removeItem(atPath: odd)
        let made = try CLI.run("backup", "create", saves, "--repo", fresh, "--date", "2026-11-20")
        #expect(made.status == 0 && made.outputText.contains("created repository \(fresh)"), "\(made.outputText) \(made.errors)")
    }

    @Test func corruptionIsNamedByVerify() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-20", "--compression", "none").status == 0)
        let path = fixture.repo + "/kape-2026-11-20.tar"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count / 2] ^= 0x01  // inside a file's data
        try bytes.write(to: URL(fileURLWithPath: path))
        let verified = try CLI.run("backup", "verify", "--repo", fixture.repo)
        #expect(verified.status == 65)
        #expect(verified.errors.contains("savetool: \(path): files/Documents/slot-"))
        #expect(verified.errors.contains("SHA-256"))

        // The folder has not changed, but the day's backup has: it is written again, never
        // called unchanged.
        let again = try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-20", "--compression", "none")
        #expect(again.status == 0, "\(again.errors)")
        #expect(again.outputText.hasPrefix("replaced: \(path)"), "\(again.outputText)")
        #expect(again.errors.contains("\(path): the day's backup fails its checks ("))
        #expect(try CLI.run("backup", "verify", "--repo", fixture.repo).status == 0)
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-20", "--compression", "none").outputText.hasPrefix("unchanged: "))

        // Compressed, a flipped byte spoils the manifest before any file: said all the same.
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-21").status == 0)
        let compressed = fixture.repo + "/kape-2026-11-21.tar.gz"
        var packed = try Data(contentsOf: URL(fileURLWithPath: compressed))
        packed[20] ^= 0x01  // inside the manifest's own stream, the first
        try packed.write(to: URL(fileURLWithPath: compressed))
        let rewritten = try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-21")
        #expect(rewritten.status == 0 && rewritten.outputText.hasPrefix("replaced: \(compressed)"), "\(rewritten.outputText)")
        #expect(rewritten.errors.contains("\(compressed): the day's backup cannot be read ("), "\(rewritten.errors)")
    }

    /// A day's file that is not a readable backup (cut short, or junk under a backup's name)
    /// takes no day's place in retention: counted, it had the good backups deleted for it.
    @Test func retentionCountsOnlyReadableBackups() throws {
        let fixture = try Fixture(size: 100)
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        for day in ["2026-11-20", "2026-11-21", "2026-11-22"] {
            #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", day).status == 0)
        }
        let cut = fixture.repo + "/kape-2026-11-22.tar.gz", junk = fixture.repo + "/kape-2026-11-23.tar.gz"
        #expect(truncate(cut, 100) == 0)
        try Data("junk\n".utf8).write(to: URL(fileURLWithPath: junk))
        let pruned = try CLI.run("backup", "prune", "--repo", fixture.repo, "--keep", "1")
        #expect(pruned.status == 0, "\(pruned.errors)")
        #expect(pruned.outputText == "deleted: \(fixture.repo)/kape-2026-11-20.tar.gz\n")
        #expect(pruned.errors.contains("\(cut): its manifest cannot be read, so it keeps no day in retention; left as it is"))
        #expect(pruned.errors.contains("\(junk): its manifest cannot be read"))
        #expect(try fixture.repoFiles().filter { $0.hasPrefix("kape-") } == ["kape-2026-11-21.tar.gz", "kape-2026-11-22.tar.gz", "kape-2026-11-23.tar.gz"])
        #expect(try CLI.run("backup", "verify", "--repo", fixture.repo, "kape-2026-11-21.tar.gz").status == 0, "the newest good backup is kept")
    }

    @Test func aHeldLockMeansExit75() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["flock", fixture.repo + "/.savetool-lock", "sleep", "6"]
        try holder.run()
        defer { holder.terminate() }
        usleep(300_000)
        let blocked = try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo)
        #expect(blocked.status == 75, "\(blocked.errors)")
        #expect(blocked.errors.contains("another savetool holds the repository's lock"))
        holder.terminate()
        holder.waitUntilExit()
        // A lock whose holder is gone blocks nobody.
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo).status == 0)
    }

    /// Only writers take the lock: while one holds it, `list` and `verify` still answer (a long
    /// verify never costs an hourly `create` its run), and another writer waits, then exits 75.
    @Test func readersTakeNoLock() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo).status == 0)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["flock", fixture.repo + "/.savetool-lock", "sleep", "60"]
        try holder.run()
        // flock and its sleep are one process group (Foundation spawns one): both stopped,
        // and the lock with them.
        defer { kill(-holder.processIdentifier, SIGKILL) }
        usleep(300_000)
        for command in [["list"], ["verify"]] {
            let run = try Processes.run([CLI.executable, "backup"] + command + ["--repo", fixture.repo])
            #expect(run.status == 0, "\(command): \(run.errors)")
        }
        let writer = try CLI.run("backup", "prune", "--repo", fixture.repo, "--keep", "1")
        #expect(writer.status == 75 && writer.errors.contains("another savetool holds the repository's lock"), "\(writer.errors)")
    }

    @Test func aFullDiskFailsWith74AndLeavesEarlierBackupsIntact() throws {
        let fixture = try Fixture(size: 400_000)
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-19", "--compression", "none").status == 0)
        let before = try fixture.repoFiles()
        // A file-size limit of 1 MiB stands in for a full disk: the 2 MB backup cannot be written.
        let full = try Processes.run([
            "bash", "-c", "ulimit -f 1024; exec \"$0\" \"$@\"", CLI.executable, "backup", "create", fixture.source.path,
            "--repo", fixture.repo, "--date", "2026-11-20", "--compression", "none", "--keep", "1",
        ])
        #expect(full.status == 74, "\(full.errors)")
        #expect(full.errors.contains("file too large"))
        #expect(try fixture.repoFiles() == before, "a partial backup or a deletion")
        #expect(try CLI.run("backup", "verify", "--repo", fixture.repo).status == 0)
    }

    @Test func killedCreatesNeverLeaveABrokenBackup() throws {
        let fixture = try Fixture(size: 300_000)
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<30 {
            // The source changes between rounds, so that days get replaced as well as created.
            try Data("round \(round)".utf8).write(to: fixture.source.appendingPathComponent("Documents/round.txt"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.executable)
            process.arguments = ["backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-\(10 + round % 8)", "--keep", "5", "-q"]
            try process.run()
            usleep(UInt32.random(in: 0...120_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let verified = try CLI.run("backup", "verify", "--repo", fixture.repo)
            #expect(verified.status == 0, "round \(round): \(verified.errors)")
        }
        // The next complete run removes what the killed ones left.
        #expect(try CLI.run("backup", "create", fixture.source.path, "--repo", fixture.repo, "--date", "2026-11-20").status == 0)
        #expect(try fixture.repoFiles().filter { $0.contains(".savetool-") && $0 != ".savetool-lock" }.isEmpty)
        let list = try CLI.run("backup", "list", "--repo", fixture.repo)
        #expect(!list.outputText.contains("FAILS"))
    }
}
