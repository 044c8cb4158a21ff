import Foundation
import SaveArchive
import SaveKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `backup create|list|verify|prune --repo s3://…` and `import s3://…` against a real
/// S3-compatible server (moto, started by the tests on 127.0.0.1, signatures checked).
@Suite("backups on S3")
struct RemoteBackupCommandTests {
    static func run(_ server: MotoServer, _ arguments: String..., secret: String? = nil) throws -> ProcessResult {
        var variables = server.variables
        if let secret { variables["AWS_SECRET_ACCESS_KEY"] = secret }
        return try Processes.run([CLI.executable] + arguments, environment: variables)
    }

    @Test func createListVerifyImportPrune() throws {
        let server = try MotoServer.shared()
        let repo = "s3://\(try server.makeBucket())/devices/pixel-7"
        let root = try Processes.temporaryDirectory("s3-backups")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = CLI.sample("kape")
        let first = try Self.run(server, "backup", "create", source, "--repo", repo, "--date", "2026-11-20")
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.outputText == "created: \(repo)/kape-2026-11-20.tar.gz (\(Files.regularFiles(under: source).count) files)\n")
        let again = try Self.run(server, "backup", "create", source, "--repo", repo, "--date", "2026-11-20")
        #expect(again.outputText.hasPrefix("unchanged: \(repo)/kape-2026-11-20.tar.gz"), "nothing changed: nothing written")
        #expect(try Self.run(server, "backup", "create", source, "--repo", repo, "--date", "2026-11-21").status == 0)
        let list = try Self.run(server, "backup", "list", "--repo", repo)
        #expect(list.outputText.split(separator: "\n").map { String($0.prefix(16)) } == ["2026-11-21  kape", "2026-11-20  kape"])
        let verify = try Self.run(server, "backup", "verify", "--repo", repo)
        #expect(verify.status == 0 && verify.outputText.components(separatedBy: "ok: ").count == 3, "\(verify.outputText)\(verify.errors)")

        // Import straight from the bucket restores exactly what importing the same bundle from
        // disk restores.
        let remote = root.appendingPathComponent("from-s3").path, local = root.appendingPathComponent("from-disk").path
        #expect(try Self.run(server, "import", "\(repo)/kape-2026-11-21.tar.gz", "--into", remote, "--no-migrate").status == 0)
        let bundle = root.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", source, "-o", bundle).status == 0)
        #expect(try CLI.run("import", bundle, "--into", local, "--no-migrate").status == 0)
        let files = Files.regularFiles(under: remote)
        #expect(files == Files.regularFiles(under: local) && files.count > 0)
        for file in files {
            #expect(try Data(contentsOf: URL(fileURLWithPath: remote + "/" + file)) == Data(contentsOf: URL(fileURLWithPath: local + "/" + file)), "\(file)")
        }
        // export -o s3://… uploads with a marker, and imports back byte for byte; never over an existing object.
        let exported = try Self.run(server, "export", source, "-o", "\(repo)/handover.tar.zst")
        #expect(exported.status == 0, "\(exported.errors)")
        let handover = root.appendingPathComponent("handover").path
        #expect(try Self.run(server, "import", "\(repo)/handover.tar.zst", "--into", handover, "--no-migrate").status == 0)
        #expect(Files.regularFiles(under: handover) == files)
        #expect(try Self.run(server, "export", source, "-o", "\(repo)/handover.tar.zst").status == 73)
        // Only a marked (complete) backup imports.
        let unmarked = try Self.run(server, "import", "\(repo)/kape-2026-11-19.tar.gz", "--into", root.appendingPathComponent("x").path)
        #expect(unmarked.status == 66)
        #expect(unmarked.errors.contains("no complete backup of that name"))

        let pruned = try Self.run(server, "backup", "prune", "--repo", repo, "--keep", "1")
        #expect(pruned.outputText == "deleted: \(repo)/kape-2026-11-20.tar.gz\n")
        #expect(try Self.run(server, "backup", "list", "--repo", repo).outputText.split(separator: "\n").count == 1)
    }

    /// One name, one source, on every day, as in a folder: another folder under the same name
    /// on another day was accepted on S3 (only the day's backup was compared), and retention
    /// then deleted the first folder's backups.
    @Test func anotherFolderUnderTheSameNameIsRefusedOnAnyDay() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let repo = "s3://\(bucket)/names"
        let root = try Processes.temporaryDirectory("s3-names")
        defer { try? FileManager.default.removeItem(at: root) }
        for (folder, file) in [("one/big", "a.txt"), ("two/big", "b.txt")] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
            try Data("x\n".utf8).write(to: root.appendingPathComponent(folder + "/" + file))
        }
        let one = root.appendingPathComponent("one/big").path, two = root.appendingPathComponent("two/big").path
        #expect(try Self.run(server, "backup", "create", one, "--repo", repo, "--date", "2026-11-01", "-q").status == 0)
        for day in ["2026-11-02", "2026-11-01", "2026-10-30"] {
            let other = try Self.run(server, "backup", "create", two, "--repo", repo, "--date", day, "--keep", "1")
            #expect(other.status == 64, "\(day): \(other.outputText)\(other.errors)")
            #expect(other.errors.hasPrefix("savetool: \(repo)/big-2026-11-01.tar.gz: a backup of \(FileIO.realPath(one)!) under the name big, expected backups of \(FileIO.realPath(two)!) to have a name of their own"), "\(other.errors)")
        }
        #expect(try Self.run(server, "backup", "list", "--repo", repo).outputText.split(separator: "\n").map { String($0.prefix(15)) } == ["2026-11-01  big"])
        // A marker written before markers named their folder: the bundle's manifest says it.
        let markerKey = "names/big-2026-11-01.tar.gz.complete"
        var marker = try Codecs.value(try server.text(bucket: bucket, key: markerKey))
        #expect(marker["sourcePath"] == .string(FileIO.realPath(one)!))
        marker = .dictionary(marker.dictionaryValue!.filter { $0.key != "sourcePath" })
        try server.put(bucket: bucket, key: markerKey, text: try Codecs.compactJSON(marker))
        let old = try Self.run(server, "backup", "create", two, "--repo", repo, "--date", "2026-11-03")
        #expect(old.status == 64 && old.errors.contains("a backup of \(FileIO.realPath(one)!) under the name big"), "\(old.errors)")
        // The same folder goes on under its name, and another name takes the other folder.
        #expect(try Self.run(server, "backup", "create", one, "--repo", repo, "--date", "2026-11-02", "-q").status == 0)
        #expect(try Self.run(server, "backup", "create", two, "--repo", repo, "--date", "2026-11-02", "--name", "big-two", "-q").status == 0)
    }

    /// Forged or broken objects in the bucket: a marker that is not JSON, or whose size is not
    /// the bundle's, is a damaged backup: listed as failing (65), failed by verify, refused by
    /// import, and written again by the next `create` of its day (they were once left out with a
    /// warning: list and verify said 0, and that day's `create` failed on every run). A bundle
    /// whose bytes are not what its marker says is refused by import (65) with nothing written;
    /// an s3:// address without an object name is a usage error (64); refused credentials are
    /// 77 for import too, never "no such backup".
    @Test func forgedMarkersAndBundlesAreRefused() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let repo = "s3://\(bucket)/qa"
        let root = try Processes.temporaryDirectory("s3-forged")
        defer { try? FileManager.default.removeItem(at: root) }
        try server.put(bucket: bucket, key: "qa/kape-2026-11-01.tar.gz", text: "not a bundle")
        try server.put(bucket: bucket, key: "qa/kape-2026-11-01.tar.gz.complete", text: "{not json")
        try server.put(bucket: bucket, key: "qa/kape-2026-11-02.tar.gz", text: "not a bundle")
        try server.put(bucket: bucket, key: "qa/kape-2026-11-02.tar.gz.complete",
                       text: #"{"format": "savetool.backup-marker/1", "backup": "kape-2026-11-02.tar.gz", "size": 999, "sha256": "00", "files": 1}"#)
        try server.put(bucket: bucket, key: "qa/kape-2026-11-03.tar.gz", text: "not a bundle")
        try server.put(bucket: bucket, key: "qa/kape-2026-11-03.tar.gz.complete",
                       text: #"{"format": "savetool.backup-marker/1", "backup": "kape-2026-11-03.tar.gz", "size": 12, "sha256": "\#(String(repeating: "0", count: 64))", "files": 1}"#)
        let listed = try Self.run(server, "backup", "list", "--repo", repo)
        #expect(listed.status == 65, "\(listed.errors)")
        let rows = listed.outputText.split(separator: "\n").map(String.init)
        #expect(rows.map { String($0.prefix(10)) } == ["2026-11-03", "2026-11-02", "2026-11-01"], "\(listed.outputText)")
        #expect(rows.count == 3 && rows[0].hasSuffix("complete (marked; backup verify checks it)"), "\(listed.outputText)")
        #expect(rows.count == 3 && rows[1].contains("FAILS: 12 bytes where its marker says 999"), "\(listed.outputText)")
        #expect(rows.count == 3 && rows[2].contains("FAILS: not a savetool marker for kape-2026-11-01.tar.gz"), "\(listed.outputText)")
        #expect(listed.errors == "savetool: \(repo): 2 backups are damaged\n", "\(listed.errors)")
        for day in ["2026-11-01", "2026-11-02"] {
            let verified = try Self.run(server, "backup", "verify", "--repo", repo, "kape-\(day).tar.gz")
            #expect(verified.status == 65, "\(verified.errors)")
            #expect(verified.errors.hasPrefix("savetool: \(repo)/kape-\(day).tar.gz"), "\(verified.errors)")
            let imported = try Self.run(server, "import", "\(repo)/kape-\(day).tar.gz", "--into", root.appendingPathComponent("x").path)
            #expect(imported.status == 65, "\(imported.errors)")
        }
        let wrongSecret = try Self.run(server, "import", "\(repo)/kape-2026-11-03.tar.gz", "--into", root.appendingPathComponent("x").path, secret: "not-the-secret")
        #expect(wrongSecret.status == 77, "\(wrongSecret.errors)")
        #expect(wrongSecret.errors.contains("the object store refused the credentials"), "\(wrongSecret.errors)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("x").path))
        let into = root.appendingPathComponent("restored").path
        let imported = try Self.run(server, "import", "\(repo)/kape-2026-11-03.tar.gz", "--into", into)
        #expect(imported.status == 65, "\(imported.errors)")
        #expect(imported.errors.contains("kape-2026-11-03.tar.gz: its SHA-256 is"), "\(imported.errors)")
        #expect(!FileManager.default.fileExists(atPath: into), "nothing written")
        let verified = try Self.run(server, "backup", "verify", "--repo", repo)
        #expect(verified.status == 65, "\(verified.errors)")
        let noObject = try Self.run(server, "import", "s3://\(bucket)", "--into", into)
        #expect(noObject.status == 64, "\(noObject.errors)")
        #expect(noObject.errors.contains("no object name, expected s3://bucket/prefix/<name>.tar.gz"), "\(noObject.errors)")
        for prefixOnly in ["\(repo)/", "\(repo)/exports//"] {
            let exported = try Self.run(server, "export", CLI.sample("kape"), "-o", prefixOnly)
            #expect(exported.status == 64, "\(prefixOnly): \(exported.errors)")
            #expect(exported.errors.contains("no object name, expected s3://bucket/prefix/<name>.tar.gz"), "\(exported.errors)")
            #expect(try Self.run(server, "import", prefixOnly, "--into", into).status == 64)
        }
        #expect(try server.keys(bucket: bucket).allSatisfy { !$0.hasSuffix("/") && !$0.hasSuffix("/.complete") }, "no object named like a folder")

        // Retention neither counts nor deletes a damaged backup: with one day kept, the good
        // one stays, and so do the damaged ones, for someone to look at.
        let pruned = try Self.run(server, "backup", "prune", "--repo", repo, "--keep", "1")
        #expect(pruned.status == 0 && !pruned.outputText.contains("deleted"), "\(pruned.outputText)\(pruned.errors)")
        #expect(Set(try server.keys(bucket: bucket)).isSuperset(of: ["qa/kape-2026-11-01.tar.gz", "qa/kape-2026-11-02.tar.gz", "qa/kape-2026-11-03.tar.gz"]))

        // The next backup of a damaged day replaces it, whether the marker or the bundle is bad.
        for day in ["2026-11-01", "2026-11-02"] {
            let again = try Self.run(server, "backup", "create", CLI.sample("kape"), "--repo", repo, "--date", day, "--keep", "30")
            #expect(again.status == 0, "\(again.errors)")
            #expect(again.outputText.hasPrefix("replaced: \(repo)/kape-\(day).tar.gz"), "\(again.outputText)")
            #expect(again.errors.contains("\(repo)/kape-\(day).tar.gz: ") && again.errors.contains("the day's backup is written again"), "\(again.errors)")
            #expect(try Self.run(server, "backup", "verify", "--repo", repo, "kape-\(day).tar.gz").status == 0)
        }
        // A bundle damaged inside, its size as its marker says: brought down to compare, found
        // unreadable and written again, without a warning that it is "left as it is".
        let inside = try Self.run(server, "backup", "create", CLI.sample("kape"), "--repo", repo, "--date", "2026-11-03", "--keep", "30")
        #expect(inside.status == 0 && inside.outputText.hasPrefix("replaced: \(repo)/kape-2026-11-03.tar.gz"), "\(inside.outputText)\(inside.errors)")
        #expect(!inside.errors.contains("left as it is"), "\(inside.errors)")
        #expect(try Self.run(server, "backup", "verify", "--repo", repo, "kape-2026-11-03.tar.gz").status == 0)
    }

    /// What a cut run leaves (a bundle it announced, never marked) blocks nothing: the next run
    /// removes it first, and `prune` says so (its dry run too, deleting nothing). An unmarked
    /// object that no run announced (copied in by hand, or anything else named like a backup)
    /// is never deleted: left as it is with a warning, or kept under another name when a backup
    /// of its day goes up. A day's backup replaced after a change verifies. A lock held by
    /// another run makes the next one exit 75.
    @Test func aCutRunBlocksNothingAndALockIsRespected() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let repo = "s3://\(bucket)/qa"
        let root = try Processes.temporaryDirectory("s3-cut")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("kape")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data(#"{"round": 1}"#.utf8).write(to: source.appendingPathComponent("save.json"))
        try server.put(bucket: bucket, key: "qa/kape-2026-11-22.tar.gz", text: "half a bundle")
        try server.put(bucket: bucket, key: "qa/.uploading-kape-2026-11-22.tar.gz", text: #"{"format": "savetool.backup-upload/1"}"#)
        try server.put(bucket: bucket, key: "qa/photos-2026-01-01.tar.gz", text: "someone else's archive")
        try server.put(bucket: bucket, key: "qa/kape-2026-11-20.tar.gz", text: "a bundle copied in by hand")
        #expect(try Self.run(server, "backup", "list", "--repo", repo).outputText == "no backups in \(repo)\n", "an unmarked bundle does not count")
        let dryRun = try Self.run(server, "backup", "prune", "--repo", repo, "--dry-run")
        #expect(dryRun.status == 0 && dryRun.outputText == """
            would remove what a cut run left: \(repo)/kape-2026-11-22.tar.gz
            would remove what a cut run left: \(repo)/.uploading-kape-2026-11-22.tar.gz

            """, "\(dryRun.outputText)")
        #expect(dryRun.errors.contains("\(repo)/photos-2026-01-01.tar.gz: named like a backup but not marked complete by a backup run, so not counted; left as it is"), "\(dryRun.errors)")
        #expect(try server.keys(bucket: bucket).sorted() == [
            "qa/.uploading-kape-2026-11-22.tar.gz", "qa/kape-2026-11-20.tar.gz", "qa/kape-2026-11-22.tar.gz", "qa/photos-2026-01-01.tar.gz",
        ])
        let created = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-22")
        #expect(created.status == 0, "\(created.errors)")
        #expect(created.outputText.hasPrefix("""
            removed what a cut run left: \(repo)/kape-2026-11-22.tar.gz
            removed what a cut run left: \(repo)/.uploading-kape-2026-11-22.tar.gz
            created: \(repo)/kape-2026-11-22.tar.gz
            """), "\(created.outputText)")
        #expect(created.errors.contains("\(repo)/kape-2026-11-20.tar.gz: named like a backup but not marked complete"), "\(created.errors)")
        // Neither announced object survives; what nobody announced does, and so does nothing else.
        #expect(try server.keys(bucket: bucket).filter { !$0.contains(".savetool-lock") }.sorted() == [
            "qa/kape-2026-11-20.tar.gz", "qa/kape-2026-11-22.tar.gz", "qa/kape-2026-11-22.tar.gz.complete", "qa/photos-2026-01-01.tar.gz",
        ])
        // An unannounced object under the name of the day being backed up is kept aside, not lost.
        let hand = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-20")
        #expect(hand.status == 0 && hand.errors.contains("\(repo)/kape-2026-11-20.tar.gz: named like this day's backup but never marked complete by a backup run; kept as \(repo)/kape-2026-11-20.tar.gz.unmarked-"), "\(hand.errors)")
        let aside = try #require(try server.keys(bucket: bucket).first { $0.hasPrefix("qa/kape-2026-11-20.tar.gz.unmarked-") })
        #expect(try server.text(bucket: bucket, key: aside) == "a bundle copied in by hand")
        #expect(try server.text(bucket: bucket, key: "qa/photos-2026-01-01.tar.gz") == "someone else's archive")
        try Data(#"{"round": 2}"#.utf8).write(to: source.appendingPathComponent("save.json"))
        let replaced = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-22")
        #expect(replaced.outputText.hasPrefix("replaced: \(repo)/kape-2026-11-22.tar.gz"), "\(replaced.outputText)\(replaced.errors)")
        #expect(try Self.run(server, "backup", "verify", "--repo", repo).status == 0)
        let restored = root.appendingPathComponent("restored").path
        #expect(try Self.run(server, "import", "\(repo)/kape-2026-11-22.tar.gz", "--into", restored).status == 0)
        #expect(try String(contentsOfFile: restored + "/save.json", encoding: .utf8) == #"{"round": 2}"#)
        // A bundle exported under a backup's name counts as a backup of its folder, held to one
        // name, one source: another folder's is refused (it was written, and every later backup
        // of the name's own folder then refused), the same folder's counts as its backup.
        let other = root.appendingPathComponent("other/kape")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data(#"{"x": 1}"#.utf8).write(to: other.appendingPathComponent("a.json"))
        let mixed = try Self.run(server, "export", other.path, "-o", "\(repo)/kape-2026-11-27.tar.gz", "-q")
        #expect(mixed.status == 64 && mixed.errors.contains("a backup of \(source.resolvingSymlinksInPath().path) under the name kape"), "\(mixed.errors)")
        #expect(try Self.run(server, "backup", "list", "--repo", repo).outputText.contains("2026-11-27") == false)
        #expect(try Self.run(server, "export", source.path, "-o", "\(repo)/kape-2026-11-27.tar.gz", "-q").status == 0)
        let next = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-28")
        #expect(next.status == 0, "\(next.errors)")
        // An import keeps what it replaces in a folder: an s3:// there is refused, not read as a path.
        let s3Keep = try Self.run(server, "import", "\(repo)/kape-2026-11-22.tar.gz", "--into", root.appendingPathComponent("r").path, "--backup-repo", "\(repo)/kept")
        #expect(s3Keep.status == 64 && s3Keep.errors.contains("--backup-repo \(repo)/kept: an s3:// location, expected a folder, where the import keeps what it replaces"), "\(s3Keep.errors)")
        let now = ISO8601DateFormatter().string(from: Date())
        try server.put(bucket: bucket, key: "qa/.savetool-lock", text: #"{"host": "other", "pid": 1, "since": "\#(now)", "nonce": "x"}"#)
        let busy = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-23")
        #expect(busy.status == 75)
        #expect(busy.errors.contains("another savetool holds the repository's lock"))
    }

    /// `backup create` killed at 20 moments spread over its run (while exporting, uploading parts,
    /// completing, marking): afterwards only complete backups are listed, each verifies, and the
    /// next run cleans up what the killed ones left.
    @Test func killedRunsNeverLeaveABackupThatCounts() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let repo = "s3://\(bucket)/qa"
        let root = try Processes.temporaryDirectory("s3-kill")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("kape")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        // Incompressible, so that the bundle goes up in two parts.
        try Data((0..<(6 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: source.appendingPathComponent("save.bin"))
        let started = Date()
        #expect(try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-10-01").status == 0)
        let duration = Date().timeIntervalSince(started)
        for index in 0..<20 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.executable)
            process.arguments = ["backup", "create", source.path, "--repo", repo, "--date", String(format: "2026-11-%02d", index + 1), "--keep", "100", "-q"]
            process.environment = server.variables
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: duration * Double(index) / 20)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let listed = try Self.run(server, "backup", "list", "--repo", repo, "--json")
        let backups = try Codecs.json.decode(listed.output).arrayValue ?? []
        #expect(backups.count >= 1 && backups.allSatisfy { $0["complete"] == true })
        let verified = try Self.run(server, "backup", "verify", "--repo", repo)
        #expect(verified.status == 0, "every listed backup verifies: \(verified.errors)")
        let next = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-30", "--keep", "100")
        #expect(next.status == 0, "the killed runs' lock does not block the next: \(next.errors)")
        #expect(!next.errors.contains("left as it is"), "a killed run's leftovers are known as its own: \(next.errors)")
        #expect(try Self.run(server, "backup", "verify", "--repo", repo).status == 0)
        // Nothing a killed run left is there after the next: each bundle has its marker, and no
        // pending replacement or marker without its bundle is left. An announcement stays only
        // where its bundle never went up (kept a day: a stalled run may still finish it).
        let keys = try server.keys(bucket: bucket).filter { !$0.contains(".savetool-lock") }
        let announcements = keys.filter { $0.hasPrefix("qa/.uploading-") }
        let others = keys.filter { !$0.hasPrefix("qa/.uploading-") }
        let bundles = others.filter { $0.hasSuffix(".tar.gz") }
        #expect(Set(others) == Set(bundles + bundles.map { $0 + ".complete" }), "\(keys.sorted())")
        #expect(announcements.allSatisfy { !keys.contains("qa/" + $0.dropFirst("qa/.uploading-".count)) }, "\(keys.sorted())")
    }

    /// A bundle goes up as it is made: with no file allowed past 2 MiB (`ulimit -f`), a backup and
    /// an export of 12 MiB that does not compress still go up whole, so neither was written to a
    /// temporary file first; both verify and import back.
    @Test func bundlesGoUpAsTheyAreMadeNotFromATemporaryFile() throws {
        let server = try MotoServer.shared()
        let repo = "s3://\(try server.makeBucket())/qa"
        let root = try Processes.temporaryDirectory("s3-streamed")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("kingdom")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<(12 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try bytes.write(to: source.appendingPathComponent("state.bin"))
        func limited(_ arguments: String...) throws -> ProcessResult {
            // The limit is in blocks of 512 or 1,024 bytes, depending on the shell: 1 or 2 MiB.
            try Processes.run(["/bin/sh", "-c", "ulimit -f 2048 && exec \"$0\" \"$@\"", CLI.executable] + arguments, environment: server.variables)
        }
        let backup = try limited("backup", "create", source.path, "--repo", repo, "--date", "2026-11-22")
        #expect(backup.status == 0, "\(backup.errors)")
        let export = try limited("export", source.path, "-o", "\(repo)/handover.tar.zst")
        #expect(export.status == 0, "\(export.errors)")
        let listed = try Codecs.json.decode(Self.run(server, "backup", "list", "--repo", repo, "--json").output).arrayValue ?? []
        #expect(listed.count == 1 && (listed.first?["size"]?.int64Value ?? 0) > 12 << 20, "\(listed)")
        #expect(try Self.run(server, "backup", "verify", "--repo", repo).status == 0)
        for object in ["kingdom-2026-11-22.tar.gz", "handover.tar.zst"] {
            let into = root.appendingPathComponent("back-" + object).path
            let imported = try Self.run(server, "import", "\(repo)/\(object)", "--into", into, "--no-migrate")
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: into + "/state.bin")) == bytes, "\(object)")
        }
    }

    /// The server goes away in the middle of a backup (the connection to it cut, 20 times at
    /// spread moments): the run retries, then exits 75 or finishes; nothing half-written is ever
    /// listed, every listed backup verifies, and the next run succeeds.
    @Test func theServerGoingAwayNeverLeavesABackupThatCounts() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let root = try Processes.temporaryDirectory("s3-cut-server")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("kape")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        try Data((0..<(6 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: source.appendingPathComponent("save.bin"))
        // A TCP proxy in front of the server: killing it is the server vanishing mid-transfer
        // (moto keeps its objects in memory, so killing moto itself would lose the bucket).
        let proxyPort = try MotoServer.freePort()
        let proxy = """
            import socket, sys, threading
            listener = socket.socket(); listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", int(sys.argv[1]))); listener.listen(16)
            def pump(a, b):
                try:
                    while (data := a.recv(65536)): b.sendall(data)
                except OSError: pass
                finally:
                    for s in (a, b):
                        try: s.shutdown(socket.SHUT_RDWR)
                        except OSError: pass
            while True:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
                threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
                threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
            """
        func startProxy() throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", proxy, String(proxyPort), String(server.port)]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            while !MotoServer.answers(proxyPort) { Thread.sleep(forTimeInterval: 0.05) }
            return process
        }
        var variables = server.variables
        variables["AWS_ENDPOINT_URL"] = "http://127.0.0.1:\(proxyPort)"
        let repo = "s3://\(bucket)/qa"
        var proxyProcess = try startProxy()
        let started = Date()
        // --keep 100: retention must not prune what the assertions below look for.
        let first = try Processes.run([CLI.executable, "backup", "create", source.path, "--repo", repo, "--date", "2026-10-01", "--keep", "100"], environment: variables)
        #expect(first.status == 0, "\(first.errors)")
        let duration = Date().timeIntervalSince(started)
        var statuses: [Int32] = []
        for index in 0..<20 {
            let run = Process()
            run.executableURL = URL(fileURLWithPath: CLI.executable)
            run.arguments = ["backup", "create", source.path, "--repo", repo, "--date", String(format: "2026-11-%02d", index + 1), "--keep", "100", "-q"]
            run.environment = variables
            run.standardOutput = FileHandle.nullDevice
            run.standardError = FileHandle.nullDevice
            try run.run()
            Thread.sleep(forTimeInterval: duration * Double(index) / 20)
            kill(proxyProcess.processIdentifier, SIGKILL)
            proxyProcess.waitUntilExit()
            run.waitUntilExit()
            statuses.append(run.terminationStatus)
            proxyProcess = try startProxy()
        }
        defer { kill(proxyProcess.processIdentifier, SIGKILL) }
        #expect(statuses.allSatisfy { $0 == 0 || $0 == 75 }, "\(statuses)")
        #expect(statuses.contains(75), "some runs lost the server: \(statuses)")
        let listed = try Processes.run([CLI.executable, "backup", "list", "--repo", repo, "--json"], environment: variables)
        let backups = try Codecs.json.decode(listed.output).arrayValue ?? []
        // Every run that said so has its backup; a run that lost the server after its marker was
        // written may have one too (it says the backup is complete, its retention did not run).
        let listedDates = Set(backups.compactMap { $0["date"]?.stringValue })
        let succeededDates = ["2026-10-01"] + statuses.indices.filter { statuses[$0] == 0 }.map { String(format: "2026-11-%02d", $0 + 1) }
        #expect(Set(succeededDates).isSubset(of: listedDates), "succeeded: \(succeededDates), listed: \(listedDates.sorted())")
        #expect(try Processes.run([CLI.executable, "backup", "verify", "--repo", repo], environment: variables).status == 0)
        let next = try Processes.run([CLI.executable, "backup", "create", source.path, "--repo", repo, "--date", "2026-11-30", "--keep", "100"], environment: variables)
        #expect(next.status == 0, "\(next.errors)")
    }

    /// Two runs at once on one prefix: one waits for the other (or gives up with 75); never two
    /// half-written backups.
    @Test func twoRunsAtOnceOnOnePrefix() throws {
        let server = try MotoServer.shared()
        let repo = "s3://\(try server.makeBucket())/qa"
        let source = CLI.sample("kape")
        let processes = (0..<2).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.executable)
            process.arguments = ["backup", "create", source, "--repo", repo, "--date", "2026-11-22", "-q"]
            process.environment = server.variables
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            return process
        }
        for process in processes { try process.run() }
        for process in processes { process.waitUntilExit() }
        let statuses = processes.map(\.terminationStatus).sorted()
        #expect(statuses == [0, 0] || statuses == [0, 75], "\(statuses)")
        let listed = try Self.run(server, "backup", "list", "--repo", repo)
        #expect(listed.outputText.split(separator: "\n").count == 1)
        #expect(try Self.run(server, "backup", "verify", "--repo", repo).status == 0)
    }

    @Test func faultsGetTheirExitCodes() throws {
        let server = try MotoServer.shared()
        let repo = "s3://\(try server.makeBucket())/qa"
        let wrong = try Self.run(server, "backup", "create", CLI.sample("kape"), "--repo", repo, secret: "not-the-secret")
        #expect(wrong.status == 77)
        #expect(wrong.errors.contains("the object store refused the credentials"))
        // A prefix nothing was ever stored under (a typo in a cron job): 66, as a missing folder.
        for command in [["list"], ["verify"], ["prune", "--keep", "7"]] {
            let typo = try Processes.run([CLI.executable, "backup"] + command + ["--repo", repo + "-typo"], environment: server.variables)
            #expect(typo.status == 66, "\(command): \(typo.errors)")
            #expect(typo.errors == "savetool: \(repo)-typo: nothing is stored under this prefix, expected a backup repository that backup create wrote to\n", "\(typo.errors)")
        }
        let missing = try Self.run(server, "backup", "list", "--repo", "s3://no-such-bucket-anywhere/qa")
        #expect(missing.status == 66)
        #expect(missing.errors == "savetool: s3://no-such-bucket-anywhere: no such bucket (NoSuchBucket), expected an existing bucket the credentials may use\n")
        var variables = server.variables
        variables.removeValue(forKey: "AWS_ACCESS_KEY_ID")
        let noCredentials = try Processes.run([CLI.executable, "backup", "list", "--repo", repo], environment: variables)
        #expect(noCredentials.status == 77)
        #expect(noCredentials.errors.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"))
    }

    /// The retention table of the local repository, on both: the same backups deleted by each,
    /// and objects that are not backups never touched.
    @Test func retentionIsTheSameOnBothRepositories() throws {
        let server = try MotoServer.shared()
        let remote = "s3://\(try server.makeBucket())/devices"
        let root = try Processes.temporaryDirectory("retention-both")
        defer { try? FileManager.default.removeItem(at: root) }
        let local = root.appendingPathComponent("repo").path
        let source = root.appendingPathComponent("kape")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: source.appendingPathComponent("save.json"))
        // 15 days of November with gaps, and one dated in the future.
        let days = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-05", "2026-11-08", "2026-11-09", "2026-11-10",
                    "2026-11-12", "2026-11-13", "2026-11-15", "2026-11-16", "2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21", "2099-12-24"]
        for day in days {
            for repo in [local, remote] {
                let made = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", day, "--keep", "30")
                #expect(made.status == 0, "\(repo) \(day): \(made.errors)")
            }
        }
        try Data("not a backup".utf8).write(to: URL(fileURLWithPath: local + "/notes.txt"))
        for keep in [1, 7, 30] {
            let today = BackupRepository.Day.today()
            let history = days.map { BackupRepository.Backup(name: "kape", day: .init($0)!, path: "kape-\($0).tar.gz", format: .tar(.gzip)) }
            let expected = BackupRepository.retention(of: history, keep: keep, today: today).deleted.map(\.path).sorted()
            var deletedBy: [String: [String]] = [:]
            for repo in [local, remote] {
                let dry = try Self.run(server, "backup", "prune", "--repo", repo, "--keep", String(keep), "--dry-run")
                #expect(dry.status == 0, "\(dry.errors)")
                deletedBy[repo] = dry.outputText.split(separator: "\n").compactMap { $0.split(separator: "/").last.map(String.init) }.filter { $0.hasSuffix(".tar.gz") }.sorted()
            }
            #expect(deletedBy[local] == expected, "keep \(keep), local")
            #expect(deletedBy[remote] == expected, "keep \(keep), S3")
        }
        // A date that retention would delete at once is refused, and nothing is written or deleted.
        for repo in [local, remote] {
            let before = try Self.run(server, "backup", "list", "--repo", repo).outputText
            let early = try Self.run(server, "backup", "create", source.path, "--repo", repo, "--date", "2026-10-01", "--keep", "7")
            #expect(early.status == 64 && early.errors.contains(
                "kape-2026-10-01.tar.gz: dated 2026-10-01, which retention would delete at once (it keeps the 7 latest days with a backup, from 2026-11-13 on), expected a later date; nothing was written; --keep N keeps more days"),
                "\(repo): \(early.errors)")
            #expect(try Self.run(server, "backup", "list", "--repo", repo).outputText == before, "\(repo)")
        }
        for repo in [local, remote] { #expect(try Self.run(server, "backup", "prune", "--repo", repo, "--keep", "1").status == 0) }
        #expect(FileManager.default.fileExists(atPath: local + "/notes.txt"), "a file that is not a backup is never touched")
        #expect(try Self.run(server, "backup", "list", "--repo", remote).outputText.split(separator: "\n").count == 2, "the last day and the future one")
    }
}
