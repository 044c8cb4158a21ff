import Foundation
import TestSupport
import Testing

/// What a restore gives back is what the folder held: compared by lstat (type, mode, size,
/// nanosecond time, owner), extended attributes, link targets, content, shared inodes and
/// allocated blocks, through `export` → `import` and `backup create` → `import`, as root and as
/// an unprivileged user. The only differences are the ones docs/bundles.md names, each warned about.
@Suite("what a restore gives back")
struct FidelityTests {
    static let script = Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/fidelity.py").path

    /// Runs `arguments` as root, or as `nobody` through setpriv.
    static func run(_ arguments: [String], asRoot: Bool) throws -> ProcessResult {
        try Processes.run(asRoot ? arguments : ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + arguments)
    }

    /// Copies of the tool (with its resources) and the script where `nobody` can run them: the
    /// clone itself may sit in a folder only root can enter. Python is the system's, which every
    /// user can run.
    static func tools(in directory: URL) throws -> (savetool: String, python: [String]) {
        let binary = URL(fileURLWithPath: CLI.executable)
        let copies = directory.appendingPathComponent("tools")
        try FileManager.default.createDirectory(at: copies, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: binary.deletingLastPathComponent().path)
        where name == "savetool" || name.hasSuffix(".resources") {
            try FileManager.default.copyItem(at: binary.deletingLastPathComponent().appendingPathComponent(name), to: copies.appendingPathComponent(name))
        }
        try FileManager.default.copyItem(atPath: script, toPath: copies.appendingPathComponent("fidelity.py").path)
        _ = try Processes.run(["chmod", "-R", "a+rX", directory.path])
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        return (copies.appendingPathComponent("savetool").path, [python, copies.appendingPathComponent("fidelity.py").path])
    }

    /// The differences between `source` and `restored`, one line each; checks the comparison saw the whole tree.
    static func differences(_ source: String, _ restored: String) throws -> [String] {
        let compared = try Processes.run(["python3", script, "compare", source, restored])
        #expect(compared.status == 0, "\(compared.errors)")
        var lines = compared.outputText.split(separator: "\n").map(String.init)
        #expect(lines.popLast() == #"{"compared": 27}"#)
        return lines
    }

    @Test(arguments: [true, false])
    func exportImportAndBackupRestoreGiveTheFolderBack(asRoot: Bool) throws {
        guard getuid() == 0 else {
            Issue.record("this test makes files of several owners and runs as nobody: it needs root, as CI has")
            return
        }
        let directory = try Processes.temporaryDirectory("fidelity")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (savetool, python) = try Self.tools(in: directory)
        chmod(directory.path, 0o777)
        let source = directory.appendingPathComponent("save").path
        let made = try Self.run(python + ["make", source], asRoot: asRoot)
        #expect(made.status == 0, "\(made.errors)")
        // The differences every restore keeps, each named in docs/bundles.md and warned about.
        let expected = [
            #"{"path": "pipe", "field": "missing"}"#, #"{"path": "sock", "field": "missing"}"#,
            #"{"path": "tools/group", "field": "mode", "from": "0o2755", "to": "0o755"}"#,
            #"{"path": "tools/helper", "field": "mode", "from": "0o4755", "to": "0o755"}"#,
        ]
        let bundle = directory.appendingPathComponent("save.tar.gz").path
        let exported = try Self.run([savetool, "export", source, "-o", bundle], asRoot: asRoot)
        #expect(exported.status == 0, "\(exported.errors)")
        #expect(exported.errors.contains("\(source)/pipe: a FIFO, left out") && exported.errors.contains("\(source)/sock: a socket, left out"))
        let backups = directory.appendingPathComponent("backups").path
        let created = try Self.run([savetool, "backup", "create", source, "--repo", backups, "--date", "2026-11-20"], asRoot: asRoot)
        #expect(created.status == 0, "\(created.errors)")
        for (name, archive) in [("export", bundle), ("backup", backups + "/save-2026-11-20.tar.gz")] {
            let restored = directory.appendingPathComponent("restored-\(name)").path
            // The dry run says what the import will drop, as the import does.
            let dryRun = try Self.run([savetool, "import", archive, "--into", restored, "--no-migrate", "--dry-run"], asRoot: asRoot)
            #expect(dryRun.status == 0 && dryRun.errors.contains("tools/helper: setuid/setgid dropped (mode 4755 restored as 755)"), "\(name): \(dryRun.errors)")
            let imported = try Self.run([savetool, "import", archive, "--into", restored, "--no-migrate"], asRoot: asRoot)
            #expect(imported.status == 0, "\(name): \(imported.errors)")
            #expect(imported.errors.contains("tools/helper: setuid/setgid dropped (mode 4755 restored as 755)"), "\(name): \(imported.errors)")
            #expect(imported.errors.contains("tools/group: setuid/setgid dropped"), "\(name): \(imported.errors)")
            #expect(try Self.differences(source, restored) == expected, "\(name) as \(asRoot ? "root" : "nobody")")
        }
        guard asRoot else { return }
        // Root restores owners as tar -p does; --no-same-owner leaves the files to root, and says so.
        let unowned = directory.appendingPathComponent("unowned").path
        let imported = try CLI.run("import", bundle, "--into", unowned, "--no-migrate", "--no-same-owner")
        #expect(imported.status == 0)
        let differences = try Self.differences(source, unowned)
        #expect(differences.filter { $0.contains(#""field": "owner""#) }.count == 3, "\(differences)")
    }

    @Test func aFolderGivenThroughALinkIsFollowed() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let real = directory.appendingPathComponent("real/Documents")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: real.appendingPathComponent("save.json"))
        let link = directory.appendingPathComponent("toplink").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "real")
        let bundle = directory.appendingPathComponent("b.tar.gz").path
        let exported = try CLI.run("export", link + "/", "-o", bundle)
        #expect(exported.status == 0 && exported.outputText.contains("exported 1 file"), "\(exported.errors)")
        let backup = try CLI.run("backup", "create", link, "--repo", directory.appendingPathComponent("repo").path)
        #expect(backup.status == 0 && backup.outputText.contains("(1 file)"), "\(backup.outputText) \(backup.errors)")
    }
}

/// Folders whose modes shut out their own owner (a read-only `0555` folder in the destination,
/// a `0000` one in a bundle), for a user who is not root: an import still leaves nothing behind.
@Suite("imports by a user who is not root")
struct UnprivilegedImportTests {
    /// A folder anyone may enter, with a copy of savetool that `nobody` can run; `nil` (and a
    /// recorded issue) when not run as root, which running as `nobody` needs.
    static func folderForNobody() throws -> (directory: URL, savetool: String)? {
        guard getuid() == 0 else {
            Issue.record("this test runs savetool as nobody: it needs root, as CI has")
            return nil
        }
        let directory = try Processes.temporaryDirectory("unprivileged")
        do {
            let (savetool, _) = try FidelityTests.tools(in: directory)
            chmod(directory.path, 0o777)
            return (directory, savetool)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    @Test func aReadOnlyFolderInTheDestinationLeavesNothingBehind() throws {
        guard let (directory, savetool) = try Self.folderForNobody() else { return }
        defer { try? FileManager.default.removeItem(at: directory) }
        let user = directory.appendingPathComponent("user")
        try FileManager.default.createDirectory(at: user.appendingPathComponent("dest/locked"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: user.appendingPathComponent("new/d"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: user.appendingPathComponent("dest/locked/s.json"))
        try Data(#"{"coins": 1}"#.utf8).write(to: user.appendingPathComponent("new/d/save.json"))
        _ = try Processes.run(["chown", "-R", "65534:65534", user.path])
        func asNobody(_ arguments: String...) throws -> ProcessResult {
            try FidelityTests.run([savetool] + arguments, asRoot: false)
        }
        let bundle = user.appendingPathComponent("new.tar.gz").path
        let exported = try asNobody("export", user.appendingPathComponent("new").path, "-o", bundle)
        #expect(exported.status == 0, "\(exported.errors)")
        chmod(user.appendingPathComponent("dest/locked").path, 0o555)

        let imported = try asNobody("import", bundle, "--into", user.appendingPathComponent("dest").path)
        #expect(imported.status == 0, "\(imported.errors)")
        let left = try FileManager.default.contentsOfDirectory(atPath: user.path).filter { $0.hasPrefix(".dest.") }
        #expect(left.isEmpty, "the old contents were removed once saved: \(left)")
        #expect(FileManager.default.fileExists(atPath: user.appendingPathComponent("dest/d/save.json").path))
        #expect(!imported.errors.contains("could not all be removed"), "\(imported.errors)")

        // A bundle's folder that shuts out its owner (mode 0000) is restored as it was. A second
        // import cannot keep what that folder holds: it says so, and leaves no staging behind.
        let sealed = directory.appendingPathComponent("sealed")
        try FileManager.default.createDirectory(at: sealed.appendingPathComponent("d"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: sealed.appendingPathComponent("d/save.json"))
        chmod(sealed.appendingPathComponent("d").path, 0)
        let sealedBundle = directory.appendingPathComponent("sealed.tar.gz").path
        #expect(try CLI.run("export", sealed.path, "-o", sealedBundle).status == 0)
        chmod(sealedBundle, 0o644)
        let into = user.appendingPathComponent("r1").path
        let first = try asNobody("import", sealedBundle, "--into", into)
        #expect(first.status == 0, "\(first.errors)")
        var info = stat()
        #expect(lstat(into + "/d", &info) == 0 && info.st_mode & 0o7777 == 0)
        let second = try asNobody("import", sealedBundle, "--into", into)
        #expect(second.status == 66, "\(second.errors)")
        #expect(second.errors.contains("\(into)/d: cannot read: permission denied, expected to read it to keep what \(into) holds before the import replaces it"), "\(second.errors)")
        let staged = try FileManager.default.contentsOfDirectory(atPath: user.path).filter { $0.hasPrefix(".r1.") }
        #expect(staged.isEmpty, "the staging folder, with its own 0000 folder, is gone: \(staged)")
    }

    /// Under a umask that takes the owner's write bit (277), a user who is not root still
    /// restores (the staging folders were made unwritable, and the import failed with 74), and
    /// gets back each file's extended attributes (set while it is writable) and exact mode.
    @Test func attributesComeBackUnderAUmaskThatTakesTheWriteBit() throws {
        guard let (directory, savetool) = try Self.folderForNobody() else { return }
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("user/source")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("sub"), withIntermediateDirectories: true)
        for (name, mode) in [("tagged.json", 0o644), ("sub/shipped.json", 0o444)] as [(String, mode_t)] {
            let path = source.appendingPathComponent(name).path
            try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
            let tagged = try Processes.run(["python3", "-c", "import os, sys; os.setxattr(sys.argv[1], 'user.origin', b'store')", path])
            #expect(tagged.status == 0, "user.* attributes on the test's file system: \(tagged.errors)")
            #expect(chmod(path, mode) == 0)
        }
        _ = try Processes.run(["chown", "-R", "65534:65534", directory.appendingPathComponent("user").path])
        let bundle = directory.appendingPathComponent("user/tagged.tar.gz").path
        let exported = try FidelityTests.run([savetool, "export", source.path, "-o", bundle], asRoot: false)
        #expect(exported.status == 0, "\(exported.errors)")
        let restored = directory.appendingPathComponent("user/restored").path
        let imported = try FidelityTests.run(["/bin/sh", "-c", "umask 277 && exec \"$0\" import \"$1\" --into \"$2\"", savetool, bundle, restored], asRoot: false)
        #expect(imported.status == 0 && !imported.errors.contains("could not be set"), "\(imported.errors)")
        for (name, mode) in [("tagged.json", 0o644), ("sub/shipped.json", 0o444)] as [(String, mode_t)] {
            let path = restored + "/" + name
            let read = try Processes.run(["python3", "-c", "import os, sys; print(os.getxattr(sys.argv[1], 'user.origin').decode())", path])
            #expect(read.outputText == "store\n", "\(name): its attribute: \(read.outputText) \(read.errors)")
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & 0o7777 == mode, "\(name) is \(String(info.st_mode & 0o7777, radix: 8))")
        }
    }
}
