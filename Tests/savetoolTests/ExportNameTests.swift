import Foundation
import TestSupport
import Testing

/// Every name `import` refuses is refused by `export` and `backup create` too, with its path, so
/// that no backup is written that the documented import cannot restore; a long path and names
/// that are not UTF-8 round-trip.
@Suite("names export refuses, as import would")
struct ExportNameTests {
    /// Makes `saves/` with the one awkward name `make` writes (given as Python), then exports it.
    static func export(_ make: String) throws -> (result: ProcessResult, backup: ProcessResult, directory: URL) {
        let directory = try Processes.temporaryDirectory()
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: saves.appendingPathComponent("ok.json"))
        let made = try Processes.run(["python3", "-c", "import os, sys, unicodedata\nos.chdir(sys.argv[1])\n" + make, saves.path])
        #expect(made.status == 0, "\(made.errors)")
        let result = try CLI.run("export", saves.path, "-o", directory.appendingPathComponent("out.tar.gz").path)
        let backup = try CLI.run("backup", "create", saves.path, "--repo", directory.appendingPathComponent("repo").path)
        return (result, backup, directory)
    }

    @Test(arguments: [
        ("NFC and NFD spellings of one name", #"open(unicodedata.normalize("NFC", "café.json"), "w"); open(unicodedata.normalize("NFD", "café.json"), "w")"#, "Unicode-normalised"),
        ("a backslash", #"open("a\\b.json", "w")"#, "a backslash"),
    ])
    func refusedWithItsPath(_ name: String, _ make: String, _ reason: String) throws {
        let (result, backup, directory) = try Self.export(make)
        defer { try? FileManager.default.removeItem(at: directory) }
        for outcome in [result, backup] {
            #expect(outcome.status == 65, "\(name): \(outcome.errors)")
            #expect(outcome.errors.hasPrefix("savetool: \(directory.path)/saves/") && outcome.errors.contains(reason), "\(name): \(outcome.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out.tar.gz").path))
        let repository = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("repo").path)) ?? []
        #expect(repository.filter { !$0.hasPrefix(".") }.isEmpty, "\(repository)")
    }

    /// A path of 4,000 bytes fits the destination, so it fits the staging area too (written
    /// through directory descriptors), and comes back.
    /// A name with a newline or another control character is a name like any other, and
    /// `inspect` shows it on one line, escaped: it cannot pass for two entries.
    @Test func inspectShowsAControlCharacterEscaped() throws {
        let (result, _, directory) = try Self.export("open('new\\nline\\x1b.txt', 'w').write('x')")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(result.status == 0, "\(result.errors)")
        let shown = try CLI.run("inspect", directory.appendingPathComponent("out.tar.gz").path)
        #expect(shown.outputText.contains("\n  new\\nline\\x1B.txt  1 byte\n"), "\(shown.outputText)")
        #expect(!shown.outputText.contains("\nline"), "\(shown.outputText)")
    }

    /// A name that is not UTF-8 (a file from a Latin-1 system), in a file, a folder, a hard link
    /// and a link's target, comes back byte for byte: through savetool's import, through GNU
    /// tar, and in a backup that a second run finds unchanged. A valid name holding one of the
    /// characters that carry such bytes comes back as itself. A zip cannot hold such a name and
    /// refuses it with its path.
    @Test func namesThatAreNotUTF8RoundTrip() throws {
        let (result, backup, directory) = try Self.export(#"""
            os.makedirs(b"dir\xff"); open(b"dir\xff/x\x80y.txt", "w").write("x")
            open(b"caf\xe9.json", "w").write("{}"); os.link(b"caf\xe9.json", b"hard\xe9")
            os.symlink(b"caf\xe9.json", b"link\xfe"); open("pua\uef80.txt", "w").write("p")
            """#)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(result.status == 0 && backup.status == 0, "\(result.errors) \(backup.errors)")
        let saves = directory.appendingPathComponent("saves").path
        let bundle = directory.appendingPathComponent("out.tar.gz").path
        let zstd = directory.appendingPathComponent("out.tar.zst").path
        #expect(try CLI.run("export", saves, "-o", zstd).status == 0)
        let listed = try CLI.run("inspect", bundle)
        for shown in ["  caf\\xE9.json  2 bytes  json\n", "  dir\\xFF/x\\x80y.txt  1 byte\n", "  hard\\xE9  hardlink → caf\\xE9.json\n", "  link\\xFE  symlink → caf\\xE9.json\n"] {
            #expect(listed.outputText.contains(shown), "\(shown) in \(listed.outputText)")
        }
        func sameTree(_ restored: String, times: Bool = true) throws {
            // Names, types, times, contents, link targets and shared inodes, compared as bytes.
            let script = """
                import os, sys
                def tree(root):
                    seen, out = {}, []
                    for folder, dirs, files in os.walk(root.encode()):
                        for name in dirs + files:
                            path = os.path.join(folder, name); info = os.lstat(path)
                            out.append((os.path.relpath(path, root.encode()), oct(info.st_mode), info.st_mtime_ns if sys.argv[3] == "times" else 0,
                                        os.readlink(path) if os.path.islink(path) else None,
                                        open(path, "rb").read() if os.path.isfile(path) and not os.path.islink(path) else None,
                                        seen.setdefault(info.st_ino, name) if os.path.isfile(path) and not os.path.islink(path) else None))
                    return sorted(out)
                a, b = tree(sys.argv[1]), tree(sys.argv[2])
                print(len(a)); print([x for x in a if x not in b] + [y for y in b if y not in a])
                """
            let compared = try Processes.run(["python3", "-c", script, saves, restored, times ? "times" : "-"])
            #expect(compared.outputText == "7\n[]\n", "\(restored): \(compared.outputText) \(compared.errors)")
        }
        let repository = directory.appendingPathComponent("repo")
        let backups = try FileManager.default.contentsOfDirectory(atPath: repository.path).filter { $0.hasSuffix(".tar.gz") }
        #expect(backups.count == 1, "\(backups)")
        for archive in [bundle, zstd] + backups.map({ repository.appendingPathComponent($0).path }) {
            let restored = directory.appendingPathComponent("restored-" + URL(fileURLWithPath: archive).lastPathComponent).path
            let imported = try CLI.run("import", archive, "--into", restored, "--no-migrate")
            #expect(imported.status == 0, "\(archive): \(imported.errors)")
            try sameTree(restored)
        }
        // GNU tar reads the same bytes (pax `hdrcharset=BINARY`); its times are whole seconds
        // where no pax header was needed (savetool's come from the manifest).
        let extracted = directory.appendingPathComponent("tar")
        try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
        #expect(try Processes.run(["tar", "-xzf", bundle, "-C", extracted.path]).status == 0)
        try sameTree(extracted.appendingPathComponent("files").path, times: false)
        let again = try CLI.run("backup", "create", saves, "--repo", repository.path)
        #expect(again.status == 0 && again.outputText.hasPrefix("unchanged: "), "\(again.outputText) \(again.errors)")
        #expect(try CLI.run("backup", "verify", "--repo", repository.path).status == 0)

        // Such a name on the command line is refused (64), not read as U+FFFD and written under another name.
        let named = try Processes.run(["sh", "-c", #""$0" export "$1" -o "$2/$(printf 'bun\351.tar.gz')""#, CLI.executable, saves, directory.path])
        #expect(named.status == 64 && named.errors == "savetool: \(directory.path)/bun\\xE9.tar.gz: an argument that is not UTF-8, expected UTF-8 (a file so named is kept byte for byte when its folder is exported, backed up or imported)\n", "\(named.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasPrefix("bun") })

        let zip = try CLI.run("export", saves, "-o", directory.appendingPathComponent("out.zip").path)
        #expect(zip.status == 65 && zip.errors.contains("\(saves)/") && zip.errors.contains("\\x") && zip.errors.contains("a name that is not UTF-8, which a zip bundle cannot hold"), "\(zip.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out.zip").path))
    }

    /// Text from a file or a bundle (a name, a key, a label) is shown on one line wherever it
    /// is quoted: a newline or a terminal's escape in it cannot fake a line of output or
    /// recolour one.
    @Test func quotedTextStaysOnOneLine() throws {
        let (_, _, directory) = try Self.export("open('t\\x1b[31m\\nx.json', 'w').write('{\"k\\\\u001b\\\\n\": 1}')")
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves").path
        let bundle = directory.appendingPathComponent("labelled.tar.gz").path
        #expect(try CLI.run("export", saves, "-o", bundle, "--label", "lab\u{1B}]0;pwn\u{07}\nX").status == 0)
        let shown = try CLI.run("inspect", bundle)
        #expect(shown.outputText.contains("  label      lab\\x1B]0;pwn\\x07\\nX\n") && !shown.outputText.contains("\u{1B}"), "\(shown.outputText)")
        let other = directory.appendingPathComponent("other.json")
        try Data("{\"k\\u001b\\n\": 2}".utf8).write(to: other)
        let changed = try CLI.run("diff", saves + "/t\u{1B}[31m\nx.json", other.path)
        #expect(changed.status == 1 && changed.outputText == "~ /k\\x1B\\n: 1 → 2\n", "\(changed.outputText)")
        let checked = try CLI.run("migrate", saves, "--kind", "kape.tournament", "--dry-run")
        #expect(checked.errors.contains("/saves/t\\x1B[31m\\nx.json: ") && !checked.errors.contains("\u{1B}"), "\(checked.errors)")
        // A report's lines on standard output too: a folder and a file named with a newline.
        let folder = directory.appendingPathComponent("nl\ndir")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        let save = folder.appendingPathComponent("Documents/current_tournament.json").path
        try FileManager.default.copyItem(atPath: CLI.sample("kape/Documents/current_tournament.json"), toPath: save)
        let repository = directory.appendingPathComponent("r").path
        for run in [["validate", save], ["export", folder.path, "-o", directory.appendingPathComponent("nl.tar.gz").path],
                    ["backup", "create", folder.path, "--repo", repository], ["backup", "list", "--repo", repository], ["backup", "verify", "--repo", repository],
                    ["import", directory.appendingPathComponent("nl.tar.gz").path, "--into", folder.path, "--no-migrate"]] {
            let result = try Processes.run([CLI.executable] + run)
            #expect(result.status == 0, "\(run): \(result.errors)")
            for line in result.outputText.split(separator: "\n") where line.contains("nl") {
                #expect(line.contains("nl\\ndir"), "\(run): \(result.outputText)")
            }
            #expect(!result.outputText.contains("nl\ndir"), "\(run): \(result.outputText)")
        }
    }

    /// Folders and files whose names hold U+EF80 (valid UTF-8, one of the characters that
    /// carry bytes of names that are not) are themselves everywhere: as the folder given, below
    /// it, as the destination of an import, and to the walks of other commands.
    @Test func namesHoldingTheEscapeCharactersAreThemselves() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = directory.appendingPathComponent("saves\u{EF80}")
        let file = root.appendingPathComponent("d\u{EF80}/x\u{EF80}.json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"{"a": 1}"#.utf8).write(to: file)
        let bundle = directory.appendingPathComponent("b\u{EF80}.tar.gz").path
        let exported = try CLI.run("export", root.path, "-o", bundle)
        #expect(exported.status == 0, "\(exported.errors)")
        let listed = try Processes.run(["tar", "-tzf", bundle])
        #expect(listed.outputText == "manifest.json\nfiles/d\u{EF80}/\nfiles/d\u{EF80}/x\u{EF80}.json\n", "\(listed.outputText)")
        let restored = directory.appendingPathComponent("r\u{EF80}")
        let imported = try CLI.run("import", bundle, "--into", restored.path)
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(try Data(contentsOf: restored.appendingPathComponent("d\u{EF80}/x\u{EF80}.json")) == Data(#"{"a": 1}"#.utf8))
        // Into it again: its old contents are kept first, read through the same names.
        let again = try CLI.run("import", bundle, "--into", restored.path)
        #expect(again.status == 0, "\(again.errors)")
        let walked = try CLI.run("migrate", root.path, "--dry-run")
        #expect(walked.status == 0 && walked.outputText == "0 would be migrated, 0 unchanged, 1 skipped, 0 failed\n", "\(walked.outputText) \(walked.errors)")
        let backups = directory.appendingPathComponent("repo").path
        #expect(try CLI.run("backup", "create", root.path, "--repo", backups).status == 0)
        let second = try CLI.run("backup", "create", root.path, "--repo", backups)
        #expect(second.outputText.hasPrefix("unchanged: "), "\(second.outputText) \(second.errors)")
    }

    /// The longest path a bundle holds, 4,096 bytes below the folder (longer than any whole
    /// path the system takes at once), goes through every way of writing and reading a bundle:
    /// one pass, two passes (`-o -`, zip), a backup found unchanged by a second run, verify.
    @Test func theLongestPathRoundTrips() throws {
        let (result, backup, directory) = try Self.export(#"""
            d = "/".join(["d%02d" % i + "x" * 196 for i in range(20)])
            os.makedirs(d); os.chdir(d); open("s" * 91 + ".json", "w").write("{}")
            """#)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(result.status == 0 && backup.status == 0, "\(result.errors) \(backup.errors)")
        let saves = directory.appendingPathComponent("saves").path
        // Compared through folder descriptors (os.fwalk): no whole path is short enough for diff -r.
        let compare = """
            import hashlib, os, sys
            def tree(top):
                out = []
                for folder, dirs, files, fd in os.fwalk(top):
                    for name in files:
                        with open(os.open(name, os.O_RDONLY, dir_fd=fd), "rb") as f:
                            out.append((os.path.relpath(os.path.join(folder, name), top), hashlib.sha256(f.read()).hexdigest()))
                    out += [(os.path.relpath(os.path.join(folder, name), top), "folder") for name in dirs]
                return sorted(out)
            a, b = tree(sys.argv[1]), tree(sys.argv[2])
            print(len(a), max(len(p.encode()) for p, _ in a), a == b)
            """
        let stdoutBundle = directory.appendingPathComponent("stdout.tar.zst").path
        let piped = try Processes.run(["sh", "-c", "\"$0\" export \"$1\" -o - --compression zstd > \"$2\"", CLI.executable, saves, stdoutBundle])
        #expect(piped.status == 0, "\(piped.errors)")
        let zip = directory.appendingPathComponent("out.zip").path
        #expect(try CLI.run("export", saves, "-o", zip).status == 0)
        for bundle in [directory.appendingPathComponent("out.tar.gz").path, stdoutBundle, zip] {
            let restored = directory.appendingPathComponent("r-" + URL(fileURLWithPath: bundle).lastPathComponent).path
            let imported = try CLI.run("import", bundle, "--into", restored)
            #expect(imported.status == 0, "\(bundle): \(imported.errors)")
            let same = try Processes.run(["python3", "-c", compare, saves, restored])
            #expect(same.outputText == "22 4096 True\n", "\(bundle): \(same.outputText) \(same.errors.prefix(300))")
        }
        let repository = directory.appendingPathComponent("repo").path
        let again = try CLI.run("backup", "create", saves, "--repo", repository)
        #expect(again.status == 0 && again.outputText.hasPrefix("unchanged: "), "\(again.outputText) \(again.errors)")
        #expect(try CLI.run("backup", "verify", "--repo", repository).status == 0)
        #expect(try CLI.run("backup", "list", "--repo", repository).outputText.contains("verified"))
    }
}
