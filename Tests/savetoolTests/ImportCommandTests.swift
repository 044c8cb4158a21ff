import Foundation
import TestSupport
import Testing

@Suite("savetool import")
struct ImportCommandTests {
    /// `--into` a folder whose parents are missing makes them, as `mkdir -p`; a refused import
    /// makes nothing.
    @Test func missingParentsOfTheDestinationAreMadeOnlyForAnImportThatLands() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", CLI.sample("kape"), "-o", bundle).status == 0)
        let damaged = directory.appendingPathComponent("damaged.tar.gz").path
        var bytes = try Data(contentsOf: URL(fileURLWithPath: bundle))
        bytes.removeLast(bytes.count / 2)
        try bytes.write(to: URL(fileURLWithPath: damaged))

        let refused = try CLI.run("import", damaged, "--into", directory.appendingPathComponent("new/deeper/kape").path)
        #expect(refused.status == 65, "\(refused.errors)")
        #expect(refused.errors.contains("gzip data that is not a tar or zip archive, or is cut short"), "\(refused.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("new").path))
        let landed = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("new/deeper/kape").path)
        #expect(landed.status == 0, "\(landed.errors)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("new/deeper/kape/Documents/current_tournament.json").path))
        // --backup-repo that is not there yet is made, as backup create makes its repository;
        // one whose parent is missing is said, with what it was for.
        let kept = directory.appendingPathComponent("kept").path
        let again = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("new/deeper/kape").path, "--backup-repo", kept)
        let keptFiles = (try? FileManager.default.contentsOfDirectory(atPath: kept)) ?? []
        #expect(again.status == 0 && keptFiles.count == 1, "\(again.errors)")
        let nowhere = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("new/deeper/kape").path, "--backup-repo", directory.path + "/no/such")
        #expect(nowhere.status == 73 && nowhere.errors.contains("no such file or directory, expected a folder to keep what"), "\(nowhere.errors)")
    }

    /// Files are created with their own modes, and given modes and owners again only where
    /// creating could not (the umask took bits, the file is read-only or has a special bit, the
    /// staging folder hands its group down, the owner is someone else): every mode comes back
    /// exactly under a umask of 077, and beside a setgid folder of another group the files keep
    /// the group they had (as root, as tar -p) rather than the folder's.
    @Test func modesAndGroupsComeBackWhateverTheUmaskAndTheFolderAround() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source").path
        var modes: [String: mode_t] = ["a.json": 0o644, "b.json": 0o600, "c.json": 0o444, "d.sh": 0o755, "e.json": 0o640]
        #if os(Linux)
        modes["f.json"] = 0o1644  // a sticky regular file: Linux keeps the bit, macOS refuses it
        #endif
        try FileManager.default.createDirectory(atPath: source + "/private", withIntermediateDirectories: true)
        for (name, mode) in modes {
            for folder in [source, source + "/private"] {
                try Data("{\"name\": \"\(name)\"}".utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
                #expect(chmod(folder + "/" + name, mode) == 0)
            }
        }
        #expect(chmod(source + "/private", 0o750) == 0)
        let root = geteuid() == 0
        // As root, one file of someone else: given back its owner, never left as root's.
        if root { #expect(chown(source + "/private/e.json", 4242, 4343) == 0) }
        let bundle = directory.appendingPathComponent("modes.tar.zst").path
        let exported = try CLI.run("export", source, "-o", bundle, "-q")
        #expect(exported.status == 0, "\(exported.errors)")

        /// As root the bundle's owners come back; otherwise the folder's group is all one may give.
        func expectModes(under restored: String, folderGroup: gid_t?, _ context: String) {
            for (name, mode) in modes {
                for (folder, original) in [(restored, source), (restored + "/private", source + "/private")] {
                    var info = stat(), was = stat()
                    #expect(lstat(folder + "/" + name, &info) == 0 && lstat(original + "/" + name, &was) == 0, "\(context): \(folder)/\(name)")
                    #expect(info.st_mode & 0o7777 == mode, "\(context): \(name) is \(String(info.st_mode & 0o7777, radix: 8)), expected \(String(mode, radix: 8))")
                    let group = root ? was.st_gid : folderGroup ?? was.st_gid
                    #expect(info.st_gid == group, "\(context): \(name) has the group \(info.st_gid), expected \(group)")
                    if root { #expect(info.st_uid == was.st_uid, "\(context): \(name) has the owner \(info.st_uid), expected \(was.st_uid)") }
                }
            }
            var info = stat()
            #expect(lstat(restored + "/private", &info) == 0 && info.st_mode & 0o7777 == 0o750, "\(context): the folder is \(String(info.st_mode & 0o7777, radix: 8))")
        }

        let strict = directory.appendingPathComponent("strict").path
        let underUmask = try Processes.run(["/bin/sh", "-c", "umask 077 && exec \"$0\" import \"$1\" --into \"$2\" -q", CLI.executable, bundle, strict])
        #expect(underUmask.status == 0, "\(underUmask.errors)")
        expectModes(under: strict, folderGroup: nil, "umask 077")

        // A setgid folder hands its group (and the setgid bit) down to what is made in it.
        let shared = directory.appendingPathComponent("shared").path
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        let otherGroup: gid_t = root ? 4242 : getegid()
        #expect(chown(shared, geteuid(), otherGroup) == 0 && chmod(shared, 0o2775) == 0)
        let landed = try CLI.run("import", bundle, "--into", shared + "/restored", "-q")
        #expect(landed.status == 0, "\(landed.errors)")
        expectModes(under: shared + "/restored", folderGroup: otherGroup, "beside a setgid folder")
    }

    /// `-` is standard output for export and standard input for import, as tar's `-f -`: a
    /// bundle piped from one to the other restores byte for byte. It was a file named `-`, and
    /// import of `-` exited 66.
    @Test func aBundlePipedFromExportToImport() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let exported = try Processes.run([CLI.executable, "export", CLI.sample("kape"), "-o", "-", "--compression", "zstd"], directory: directory)
        #expect(exported.status == 0, "\(exported.errors)")
        #expect(exported.output.starts(with: [0x28, 0xB5, 0x2F, 0xFD]), "a zstd frame on standard output")
        #expect(exported.errors.hasPrefix("exported "), "the summary beside the bundle, on stderr: \(exported.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no file named -")
        let restored = directory.appendingPathComponent("restored")
        let imported = try Processes.run([CLI.executable, "import", "-", "--into", restored.path, "--no-migrate"], input: exported.output)
        #expect(imported.status == 0, "\(imported.errors)")
        let files = Files.regularFiles(under: CLI.sample("kape"))
        #expect(Files.regularFiles(under: restored.path) == files && !files.isEmpty)
        for file in files {
            #expect(try Data(contentsOf: restored.appendingPathComponent(file)) == Data(contentsOf: URL(fileURLWithPath: CLI.sample("kape") + "/" + file)), "\(file)")
        }
        let damaged = try Processes.run([CLI.executable, "import", "-", "--into", directory.appendingPathComponent("x").path], input: Array(exported.output.prefix(100)))
        #expect(damaged.status == 65 && damaged.errors.hasPrefix("savetool: <stdin>: "), "named as the other commands name standard input, not by a temporary file: \(damaged.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("x").path))
        let json = try Processes.run([CLI.executable, "--json", "export", CLI.sample("kape"), "-o", "-"])
        #expect(json.status == 64 && json.output.isEmpty, "\(json.errors)")
    }

    /// An empty path (an unset shell variable: `--into "$DEST"`) is a usage error wherever a
    /// command takes a file or a folder. It was read as the current folder: an import replaced
    /// the folder the user stood in, and a backup saved it.
    @Test func anEmptyPathIsAUsageErrorNeverTheCurrentFolder() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", CLI.sample("kape"), "-o", bundle).status == 0)
        let here = directory.appendingPathComponent("here")
        try FileManager.default.createDirectory(at: here, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: here.appendingPathComponent("mine.txt"))
        let runs: [[String]] = [
            ["import", bundle, "--into", ""], ["import", "", "--into", "x"], ["backup", "create", "", "--repo", "../repo"],
            ["backup", "list", "--repo", ""], ["export", "", "-o", "../x.tar.gz"], ["convert", ""], ["convert", bundle, "-o", ""],
            ["migrate", "", "--dry-run"], ["migrate", ".", "--out", ""], ["sync", "", "--server", "http://127.0.0.1:9", "--space", "s"],
            ["merge", "--local", "", "--remote", "a.json"], ["validate", ""],
        ]
        for arguments in runs {
            let result = try Processes.run([CLI.executable] + arguments, directory: here)
            #expect(result.status == 64, "\(arguments): \(result.errors)")
            #expect(result.errors.contains("an empty path, expected a file or folder name"), "\(arguments): \(result.errors)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: here.path) == ["mine.txt"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["here", "kape.tar.gz"])
    }

    /// `--into` a link to a folder restores into the folder it leads to, as tar does, and the
    /// link stays; what the folder held is saved first, as for any import.
    @Test func aLinkToAFolderIsFollowed() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", CLI.sample("kape"), "-o", bundle).status == 0)
        let folder = directory.appendingPathComponent("real"), link = directory.appendingPathComponent("device").path
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try Data("old\n".utf8).write(to: folder.appendingPathComponent("old.txt"))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "real")

        let landed = try CLI.run("import", bundle, "--into", link, "--no-migrate")
        #expect(landed.status == 0, "\(landed.errors)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "real")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("Documents/current_tournament.json").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("old.txt").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).contains { $0.hasPrefix("real-before-import-") })
    }

    /// A fresh directory holding the kape sample exported as `kape.tar.gz`, and an empty folder
    /// `D` to import it into.
    /// For a test that runs savetool as `nobody` through setpriv (root only, as CI runs it):
    /// ``bundleAndFolder()``, the bundle readable by anyone, and a copy of savetool `nobody` may
    /// run. `nil`, with the reason recorded as an issue, when the tests do not run as root.
    static func forNobody() throws -> (directory: URL, bundle: String, folder: URL, savetool: String)? {
        guard getuid() == 0 else {
            Issue.record("this test runs savetool as nobody through setpriv: it needs root, as CI has")
            return nil
        }
        let (directory, bundle, folder) = try bundleAndFolder()
        let (savetool, _) = try FidelityTests.tools(in: directory)
        chmod(bundle, 0o644)
        return (directory, bundle, folder, savetool)
    }

    static func bundleAndFolder() throws -> (directory: URL, bundle: String, folder: URL) {
        let directory = try Processes.temporaryDirectory()
        let bundle = directory.appendingPathComponent("kape.tar.gz").path
        #expect(try CLI.run("export", CLI.sample("kape"), "-o", bundle).status == 0)
        let folder = directory.appendingPathComponent("D")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        return (directory, bundle, folder)
    }

    /// What stops an import keeping the destination's old contents (a name no bundle holds)
    /// stops its dry run too, with the same message: the dry run does not promise an import
    /// that will fail.
    @Test func aDryRunFailsWhereTheImportWould() throws {
        let (directory, bundle, folder) = try Self.bundleAndFolder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("old\n".utf8).write(to: folder.appendingPathComponent("a\\b.txt"))
        let dryRun = try CLI.run("import", bundle, "--into", folder.path, "--dry-run")
        let real = try CLI.run("import", bundle, "--into", folder.path)
        #expect(dryRun.status == 65 && real.status == 65 && dryRun.errors == real.errors, "\(dryRun.errors) | \(real.errors)")
        #expect(real.errors == "savetool: \(folder.path)/a\\\\b.txt: a backslash, expected '/' between components\n", "\(real.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["a\\b.txt"])
    }

    /// A destination its owner may write but not list (0300): what it holds is unknown, not
    /// nothing. The import is refused (its dry run too) rather than replacing it unkept; a
    /// folder of that mode is still staged.
    @Test func aFolderThatCannotBeListedIsNeverReplacedUnkept() throws {
        guard let (directory, bundle, folder, savetool) = try Self.forNobody() else { return }
        defer { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o777)
        try Data("secret\n".utf8).write(to: folder.appendingPathComponent("x"))
        chown(folder.path, 65534, 65534)
        chmod(folder.path, 0o300)
        for dryRun in [true, false] {
            let imported = try FidelityTests.run([savetool, "import", bundle, "--into", folder.path] + (dryRun ? ["--dry-run"] : []), asRoot: false)
            #expect(imported.status == 66 && imported.errors.contains("\(folder.path): cannot read: permission denied, expected to read it to keep what"), "\(imported.errors)")
        }
        chmod(folder.path, 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["x"])
        // Readable, the same folder is kept in a bundle and replaced.
        let landed = try FidelityTests.run([savetool, "import", bundle, "--into", folder.path], asRoot: false)
        #expect(landed.status == 0, "\(landed.errors)")
    }

    /// An import stages beside its destination: where this user may not write there, the import
    /// is refused with exit 73 (the output cannot be created, as `convert` and `export` answer),
    /// naming the folder, and its dry run is refused the same way rather than say "verified".
    @Test func aPlaceTheImportCannotWriteInIsRefusedByTheDryRunToo() throws {
        guard let (directory, bundle, _, savetool) = try Self.forNobody() else { return }
        defer { chmod(directory.path + "/locked", 0o755); try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o755)
        let locked = directory.appendingPathComponent("locked")
        let existing = locked.appendingPathComponent("dest")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: existing.appendingPathComponent("f"))
        chown(existing.path, 65534, 65534)
        chown(existing.path + "/f", 65534, 65534)
        chmod(locked.path, 0o555)
        for destination in [existing.path, locked.path + "/new/deeper"] {
            for dryRun in [true, false] {
                let imported = try FidelityTests.run([savetool, "import", bundle, "--into", destination] + (dryRun ? ["--dry-run"] : []), asRoot: false)
                #expect(imported.status == 73, "\(destination) \(dryRun): \(imported.status) \(imported.errors)")
                #expect(imported.errors == "savetool: \(locked.path): permission denied, expected a folder this user may write in: the import of \(destination) stages its files beside it\n")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: locked.path) == ["dest"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: existing.path) == ["f"])
    }

    /// Verifying restores nothing: a repository this user may only read (another user's, or one
    /// made read-only against ransomware) lists and verifies, though an import could not
    /// stage beside it.
    @Test func aRepositoryThatCanOnlyBeReadVerifies() throws {
        guard let (directory, _, _, savetool) = try Self.forNobody() else { return }
        defer { try? FileManager.default.removeItem(at: directory) }
        let repository = directory.appendingPathComponent("repo").path
        #expect(try CLI.run("backup", "create", CLI.sample("kape"), "--repo", repository, "--date", "2026-11-27", "-q").status == 0)
        _ = try Processes.run(["chmod", "-R", "a+rX", repository])
        chmod(repository, 0o555)
        defer { chmod(repository, 0o755) }
        for command in [["list"], ["verify"]] {
            let result = try FidelityTests.run([savetool, "backup"] + command + ["--repo", repository], asRoot: false)
            #expect(result.status == 0, "\(command): \(result.outputText) \(result.errors)")
            #expect(!result.outputText.contains("FAILS"), "\(result.outputText)")
        }
    }

    /// What the destination held is saved in a bundle first; when it holds what no bundle holds
    /// (a FIFO, a link leading out of it), nothing of it is removed: the old contents are kept
    /// whole beside it, and the dry run says so first.
    @Test func whatTheSavedContentsCannotHoldIsKeptAsItWas() throws {
        let (directory, bundle, folder) = try Self.bundleAndFolder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("old\n".utf8).write(to: folder.appendingPathComponent("old.txt"))
        #expect(mkfifo(folder.appendingPathComponent("pipe").path, 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("cloud").path, withDestinationPath: directory.path)
        let dryRun = try CLI.run("import", bundle, "--into", folder.path, "--no-migrate", "--dry-run")
        #expect(dryRun.status == 0 && dryRun.errors.contains(
            "\(folder.path)/pipe: a FIFO, left out (a bundle holds files, folders and links); the import would keep the folder's old contents as they are, beside it, since the bundle of what it held cannot hold this"),
            "\(dryRun.errors)")
        #expect(dryRun.errors.contains("\(folder.path)/cloud: a symbolic link to the absolute path"), "\(dryRun.errors)")
        let landed = try CLI.run("import", bundle, "--into", folder.path, "--no-migrate")
        #expect(landed.status == 0, "\(landed.errors)")
        let bundles = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("D-before-import-") && $0.hasSuffix(".tar.gz") }
        try #require(bundles.count == 1, "\(landed.errors)")
        let kept = directory.path + "/" + bundles[0].replacingOccurrences(of: ".tar.gz", with: "")
        #expect(landed.errors.contains(
            "\(folder.path)/pipe: a FIFO, left out (a bundle holds files, folders and links); kept, with the rest of the folder's old contents, in \(kept)"),
            "\(landed.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: kept).sorted() == ["cloud", "old.txt", "pipe"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept + "/cloud") == directory.path)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("Documents/current_tournament.json").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("pipe").path))
    }

    /// A holder whose own version stays says which embedded save was migrated, not "1 to 1".
    @Test func anEmbeddedMigrationIsNamed() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("blocks.tar.gz").path
        #expect(try CLI.run("export", CLI.sample("blocks"), "-o", bundle).status == 0)
        let dryRun = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("blocks").path, "--dry-run")
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        #expect(dryRun.outputText.contains(
            "would migrate Library/Preferences/com.example.blocks.plist (blocks.defaults) /gameSave: blocks.gamesave 1→2\n"))
    }

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

    /// A save its kind claims by its path, whose version no field or fingerprint tells, cannot
    /// be migrated: it lands as it was with a warning that says why, and --strict refuses it,
    /// as an invalid save or one from a newer version.
    @Test func aSaveWhoseVersionNothingTellsLandsWithAWarning() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source/Documents")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        let save = Data(#"{"players":[],"deckId":"x"}"#.utf8)
        try save.write(to: source.appendingPathComponent("current_tournament.json"))
        let bundle = directory.appendingPathComponent("unversioned.tar.gz").path
        #expect(try CLI.run("export", directory.appendingPathComponent("source").path, "-o", bundle).status == 0)
        let landed = directory.appendingPathComponent("landed").path
        let result = try CLI.run("import", bundle, "--into", landed)
        #expect(result.status == 0)
        #expect(result.errors.contains("files/Documents/current_tournament.json: unrecognized: kape.tournament (its path matches Documents/current_tournament.json), but no version field or fingerprint tells its version"), "\(result.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: landed + "/Documents/current_tournament.json")) == save)
        let strict = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("strict").path, "--strict")
        #expect(strict.status == 65, "\(strict.errors)")
        #expect(strict.errors.contains("files/Documents/current_tournament.json: unrecognized: kape.tournament"), "\(strict.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("strict").path))
    }
}

/// An import checks entries on one thread and writes them on another: a failure on either side
/// stops both, and nothing lands.
@Suite("import: a failure on either thread")
struct ImportThreadFailureTests {
    /// 300 small files and one of 64 KiB in the middle; `ulimit -f` makes writing that one fail
    /// with EFBIG on the writing thread, after many entries were handed over and before the rest.
    @Test func aWriteThatFailsStopsTheImportAndChangesNothing() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("saves")
        for index in 0..<300 {
            let folder = source.appendingPathComponent("slot-\(index % 10)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let size = index == 150 ? 64 << 10 : 1_000
            try Data(repeating: UInt8(index % 251), count: size).write(to: folder.appendingPathComponent("save-\(index).bin"))
        }
        let bundle = directory.appendingPathComponent("saves.tar.gz").path
        #expect(try CLI.run("export", source.path, "-o", bundle).status == 0)
        let target = directory.appendingPathComponent("restored")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("the only copy".utf8).write(to: target.appendingPathComponent("keep.txt"))

        // SIGXFSZ ignored, so that the write fails with EFBIG instead of killing the process.
        let script = "trap '' XFSZ; ulimit -f 32; exec \"$0\" import \"$1\" --into \"$2\""
        let refused = try Processes.run(["/bin/sh", "-c", script, CLI.executable, bundle, target.path])
        #expect(refused.status == 74, "\(refused.errors)")
        #expect(refused.errors.hasPrefix("savetool: ") && refused.errors.contains("save-150.bin"), "\(refused.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == ["keep.txt"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["restored", "saves", "saves.tar.gz"])

        // A checksum that fails on the checking thread near the end, after most entries were handed over.
        let tar = directory.appendingPathComponent("saves.tar").path
        #expect(try CLI.run("export", source.path, "-o", tar).status == 0)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: tar))
        let last = try #require(bytes.range(of: Data(repeating: UInt8(299 % 251), count: 1_000), options: .backwards))
        bytes[last.lowerBound + 500] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: tar))
        let damaged = try CLI.run("import", tar, "--into", target.path)
        #expect(damaged.status == 65, "\(damaged.errors)")
        #expect(damaged.errors.contains("save-299.bin: SHA-256 "), "\(damaged.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == ["keep.txt"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["restored", "saves", "saves.tar", "saves.tar.gz"])
    }
}

/// The archive must hold the manifest's entries in the manifest's order: each entry is checked
/// against the next one listed, so an import keeps no table of every path.
@Suite("import: entries in the manifest's order")
struct ImportOrderTests {
    /// `inspect` of a bundle says which entries import refuses by their paths alone (a way out
    /// of the destination), before anyone imports it.
    @Test func inspectNamesWhatImportRefuses() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("hostile.tar").path
        let script = #"""
            import io, json, sys, tarfile
            manifest = {"format": "savetool.bundle/2", "createdAt": "2026-11-25T00:00:00Z", "createdBy": "test", "files": [
                {"path": "../evil.json", "size": 2, "sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "mode": "0644", "modifiedAt": "2026-11-25T00:00:00Z"},
                {"path": "out", "type": "symlink", "target": "/etc", "mode": "0777", "modifiedAt": "2026-11-25T00:00:00Z"},
                {"path": "ok.json", "size": 2, "sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "mode": "0644", "modifiedAt": "2026-11-25T00:00:00Z"}]}
            with tarfile.open(sys.argv[1], "w") as out:
                data = json.dumps(manifest).encode()
                info = tarfile.TarInfo("manifest.json"); info.size = len(data); out.addfile(info, io.BytesIO(data))
                info = tarfile.TarInfo("files/../b.json"); info.size = 2; out.addfile(info, io.BytesIO(b"{}"))
            """#
        #expect(try Processes.run(["python3", "-c", script, bundle]).status == 0)
        let inspected = try CLI.run("inspect", bundle)
        #expect(inspected.status == 0, "\(inspected.errors)")
        let text = inspected.outputText
        #expect(text.contains("  ../evil.json  2 bytes  (import refuses it: "), "\(text)")
        #expect(text.contains("  out  symlink → /etc  (import refuses it: a symbolic link to the absolute path /etc"), "\(text)")
        #expect(text.contains("  ok.json  2 bytes\n"), "\(text)")
        #expect(text.contains("  archive entry files/../b.json  (import refuses it: a '..' component"), "\(text)")
        #expect(text.contains("import refuses this bundle (3 entries above)"), "\(text)")
    }

    @Test func reorderedDuplicatedExtraAndMissingEntriesAreRefused() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for name in ["a.json", "b.json", "c.json"] { try Data("{\"n\": \"\(name)\"}".utf8).write(to: source.appendingPathComponent(name)) }
        let bundle = directory.appendingPathComponent("saves.tar").path
        #expect(try CLI.run("export", source.path, "-o", bundle).status == 0)
        // Rewrites the bundle's entries after the manifest in the order the names give.
        let script = """
            import sys, tarfile
            src, dst, order = sys.argv[1], sys.argv[2], sys.argv[3].split(",") if sys.argv[3] else []
            with tarfile.open(src) as tar:
                members = {m.name: (m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}
            with tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as out:
                for name in ["manifest.json"] + ["files/" + n for n in order]:
                    member, data = members[name]
                    out.addfile(member, None if data is None else __import__("io").BytesIO(data))
            """
        let cases: [(order: String, status: Int32, message: String)] = [
            ("a.json,b.json,c.json", 0, ""),
            ("b.json,a.json,c.json", 65, "files/b.json: where the manifest lists files/a.json next, expected the entries it lists, each once, in its order"),
            ("a.json,a.json,b.json,c.json", 65, "files/a.json: a second copy of the entry before it, expected each entry once"),
            ("a.json,b.json,c.json,c.json", 65, "files/c.json: a second copy of the entry before it, expected each entry once"),
            ("a.json,b.json", 65, "files/c.json: listed in the manifest but not in the bundle"),
        ]
        for (index, (order, status, message)) in cases.enumerated() {
            let rewritten = directory.appendingPathComponent("case-\(index).tar").path
            let made = try Processes.run(["python3", "-c", script, bundle, rewritten, order])
            #expect(made.status == 0, "\(made.errors)")
            let target = directory.appendingPathComponent("into-\(index)").path
            let result = try CLI.run("import", rewritten, "--into", target)
            #expect(result.status == status, "\(order): \(result.errors)")
            #expect(message.isEmpty ? result.errors.isEmpty : result.errors.contains(message), "\(order): \(result.errors)")
            #expect(FileManager.default.fileExists(atPath: target) == (status == 0), "\(order)")
        }
    }
}
