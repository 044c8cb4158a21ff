import Foundation
import SaveKit
import TestSupport
import Testing

/// Recognition never guesses: files of no kind pass through export, import and migrate exactly,
/// and an import lands every file of a bundle — migrated where it surely can be, as it was otherwise.
@Suite("trust: recognition and import")
struct TrustImportTests {
    /// The three sorts of ordinary files in the tree of `ordinaryFilesPassThroughUntouched`.
    enum Sort: CaseIterable { case json, text, binaryPlist }

    /// Writes 200 files that belong to no kind under `root` — version fields everywhere, near
    /// misses of the kinds' paths and fingerprints — and returns their relative paths by sort,
    /// in the order written.
    static func writeOrdinaryTree(at root: URL) throws -> [Sort: [String]] {
        var written: [Sort: [String]] = [:]
        func write(_ path: String, _ text: String, as sort: Sort) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            written[sort, default: []].append(path)
        }
        for index in 0..<80 {
            switch index % 4 {
            case 0:  // a package.json: a version field alone is nobody's save
                try write("packages/pkg-\(index)/package.json", #"{"name": "pkg-\#(index)", "version": 3, "private": true}"#, as: .json)
            case 1:  // a tournament's version field and words, without its fingerprint's /roundIndex
                try write("config/config-\(index).json", #"{"schemaVersion": 2, "round": 99, "players": ["Ana"], "id": \#(index)}"#, as: .json)
            case 2:  // blocks.gamesave's /lastSaved without its /playerLevel
                try write("Documents/slot-\(index).json", #"{"saveVersion": 1, "slot": \#(index), "lastSaved": 731842335.5, "coins": 10}"#, as: .json)
            default:  // a path next to the tournament's, not ending with it
                try write("Documents/current_tournament-\(index).json", #"{"schemaVersion": 1, "players": [], "scores": {}}"#, as: .json)
            }
        }
        for index in 0..<60 {
            switch index % 3 {
            case 0: try write("etc/app-\(index).conf", "# settings of app \(index)\nversion = \(index % 5 + 1)\nname = x\n", as: .text)
            case 1: try write("notes/notes-\(index).txt", "saveVersion: \(index)\nnotes: none\n", as: .text)
            default: try write("settings/settings-\(index).ini", "[core]\nversion = 2\nround = 99\n", as: .text)
            }
        }
        // Other apps' UserDefaults: blocks.defaults' /launchCount without its /gameSave,
        // kingdom.player's /player_id and /reputation without its /cooldowns.
        let script = #"""
            import datetime, os, plistlib, sys
            root = sys.argv[1]
            os.makedirs(os.path.join(root, "Library/Preferences"), exist_ok=True)
            for index in range(60):
                value = {"version": 3, "saveVersion": index, "theme": "dark", "launchCount": index,
                         "player_id": "P%d" % index, "reputation": {"north": index},
                         "lastOpened": datetime.datetime(2026, 1, 1, 8, 0, index % 60), "token": bytes([0, 1, 2, index])}
                with open(os.path.join(root, "Library/Preferences/com.other.app%d.plist" % index), "wb") as out:
                    out.write(plistlib.dumps(value, fmt=plistlib.FMT_BINARY))
            """#
        let made = try Processes.run(["python3", "-c", script, root.path])
        #expect(made.status == 0, "\(made.errors)")
        written[.binaryPlist] = (0..<60).map { "Library/Preferences/com.other.app\($0).plist" }
        return written
    }

    @Test func ordinaryFilesPassThroughUntouched() throws {
        let workspace = try Processes.temporaryDirectory("trust-ordinary")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let tree = workspace.appendingPathComponent("tree")
        let written = try Self.writeOrdinaryTree(at: tree)
        #expect(written[.json]?.count == 80 && written[.text]?.count == 60 && written[.binaryPlist]?.count == 60)
        let original = try ImportCrashTests.contents(of: tree)
        #expect(original.count == 200)
        #expect(original.keys.sorted() == written.values.flatMap { $0 }.sorted())
        #expect(original.values.filter { $0.prefix(8) == Data("bplist00".utf8) }.count == 60)

        // export, then import into a new directory: every file back byte for byte, nothing migrated.
        let bundle = workspace.appendingPathComponent("tree.tar.gz").path
        let exported = try CLI.run("export", tree.path, "-o", bundle)
        #expect(exported.status == 0, "\(exported.errors)")
        let restored = workspace.appendingPathComponent("restored")
        let imported = try CLI.run("import", bundle, "--into", restored.path)
        #expect(imported.status == 0)
        #expect(imported.outputText == "restored 200 files into \(restored.path)\n")
        #expect(imported.errors.isEmpty)
        #expect(Files.regularFiles(under: restored.path) == Files.regularFiles(under: tree.path))
        let landed = try ImportCrashTests.contents(of: restored)
        #expect(landed.count == 200)
        for (path, bytes) in original {
            #expect(landed[path] == bytes, "\(path) did not land byte for byte")
        }

        // migrate sees nothing of its own: all 200 skipped, and in place nothing is written.
        let checked = try CLI.run("migrate", tree.path, "--check")
        #expect(checked.status == 0, "\(checked.errors)")
        #expect(checked.outputText == "0 would be migrated, 0 unchanged, 200 skipped, 0 failed\n")
        #expect(checked.errors.isEmpty)
        let besideBefore = try FileManager.default.contentsOfDirectory(atPath: workspace.path).sorted()
        let inPlace = try CLI.run("migrate", tree.path, "--in-place")
        #expect(inPlace.status == 0 && inPlace.outputText == "0 migrated, 0 unchanged, 200 skipped, 0 failed\n", "\(inPlace.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.path).sorted() == besideBefore, "a bundle was written though nothing changed")
        #expect(try ImportCrashTests.contents(of: tree) == original)

        // inspect names no kind: no `kind:` line, no "kind" key.
        var inspected = 0
        for sort in Sort.allCases {
            let sample = Array((written[sort] ?? []).prefix(10))
            #expect(sample.count == 10)
            for relative in sample {
                let path = tree.appendingPathComponent(relative).path
                let text = try CLI.run("inspect", path)
                let json = try CLI.run("--json", "inspect", path)
                #expect(!text.outputText.split(separator: "\n").contains { $0.hasPrefix("kind:") }, "\(relative): \(text.outputText)")
                #expect(!text.errors.contains("kind"), "\(relative): \(text.errors)")
                switch sort {
                case .json, .binaryPlist:
                    #expect(text.status == 0, "\(relative): \(text.errors)")
                    #expect(text.outputText.hasPrefix("file:      \(path)\ncodec:     \(sort == .json ? "json" : "bplist") "), "\(relative): \(text.outputText)")
                    #expect(json.status == 0, "\(relative): \(json.errors)")
                    let value = try Codecs.value(json.outputText)
                    #expect(value["codec"]?.stringValue == (sort == .json ? "json" : "bplist"))
                    let kind: SaveValue? = value["kind"]
                    #expect(kind == nil, "\(relative) was given a kind: \(json.outputText)")
                case .text:
                    // Not a document at all: refused as such, with no kind named either.
                    #expect(text.status == 65 && text.output.isEmpty, "\(relative): \(text.status) \(text.outputText)")
                    #expect(json.status == 65 && json.output.isEmpty, "\(relative): \(json.status) \(json.outputText)")
                }
                inspected += 1
            }
        }
        #expect(inspected == 30)
    }

    // MARK: - A bundle of saves with problems

    static let invalidTournament = #"{"schemaVersion": 3, "players": [{"name": "Ana", "score": 2}], "round": -5, "activePlayerIndex": 0, "status": "playing", "deckId": "classic"}"# + "\n"
    static let futureGame = #"{"version": 99, "puzzleId": "daily-2030-01-01", "board": "530070000600195000098000060800060003400803001700020006060000280000419005000080079", "timer": {"elapsedSeconds": 5, "paused": false}, "completed": false}"# + "\n"
    static let readme = #"{"title": "notes", "version": 4}"# + "\n"

    /// A save tree holding an invalid current tournament, an old sudoku game, a sudoku game from
    /// the future and a file of no kind, exported as a bundle. Returns the bundle and the bytes
    /// of each file as the bundle holds them (read back from it with tar).
    static func makeMixedBundle(in workspace: URL) throws -> (bundle: String, files: [String: Data]) {
        let source = workspace.appendingPathComponent("source")
        let games = source.appendingPathComponent("Documents/games")
        try FileManager.default.createDirectory(at: games, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: source.appendingPathComponent("notes"), withIntermediateDirectories: true)
        try Data(invalidTournament.utf8).write(to: source.appendingPathComponent("Documents/current_tournament.json"))
        try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v1-in-progress.json"), toPath: games.appendingPathComponent("old.json").path)
        try Data(futureGame.utf8).write(to: games.appendingPathComponent("future.json"))
        try Data(readme.utf8).write(to: source.appendingPathComponent("notes/readme.json"))
        // The tournament really is invalid for its schema, and the old game really is version 1.
        let invalid = try CLI.run("validate", source.appendingPathComponent("Documents/current_tournament.json").path)
        #expect(invalid.status == 65 && invalid.errors.contains("/round"), "\(invalid.outputText) \(invalid.errors)")
        #expect(try CLI.run("validate", games.appendingPathComponent("old.json").path).outputText.contains("sudoku.game version 1 of 2"))

        let bundle = workspace.appendingPathComponent("mixed.tar.gz").path
        let exported = try CLI.run("export", source.path, "-o", bundle)
        #expect(exported.status == 0, "\(exported.errors)")
        try FileManager.default.removeItem(at: source)
        let unpacked = workspace.appendingPathComponent("unpacked")
        try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: unpacked) }
        let untarred = try Processes.run(["tar", "-xzf", bundle, "-C", unpacked.path])
        #expect(untarred.status == 0, "\(untarred.errors)")
        let files = try ImportCrashTests.contents(of: unpacked.appendingPathComponent("files"))
        #expect(files.keys.sorted() == ["Documents/current_tournament.json", "Documents/games/future.json", "Documents/games/old.json", "notes/readme.json"])
        return (bundle, files)
    }

    @Test func importLandsEveryFileAndMigratesOnlyWhatSurelyCanBe() throws {
        let workspace = try Processes.temporaryDirectory("trust-import")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let (bundle, inBundle) = try Self.makeMixedBundle(in: workspace)
        try #require(inBundle.count == 4)

        let destination = workspace.appendingPathComponent("restored")
        let result = try CLI.run("import", bundle, "--into", destination.path)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.outputText == "restored 4 files into \(destination.path)\nmigrated Documents/games/old.json (sudoku.game) from version 1 to 2\n")
        // One warning per problem save, naming it and why; the file of no kind is not mentioned.
        let warnings = result.errors.split(separator: "\n").map(String.init)
        #expect(warnings.count == 2, "\(result.errors)")
        #expect(warnings.contains { $0.hasPrefix("savetool: warning: \(bundle): files/Documents/current_tournament.json: invalid: ") && $0.hasSuffix("; landed as it was") && $0.contains("/round") }, "\(result.errors)")
        #expect(warnings.contains { $0.hasPrefix("savetool: warning: \(bundle): files/Documents/games/future.json: future: ") && $0.hasSuffix("; landed as it was") && $0.contains("99") }, "\(result.errors)")
        #expect(!result.errors.contains("readme.json") && !result.errors.contains("old.json"))

        // All four landed: the old game migrated and valid, the other three exactly as in the bundle.
        let landed = try ImportCrashTests.contents(of: destination)
        #expect(landed.keys.sorted() == inBundle.keys.sorted())
        for path in ["Documents/current_tournament.json", "Documents/games/future.json", "notes/readme.json"] {
            #expect(landed[path] == inBundle[path], "\(path) did not land byte for byte")
        }
        let old = destination.appendingPathComponent("Documents/games/old.json").path
        #expect(landed["Documents/games/old.json"] != inBundle["Documents/games/old.json"])
        let validated = try CLI.run("validate", old)
        #expect(validated.status == 0, "\(validated.errors)")
        #expect(validated.outputText.contains("sudoku.game version 2 of 2"), "\(validated.outputText)")
        #expect(try CLI.run("get", old, "/version").outputText == "2\n")
        #expect(try CLI.run("get", old, "/timer/elapsedSeconds").outputText == "312\n")

        // The same in JSON: the migrated file and the two warnings, with their kinds and versions.
        let jsonDestination = workspace.appendingPathComponent("restored-json")
        let json = try CLI.run("--json", "import", bundle, "--into", jsonDestination.path)
        #expect(json.status == 0, "\(json.errors)")
        let summary = try Codecs.value(json.outputText)
        let migrated = summary["migrated"]?.arrayValue ?? []
        #expect(migrated.count == 1)
        #expect(migrated.first?["path"]?.stringValue == "Documents/games/old.json")
        #expect(migrated.first?["kind"]?.stringValue == "sudoku.game")
        #expect(migrated.first?["from"]?.int64Value == 1 && migrated.first?["to"]?.int64Value == 2)
        let warned = summary["warnings"]?.arrayValue ?? []
        #expect(warned.count == 2)
        let byPath = Dictionary(warned.compactMap { item in item["path"]?.stringValue.map { ($0, item) } }, uniquingKeysWith: { first, _ in first })
        #expect(byPath["Documents/current_tournament.json"]?["status"]?.stringValue == "invalid")
        #expect(byPath["Documents/current_tournament.json"]?["kind"]?.stringValue == "kape.tournament")
        #expect(byPath["Documents/games/future.json"]?["status"]?.stringValue == "future")
        #expect(byPath["Documents/games/future.json"]?["from"]?.int64Value == 99)
        #expect(byPath["Documents/games/future.json"]?["problem"]?.stringValue?.isEmpty == false)
        #expect(try ImportCrashTests.contents(of: jsonDestination) == landed)

        // --no-migrate: an exact restore of all four.
        let raw = workspace.appendingPathComponent("raw")
        let exact = try CLI.run("import", bundle, "--into", raw.path, "--no-migrate")
        #expect(exact.status == 0, "\(exact.errors)")
        #expect(!exact.outputText.contains("migrated "))
        #expect(try ImportCrashTests.contents(of: raw) == inBundle)
    }

    @Test func strictRefusesTheWholeImportAndWritesNothing() throws {
        let workspace = try Processes.temporaryDirectory("trust-strict")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let (bundle, _) = try Self.makeMixedBundle(in: workspace)
        let refusal = "^savetool: \(NSRegularExpression.escapedPattern(for: bundle)): files/Documents/(current_tournament\\.json: invalid|games/future\\.json: future): .+\n$"

        // Into a path that does not exist: it still does not, and nothing was left beside it.
        let before = try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted()
        let fresh = workspace.appendingPathComponent("fresh")
        let refused = try CLI.run("import", bundle, "--into", fresh.path, "--strict")
        #expect(refused.status == 65)
        #expect(refused.errorMatches(refusal), "\(refused.errors)")
        #expect(refused.output.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fresh.path))
        #expect(try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted() == before)

        // Into a directory holding a file: left exactly as it was, and no before-import bundle written.
        let existing = workspace.appendingPathComponent("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        try Data("keep me\n".utf8).write(to: existing.appendingPathComponent("marker.txt"))
        let held = try ImportCrashTests.contents(of: existing)
        let listing = try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted()
        let refusedAgain = try CLI.run("import", bundle, "--into", existing.path, "--strict")
        #expect(refusedAgain.status == 65)
        #expect(refusedAgain.errorMatches(refusal), "\(refusedAgain.errors)")
        #expect(try ImportCrashTests.contents(of: existing) == held)
        #expect(try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted() == listing)
        let names = try FileManager.default.contentsOfDirectory(atPath: workspace.path)
        #expect(!names.contains { $0.contains("before-import") }, "\(names)")

        // Without --strict the same import goes through, and saves what the directory held.
        let lenient = try CLI.run("import", bundle, "--into", existing.path)
        #expect(lenient.status == 0, "\(lenient.errors)")
        let saved = try #require(lenient.outputText.split(separator: "\n").first(where: { $0.hasPrefix("previous contents saved in ") }))
        let previous = String(saved.dropFirst("previous contents saved in ".count))
        #expect(URL(fileURLWithPath: previous).lastPathComponent.hasPrefix("existing-before-import-"))
        #expect(try Processes.run(["tar", "-tzf", previous]).outputText == "manifest.json\nfiles/marker.txt\n")
    }

    @Test func dryRunListsWhatWouldBeMigratedAndWritesNothing() throws {
        let workspace = try Processes.temporaryDirectory("trust-dry-run")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let (bundle, _) = try Self.makeMixedBundle(in: workspace)
        let existing = workspace.appendingPathComponent("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        try Data("keep me\n".utf8).write(to: existing.appendingPathComponent("marker.txt"))
        let before = try ImportCrashTests.contents(of: workspace)
        let listing = try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted()

        for destination in [workspace.appendingPathComponent("fresh"), existing] {
            let result = try CLI.run("import", bundle, "--into", destination.path, "--dry-run")
            #expect(result.status == 0, "\(result.errors)")
            let lines = result.outputText.split(separator: "\n").map(String.init)
            #expect(lines.first == "verified 4 files in \(bundle); nothing written")
            #expect(lines.filter { $0.hasPrefix("would migrate ") } == ["would migrate Documents/games/old.json (sudoku.game) from version 1 to 2"])
            #expect(!lines.contains { $0.hasPrefix("previous contents saved in ") })
            #expect(result.errors.contains("files/Documents/games/future.json: future"), "\(result.errors)")
            #expect(result.errors.contains("files/Documents/current_tournament.json: invalid"), "\(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: workspace.appendingPathComponent("fresh").path))
            #expect(try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted() == listing)
            #expect(try ImportCrashTests.contents(of: workspace) == before)
        }
    }
}
