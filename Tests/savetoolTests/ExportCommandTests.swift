import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("savetool export")
struct ExportCommandTests {
    @Test func exportsTheSamplesReproducibly() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["SOURCE_DATE_EPOCH"] = "1763712000"
        let samples = Corpus.packageRoot.appendingPathComponent("samples").path
        let first = directory.appendingPathComponent("a.tar.zst").path
        let second = directory.appendingPathComponent("b.tar.zst").path
        let result = try CLI.run("export", samples, "-o", first, environment: environment)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.outputText.hasPrefix("exported \(CLI.sampleFileCount) files"))
        #expect(try CLI.run("export", samples, "-o", second, environment: environment).status == 0)
        #expect(FileManager.default.contentsEqual(atPath: first, andPath: second))
        let json = try CLI.run("--json", "export", samples, "-o", directory.appendingPathComponent("c.zip").path, environment: environment)
        #expect(json.outputText.contains(#""createdAt": "2025-11-21T08:00:00Z""#))
        #expect(try Processes.run(["tar", "--zstd", "-tf", first]).outputText.hasPrefix("manifest.json\nfiles/"))
        // A value that is no time is refused, not ignored: the bundle would not be the one asked for.
        for wrong in ["abc", "99999999999999", "-1"] {
            environment["SOURCE_DATE_EPOCH"] = wrong
            let refused = try CLI.run("export", samples, "-o", directory.appendingPathComponent("d.tar.gz").path, environment: environment)
            #expect(refused.status == 64 && refused.errors.contains("SOURCE_DATE_EPOCH=\(wrong), expected whole seconds since 1970"), "\(refused.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("d.tar.gz").path))
    }

    /// A zip holds no hard links: each name of a file is stored as a copy, with a warning naming
    /// it (docs/bundles.md promises one for every difference a restore keeps), and the bundle
    /// restores (libarchive wrote an empty file for the second name, which import refused).
    @Test func aHardLinkInAZipIsACopyWithAWarning() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data("shared\n".utf8).write(to: source.appendingPathComponent("a.json"))
        #expect(link(source.path + "/a.json", source.path + "/b.json") == 0)
        let zip = directory.path + "/saves.zip"
        let exported = try CLI.run("export", source.path, "-o", zip)
        #expect(exported.status == 0, "\(exported.errors)")
        #expect(exported.errors == "savetool: warning: b.json: a hard link to a.json, kept as a copy (a zip holds no hard links; a .tar.gz or .tar.zst bundle keeps them)\n")
        let tar = try CLI.run("export", source.path, "-o", directory.path + "/saves.tar.gz")
        #expect(tar.status == 0 && tar.errors.isEmpty, "\(tar.errors)")
        let restored = directory.appendingPathComponent("restored")
        #expect(try CLI.run("import", zip, "--into", restored.path, "-q").status == 0)
        #expect(try String(contentsOf: restored.appendingPathComponent("b.json"), encoding: .utf8) == "shared\n")
    }

    /// A bundle is never readable by more people than what it holds was: a private file or
    /// folder gives a bundle only its owner reads, in one pass (tar) and two (zip), for export,
    /// backups and the copies kept before a merge in place.
    @Test func aBundleIsAsPrivateAsWhatItHolds() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let umask = Glibc.umask(0o022)
        Glibc.umask(umask)
        let open = 0o666 & ~UInt32(umask)
        func mode(_ path: String) -> UInt32 {
            var info = stat()
            return stat(path, &info) == 0 ? UInt32(info.st_mode & 0o777) : 0
        }
        func folder(_ name: String, folderMode: mode_t, fileMode: mode_t) throws -> String {
            let path = directory.path + "/" + name
            try FileManager.default.createDirectory(atPath: path + "/Documents", withIntermediateDirectories: true)
            try Data(#"{"coins": 1}"#.utf8).write(to: URL(fileURLWithPath: path + "/Documents/save.json"))
            chmod(path + "/Documents/save.json", fileMode)
            chmod(path, folderMode)
            return path
        }
        let cases: [(name: String, folderMode: mode_t, fileMode: mode_t, expected: UInt32)] = [
            ("open", 0o755, 0o644, open), ("private-file", 0o755, 0o600, open & 0o600),
            ("private-folder", 0o700, 0o644, open & 0o600), ("group", 0o750, 0o640, open & 0o660),
        ]
        for (name, folderMode, fileMode, expected) in cases {
            let source = try folder(name, folderMode: folderMode, fileMode: fileMode)
            for bundle in ["\(name).tar.gz", "\(name).zip"] {
                #expect(try CLI.run("export", source, "-o", directory.path + "/" + bundle, "-q").status == 0)
                #expect(mode(directory.path + "/" + bundle) == expected, "\(bundle): \(String(mode(directory.path + "/" + bundle), radix: 8))")
            }
            let repo = directory.path + "/repo-" + name
            #expect(try CLI.run("backup", "create", source, "--repo", repo, "--date", "2026-11-25", "-q").status == 0)
            #expect(mode("\(repo)/\(name)-2026-11-25.tar.gz") == expected, "backup of \(name)")
        }
        // The copy a merge in place keeps of a private folder's files.
        let local = try folder("phone", folderMode: 0o700, fileMode: 0o644)
        let remote = try folder("tablet", folderMode: 0o755, fileMode: 0o644)
        try Data(#"{"coins": 2}"#.utf8).write(to: URL(fileURLWithPath: remote + "/Documents/save.json"))
        #expect(try CLI.run("merge", "--local", local, "--remote", remote, "--prefer", "remote", "-o", local, "-q").status == 0)
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("phone-before-merge-") }
        #expect(kept.count == 1 && mode(directory.path + "/" + kept[0]) == open & 0o600, "\(kept)")
        // A merged bundle of a private folder is private too, though it is staged elsewhere; and
        // so is one holding a private file of the other copy.
        #expect(try CLI.run("merge", "--local", local, "--remote", remote, "--prefer", "remote", "-o", directory.path + "/merged.tar.gz", "-q").status == 0)
        #expect(mode(directory.path + "/merged.tar.gz") == open & 0o600)
        let publicLocal = try folder("laptop", folderMode: 0o755, fileMode: 0o644)
        chmod(remote + "/Documents/save.json", 0o600)
        #expect(try CLI.run("merge", "--local", publicLocal, "--remote", remote, "--prefer", "remote", "-o", directory.path + "/merged2.tar.gz", "-q").status == 0)
        #expect(mode(directory.path + "/merged2.tar.gz") == open & 0o600)
        // Under a umask of 000, a 0750 folder of 0640 files gives a 0640 bundle: readable by the
        // group, and no more writable by it than the files were.
        let group = try folder("group-only", folderMode: 0o750, fileMode: 0o640)
        let loose = try Processes.run(["/bin/sh", "-c", "umask 000; exec \"$0\" \"$@\"", CLI.executable, "export", group, "-o", directory.path + "/loose.tar.gz", "-q"])
        #expect(loose.status == 0 && mode(directory.path + "/loose.tar.gz") == 0o640, "\(String(mode(directory.path + "/loose.tar.gz"), radix: 8)) \(loose.errors)")
        // A file kept from a private folder deeper down: the folders on its way count.
        let deep = try folder("deep", folderMode: 0o755, fileMode: 0o644)
        chmod(deep + "/Documents", 0o700)
        try Data(#"{"puzzleId": "p", "board": "", "seconds": 1, "completed": false}"#.utf8).write(to: URL(fileURLWithPath: deep + "/Documents/save.json"))
        #expect(try CLI.run("migrate", deep, "--in-place", "--kind", "sudoku.game", "-q").status == 0)
        let deepKept = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("deep-before-migrate-") }
        #expect(deepKept.count == 1 && mode(directory.path + "/" + (deepKept.first ?? "")) == open & 0o600, "\(deepKept)")
    }

    @Test func aZipKeepsEachNameOfAHardLinkAsACopy() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: false)
        try Data(#"{"a": 1}"#.utf8).write(to: source.appendingPathComponent("a.json"))
        #expect(link(source.appendingPathComponent("a.json").path, source.appendingPathComponent("b.json").path) == 0)
        let bundle = directory.appendingPathComponent("saves.zip").path, restored = directory.appendingPathComponent("restored")
        #expect(try CLI.run("export", source.path, "-o", bundle).status == 0)
        let landed = try CLI.run("import", bundle, "--into", restored.path)
        #expect(landed.status == 0, "\(landed.errors)")
        for name in ["a.json", "b.json"] {
            #expect(try Data(contentsOf: restored.appendingPathComponent(name)) == Data(#"{"a": 1}"#.utf8), "\(name)")
        }
    }

    @Test func bundlesCanBeInspectedAndReadEntryByEntry() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("s.zip").path
        #expect(try CLI.run("export", Corpus.packageRoot.appendingPathComponent("samples").path, "-o", bundle).status == 0)
        let inspected = try CLI.run("inspect", bundle)
        #expect(inspected.outputText.contains("bundle:    savetool.bundle/2, \(CLI.sampleFileCount) files"))
        #expect(inspected.outputText.contains("kape/Documents/current_tournament.json  460 bytes  json"))
        let entry = "files/blocks/Library/Preferences/com.example.blocks.plist"
        #expect(try CLI.run("get", bundle, "--entry", entry, "/gameSave/coinBalance").outputText == "1275\n")
        #expect(try CLI.run("convert", bundle, "--entry", entry, "--compact").outputText.hasPrefix(#"{"gameSave":{"$data":"#))
        let missing = try CLI.run("get", bundle, "--entry", "files/nope.json", "/x")
        #expect(missing.status == 66)
        // The path inspect lists, without files/: the message names the entry that holds it.
        let listed = try CLI.run("get", bundle, "--entry", "blocks/Library/Preferences/com.example.blocks.plist", "/gameSave/coinBalance")
        #expect(listed.status == 66 && listed.errors.contains("expected \(entry): a bundle holds its files under files/"), "\(listed.errors)")
        let editing = try CLI.run("set", bundle, "--entry", entry, "/launchCount", "1")
        #expect(editing.status == 64)
        #expect(try CLI.run("--json", "inspect", bundle).outputText.contains(#""format": "zip""#))
    }

    @Test func exitCodes() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = try CLI.run("export", "/nonexistent/saves", "-o", directory.appendingPathComponent("x.tar.gz").path)
        #expect(missing.status == 66)
        #expect(missing.errors == "savetool: /nonexistent/saves: cannot read: no such file or directory, expected a file or folder that can be read\n")
        let samples = Corpus.packageRoot.appendingPathComponent("samples").path
        #expect(try CLI.run("export", samples, "-o", "/nonexistent/dir/x.tar.gz").status == 73)
        #expect(try CLI.run("export", samples, "-o", directory.appendingPathComponent("x.zip").path, "--zip", "--compression", "xz").status == 64)
        // A name without a bundle's extension: written new, and again over its own bundle (last
        // night's export), never over a file that is not a bundle (the error-path table).
        let nightly = directory.appendingPathComponent("nightly").path
        #expect(try CLI.run("export", samples, "-o", nightly, "-q").status == 0)
        #expect(try CLI.run("export", samples, "-o", nightly, "-q").status == 0)
        #expect(try CLI.run("inspect", nightly).status == 0)
    }

    /// A bundle written inside the folder it exports leaves itself out, as tar leaves out its
    /// own archive, with its temporary file: a second export never holds the first.
    @Test(arguments: ["me.tar.gz", "sub/me.tar.zst"])
    func aBundleInsideItsFolderLeavesItselfOut(_ name: String) throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: saves.appendingPathComponent("a.json"))
        let bundle = saves.appendingPathComponent(name).path
        let first = try CLI.run("export", saves.path, "-o", bundle)
        #expect(first.status == 0 && first.errors.isEmpty, "\(first.errors)")
        // Named another way (through `..` and a link to the folder), the bundle is still itself.
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("link").path, withDestinationPath: "saves")
        let second = try CLI.run("export", directory.appendingPathComponent("link").path, "-o", saves.appendingPathComponent("sub/../" + name).path)
        #expect(second.status == 0, "\(second.errors)")
        #expect(second.errors.contains("\(name): the bundle being written, left out"), "\(second.errors)")
        let listed = try CLI.run("--json", "inspect", bundle)
        let names = (try Codecs.value(listed.outputText)["manifest"]?["files"]?.arrayValue ?? []).compactMap { $0["path"]?.stringValue }
        #expect(names == ["a.json", "sub"], "\(listed.outputText)")
    }
}
