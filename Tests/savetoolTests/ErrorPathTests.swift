import Foundation
import TestSupport
import Testing

/// Every way a command can fail, through the binary: its exit code, one line on stderr
/// starting `savetool: ` and naming what is wrong, and nothing on disk created or changed.
@Suite("every error path: exit code and message shape")
struct ErrorPathTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Run in the case's own empty directory, after `prepare`; paths are relative to it.
        var arguments: [String]
        var prepare: @Sendable (URL) throws -> Void = { _ in }
        var status: Int32
        /// A regular expression the stderr line must match.
        var message: String
        /// The whole of stdout, when the command prints anything.
        var output = ""

        var testDescription: String { name }
    }

    // MARK: Prepared files

    static func write(_ text: String, to path: String, in directory: URL) throws {
        let url = directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// `saves/` with a version 1 tournament, which any migration that got going would rewrite
    /// (and, in place, save in a bundle first).
    static func oldSaves(_ directory: URL) throws {
        let documents = directory.appendingPathComponent("saves/Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.sample("kape/history/2024-v1/Documents/current_tournament.json"), toPath: documents.appendingPathComponent("current_tournament.json").path)
    }

    /// `strict.tar.gz`: a bundle whose one tournament is at the current version but invalid for its schema.
    static func bundleWithAnInvalidSave(_ directory: URL) throws {
        let source = directory.appendingPathComponent("source")
        try write(#"{"schemaVersion": 3, "players": [], "round": -5, "activePlayerIndex": 0, "status": "playing", "deckId": "classic"}"#,
                  to: "Documents/current_tournament.json", in: source)
        let exported = try CLI.run("export", source.path, "-o", directory.appendingPathComponent("strict.tar.gz").path)
        #expect(exported.status == 0, "\(exported.errors)")
        try FileManager.default.removeItem(at: source)
    }

    /// `damaged.tar.gz`: a whole gzip stream whose tar has a byte changed in the header after
    /// the manifest's (read by savetool's own tar reader, which names the header's offset).
    static func bundleWithADamagedHeader(_ directory: URL) throws {
        let plain = directory.appendingPathComponent("kape.tar")
        #expect(try CLI.run("export", CLI.sample("kape"), "-o", plain.path).status == 0)
        var bytes = Array(try Data(contentsOf: plain))
        // The manifest's size (octal, at 124 of the first header) and its padding: the next header.
        let size = Int(String(decoding: bytes[124..<135], as: UTF8.self), radix: 8)!
        let next = 512 + (size + 511) / 512 * 512
        bytes[next + 10] ^= 0x20
        try Data(bytes).write(to: plain)
        let gzip = try Processes.run(["gzip", "-n", plain.path])
        #expect(gzip.status == 0, "\(gzip.errors)")
        try FileManager.default.moveItem(at: directory.appendingPathComponent("kape.tar.gz"), to: directory.appendingPathComponent("damaged.tar.gz"))
    }

    static let cases: [Case] = [
        Case(name: "migrate --kind no.such.kind", arguments: ["migrate", "saves", "--in-place", "--kind", "no.such.kind"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "no save kind 'no\\.such\\.kind'"),
        Case(name: "migrate without a destination", arguments: ["migrate", "saves"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "^savetool: say where the results go: .* \\(see savetool migrate --help\\)$"),
        Case(name: "an unknown option", arguments: ["backup", "create", "saves", "--repo", "backups", "--bogus"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "^savetool: Unknown option '--bogus' \\(see savetool backup create --help\\)$"),
        Case(name: "migrate --to 7", arguments: ["migrate", "saves", "--in-place", "--to", "7"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "version 7, expected at most 3"),
        Case(name: "validate --kind nope", arguments: ["validate", "saves/Documents/current_tournament.json", "--kind", "nope"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "no save kind 'nope'"),
        Case(name: "migrate of a missing path", arguments: ["migrate", "saves", "missing-saves", "--in-place"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 66, message: "^savetool: missing-saves: cannot read"),
        // An endless input: stopped at the limit, not when memory runs out.
        Case(name: "inspect of an endless device", arguments: ["inspect", "/dev/zero", "--from", "json"],
             status: 65, message: "^savetool: /dev/zero: more than 1 GiB and still going, expected a save document"),
        Case(name: "backup prune --keep -1", arguments: ["backup", "prune", "--repo", "backups", "--keep", "-1"],
             status: 64, message: "^savetool: --keep -1, expected a number of days of 1 or more"),
        Case(name: "import --max-entries -5", arguments: ["import", "missing.tar.gz", "--into", "restored", "--max-entries", "-5"],
             status: 64, message: "^savetool: --max-entries -5, expected a number above 0"),
        Case(name: "get --entry of a folder in a bundle", arguments: ["get", "kape.tar.gz", "--entry", "files/Documents", "/round"],
             prepare: { directory in
                 let exported = try CLI.run("export", CLI.sample("kape"), "-o", directory.appendingPathComponent("kape.tar.gz").path)
                 #expect(exported.status == 0, "\(exported.errors)")
             },
             status: 65, message: "^savetool: kape\\.tar\\.gz: entry files/Documents: a folder, expected a file"),
        Case(name: "convert --to archive", arguments: ["convert", "f.json", "--to", "archive"],
             prepare: { try ErrorPathTests.write(#"{"a": 1}"#, to: "f.json", in: $0) },
             status: 64, message: "^savetool: 'archive' reads archives, expected a document codec"),
        Case(name: "convert --plain to a plist", arguments: ["convert", "f.json", "--plain", "-o", "f.bplist"],
             prepare: { try ErrorPathTests.write(#"{"a": 1}"#, to: "f.json", in: $0) },
             status: 64, message: "^savetool: --plain writes plain JSON, expected it with a JSON output, not bplist"),
        Case(name: "convert -o a folder's name", arguments: ["convert", "f.json", "-o", "out/", "--to", "json"],
             prepare: { try ErrorPathTests.write(#"{"a": 1}"#, to: "f.json", in: $0); try FileManager.default.createDirectory(at: $0.appendingPathComponent("out"), withIntermediateDirectories: false) },
             status: 73, message: "^savetool: out/: cannot create: a folder's name \\(it ends in /\\), expected a file's$"),
        Case(name: "diff - -", arguments: ["diff", "-", "-"],
             status: 64, message: "^savetool: '-' for both sides, expected standard input as one of them at most"),
        Case(name: "a null document with --null drop", arguments: ["convert", "n.json", "--null", "drop", "-o", "n.plist"],
             prepare: { try ErrorPathTests.write("null", to: "n.json", in: $0) },
             status: 65, message: "a null document cannot be written as plist, expected a value \\(plist has no null; dropping nulls leaves out keys and elements, never the whole document\\)$"),
        Case(name: "inspect of a missing file", arguments: ["inspect", "missing.json"],
             status: 66, message: "^savetool: missing\\.json: cannot read"),
        Case(name: "inspect of a bundle cut short", arguments: ["inspect", "cut.tar.gz"],
             prepare: { directory in
                 let whole = directory.appendingPathComponent("kape.tar.gz")
                 #expect(try CLI.run("export", CLI.sample("kape"), "-o", whole.path).status == 0)
                 try Data(try Data(contentsOf: whole).prefix(1500)).write(to: directory.appendingPathComponent("cut.tar.gz"))
             },
             status: 65, message: "^savetool: cut.tar.gz: gzip data that is cut short or damaged \\(a truncated or damaged file\\?\\), expected a whole gzip stream$"),
        Case(name: "import of a missing bundle", arguments: ["import", "missing.tar.gz", "--into", "restored"],
             status: 66, message: "^savetool: missing\\.tar\\.gz: cannot read"),
        Case(name: "import of a bundle with a damaged tar header", arguments: ["import", "damaged.tar.gz", "--into", "restored"],
             prepare: { try ErrorPathTests.bundleWithADamagedHeader($0) },
             status: 65, message: "^savetool: damaged\\.tar\\.gz: at byte [0-9]+ of the tar stream, after manifest\\.json: a tar header whose checksum does not match its bytes"),
        Case(name: "import of a file that is not an archive", arguments: ["import", "not-a-bundle.tar.gz", "--into", "restored"],
             prepare: { try ErrorPathTests.write("these are not the bytes of an archive\n", to: "not-a-bundle.tar.gz", in: $0) },
             status: 65, message: "^savetool: not-a-bundle\\.tar\\.gz: "),
        Case(name: "convert of broken JSON", arguments: ["convert", "broken.json", "-o", "converted.plist"],
             prepare: { try ErrorPathTests.write("{\"players\": [\"Ana\",\n  \"Besa\",]\n}\n", to: "broken.json", in: $0) },
             status: 65, message: "^savetool: broken\\.json:2:10: "),
        Case(name: "migrate of a truncated save", arguments: ["migrate", "saves", "--in-place"],
             prepare: { directory in
                 let whole = try Data(contentsOf: URL(fileURLWithPath: CLI.sample("kape/history/2024-v1/Documents/current_tournament.json")))
                 try ErrorPathTests.write(String(decoding: whole.prefix(40), as: UTF8.self), to: "saves/Documents/current_tournament.json", in: directory)
             },
             status: 1, message: "^savetool: saves/Documents/current_tournament\\.json:[0-9]+:[0-9]+: failed: the end of the input, expected ",
             output: "0 migrated, 0 unchanged, 0 skipped, 1 failed\n"),
        Case(name: "import --strict of an invalid save", arguments: ["import", "strict.tar.gz", "--into", "restored", "--strict"], prepare: { try ErrorPathTests.bundleWithAnInvalidSave($0) },
             status: 65, message: "^savetool: strict\\.tar\\.gz: files/Documents/current_tournament\\.json: invalid: "),
        Case(name: "export into a missing directory", arguments: ["export", "saves", "-o", "missing-dir/saves.tar.gz"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 73, message: "^savetool: missing-dir/saves\\.tar\\.gz: "),
        Case(name: "backup verify of a missing repository", arguments: ["backup", "verify", "--repo", "missing-repo"],
             status: 66, message: "^savetool: missing-repo: "),
        Case(name: "backup list of a missing repository", arguments: ["backup", "list", "--repo", "missing-repo"],
             status: 66, message: "^savetool: missing-repo: "),
        Case(name: "backup prune of a missing repository", arguments: ["backup", "prune", "--repo", "missing-repo"],
             status: 66, message: "^savetool: missing-repo: "),
        Case(name: "export to an extension savetool cannot write", arguments: ["export", "saves", "-o", "saves.tar.bz2"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "saves\\.tar\\.bz2"),
        Case(name: "export over a file not named as a bundle", arguments: ["export", "saves", "-o", "save.json"],
             prepare: { try ErrorPathTests.oldSaves($0); try ErrorPathTests.write("{\"coins\": 5}\n", to: "save.json", in: $0) },
             status: 64, message: "-o save\\.json is there already, is not a bundle and is not named as one"),
        Case(name: "export with a compression the name contradicts", arguments: ["export", "saves", "--compression", "zstd", "-o", "saves.tar.gz"], prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "zstd.*saves\\.tar\\.gz"),
        Case(name: "import --into . with the backup repository inside it", arguments: ["import", "strict.tar.gz", "--into", ".", "--backup-repo", "backups"],
             prepare: { try ErrorPathTests.bundleWithAnInvalidSave($0) }, status: 64, message: "backups: inside the destination"),
        Case(name: "import --into a file", arguments: ["import", "strict.tar.gz", "--into", "a-file"],
             prepare: { try ErrorPathTests.bundleWithAnInvalidSave($0); try ErrorPathTests.write("kept\n", to: "a-file", in: $0) },
             status: 73, message: "a-file: a file, expected a folder to restore into, or a path where nothing is yet$"),
        Case(name: "backup verify of a backup that is not there", arguments: ["backup", "verify", "--repo", "backups", "saves-2026-11-20.tar.gz"],
             prepare: {
                 // A repository (its lock is there) without that backup.
                 try FileManager.default.createDirectory(at: $0.appendingPathComponent("backups"), withIntermediateDirectories: false)
                 try ErrorPathTests.write("", to: "backups/.savetool-lock", in: $0)
             },
             status: 66, message: "^savetool: backups/saves-2026-11-20\\.tar\\.gz: cannot read"),
        Case(name: "migrate --out a file", arguments: ["migrate", "saves", "--out", "a-file"],
             prepare: { try ErrorPathTests.oldSaves($0); try ErrorPathTests.write("kept\n", to: "a-file", in: $0) },
             status: 73, message: "^savetool: a-file: a file, expected a folder for the migrated copies"),
        Case(name: "migrate --out inside the folder being migrated", arguments: ["migrate", "saves", "--out", "saves/migrated"],
             prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "^savetool: saves/migrated: would put the migrated copies among the files migrated from saves, expected a folder outside them; or --in-place, which keeps the originals in a bundle first$"),
        Case(name: "backup create --name with a slash", arguments: ["backup", "create", "saves", "--repo", "backups", "--name", "a/b"],
             prepare: { try ErrorPathTests.oldSaves($0) },
             status: 64, message: "^savetool: --name a/b, expected a file name: not empty, no /, not starting with \\. "),
    ]

    /// A standard output that cannot be written (a full device, a closed descriptor) is an I/O
    /// error, 74, named as standard output: never a crash, never a success.
    @Test(arguments: [
        ["get", "f.json", "/a"], ["diff", "f.json", "g.json"], ["inspect", "f.json"], ["formats", "list"], ["convert", "f.json"], ["--json", "inspect", "f.json"],
        ["export", "d", "-o", "-"],
    ])
    func anUnwritableStandardOutputIs74(_ arguments: [String]) throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.write(#"{"a": 1}"#, to: "f.json", in: directory)
        try Self.write(#"{"a": 2}"#, to: "g.json", in: directory)
        try Self.write(#"{"a": 3}"#, to: "d/h.json", in: directory)
        let quoted = ([CLI.executable] + arguments).map { "'\($0)'" }.joined(separator: " ")
        for redirect in ["> /dev/full", ">&-"] {
            let run = try Processes.run(["/bin/sh", "-c", "exec \(quoted) \(redirect)"], directory: directory)
            #expect(run.status == 74, "\(arguments) \(redirect): \(run.errors)")
            // (export says what it wrote before it learns that standard output was closed)
            #expect(run.errors.split(separator: "\n").last?.hasPrefix("savetool: <stdout>: writing failed: ") == true, "\(arguments) \(redirect): \(run.errors)")
        }
    }

    @Test func theTableCoversEveryPath() {
        #expect(Self.cases.count == 36)
        #expect(Set(Self.cases.map(\.name)).count == Self.cases.count)
        #expect(Set(Self.cases.map(\.status)) == [1, 64, 65, 66, 73])
    }

    @Test(arguments: ErrorPathTests.cases)
    func failsWithItsCodeAndOneLine(_ failure: Case) throws {
        let directory = try Processes.temporaryDirectory("error-path")
        defer { try? FileManager.default.removeItem(at: directory) }
        try failure.prepare(directory)
        let listing = try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted()
        let contents = try ImportCrashTests.contents(of: directory)

        let result = try Processes.run([CLI.executable] + failure.arguments, directory: directory)
        #expect(result.status == failure.status, "exit \(result.status): \(result.errors)")
        #expect(result.errors.hasPrefix("savetool: "), "\(result.errors)")
        #expect(result.errors.hasSuffix("\n") && result.errors.filter { $0 == "\n" }.count == 1, "not one line: \(result.errors)")
        #expect(result.errorMatches(failure.message), "\(result.errors) does not match \(failure.message)")
        #expect(result.outputText == failure.output)
        // Nothing created, nothing changed: no output file, no bundle of originals, no staging left behind.
        #expect(try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted() == listing)
        #expect(try ImportCrashTests.contents(of: directory) == contents)
    }
}
