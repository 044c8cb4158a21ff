import Foundation
import SaveKit
import TestSupport
import Testing

@Suite("savetool migrate and validate")
struct MigrateCommandTests {
    @Test func samplesReachTheCurrentVersionAndASecondRunWritesNothing() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out").path
        let report = directory.appendingPathComponent("report.jsonl").path
        let samples = Corpus.packageRoot.appendingPathComponent("samples").path
        let first = try CLI.run("migrate", samples, "--out", out, "--report", report)
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.outputText == "16 migrated, 9 unchanged, 0 skipped, 0 failed\n")
        // A folder given with a final slash, as shells complete it, names its files without "//".
        let slashed = try CLI.run("migrate", samples + "/", "--dry-run", "--report", "-")
        #expect(slashed.status == 0 && slashed.outputText.contains("\"file\":\"\(samples)/kape/") && !slashed.outputText.contains("//"), "\(slashed.outputText)")
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 25)
        #expect(lines.contains { $0.contains(#""status":"migrated","steps":["1→2","2→3"]"#) })
        #expect(lines.contains { $0.contains(#""kind":"kingdom.player","from":2,"to":2,"status":"migrated","steps":["/kingdoms_local_state: kingdom.state 1→2"]"#) })
        // Every file written is at its kind's current version and valid, embedded documents included.
        let written = Files.regularFiles(under: out)
        #expect(written.count == 16)
        for file in written {
            let validated = try CLI.run("--json", "validate", out + "/" + file)
            #expect(validated.status == 0 && (try? Codecs.value(validated.outputText))?["valid"] == true, "\(file): \(validated.outputText) \(validated.errors)")
            let text = try CLI.run("validate", out + "/" + file).outputText.split(separator: "\n")
            for line in text {
                let versions = line.firstMatch(of: /version (\d+) of (\d+)/)
                #expect(versions != nil && versions?.1 == versions?.2, "\(file): \(line)")
            }
            // --json names the embedded saves the text names, each with its kind and version.
            let embedded = (try? Codecs.value(validated.outputText))?["embedded"]?.arrayValue ?? []
            #expect(embedded.count == text.count - 1, "\(file): \(validated.outputText)")
            for save in embedded {
                let line = "\(out)/\(file)\(save["path"]?.stringValue ?? ""): \(save["kind"]?.stringValue ?? "") version \(save["version"]?.int64Value ?? 0) of"
                #expect(save["valid"] == true && text.contains { $0.hasPrefix(line) }, "\(line) in \(text)")
            }
        }
        let before = try FileManager.default.subpathsOfDirectory(atPath: out).sorted()
        let second = try CLI.run("migrate", out, "--in-place", "--no-backup")
        #expect(second.outputText == "0 migrated, 16 unchanged, 0 skipped, 0 failed\n")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: out).sorted() == before)
        // --check names each file it would migrate, and says "would be" of the count.
        let checked = try CLI.run("migrate", samples, "--check")
        #expect(checked.status == 1)
        let pending = checked.errors.split(separator: "\n").filter { $0.hasSuffix(")") && $0.contains(": would be migrated (") }
        // A holder whose own version stays names the embedded save that moves, not "1 to 1".
        #expect(pending.contains { $0.hasSuffix("com.example.blocks.plist: would be migrated (blocks.defaults /gameSave: blocks.gamesave 1→2)") }, "\(pending)")
        #expect(!pending.contains { $0.contains("version 1 to 1") || $0.contains("version 2 to 2") }, "\(pending)")
        #expect(!pending.isEmpty && checked.outputText.hasPrefix("\(pending.count) would be migrated, "), "\(checked.outputText)\(checked.errors)")
        #expect(try CLI.run("migrate", samples, "--check", "-q").outputText.isEmpty, "-q prints only errors")
        let both = try CLI.run("migrate", samples, "--in-place", "--out", out)
        #expect(both.status == 64 && both.errors.hasPrefix("savetool: --in-place and --out do not go together"), "\(both.errors)")
        #expect(try CLI.run("migrate", out, "--check").status == 0)
        // Nothing to write: --out is never made, and that is no failure.
        let nothing = try CLI.run("migrate", out, "--out", out + "-again")
        #expect(nothing.status == 0 && nothing.outputText == "0 migrated, 16 unchanged, 0 skipped, 0 failed\n", "\(nothing.errors)")
    }

    @Test func oneBadFileIsReportedAndLeftAsItWas() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        let stray = #"{"players": ["Ana"], "scores": {"Ana": 1, "Ghost": 9}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#
        let good = #"{"players": ["Ana"], "scores": {"Ana": 1}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#
        try Data(stray.utf8).write(to: saves.appendingPathComponent("a.json"))
        try Data(good.utf8).write(to: saves.appendingPathComponent("b.json"))
        try Data(#"{"schemaVersion": 7}"#.utf8).write(to: saves.appendingPathComponent("c.json"))
        try FileManager.default.createDirectory(at: saves.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        try Data(#"{"schemaVersion": 7}"#.utf8).write(to: saves.appendingPathComponent("Documents/current_tournament.json"))
        let result = try CLI.run("migrate", saves.path, "--in-place", "--no-backup")
        #expect(result.status == 1)
        // c.json has only a version field: nobody's save, skipped; the same at a tournament's path is from the future.
        #expect(result.outputText == "1 migrated, 0 unchanged, 1 skipped, 2 failed\n")
        #expect(result.errors.contains("a.json: failed: step 1→2, assert at /scores/Ghost: \"Ghost\" is not among the values at /players/*"))
        #expect(result.errors.contains("Documents/current_tournament.json: future: kape.tournament version 7, newer than the 3 savetool knows; left as it is"))
        #expect(!result.errors.contains("c.json"))
        #expect(try String(contentsOf: saves.appendingPathComponent("a.json"), encoding: .utf8) == stray)
        #expect(try String(contentsOf: saves.appendingPathComponent("b.json"), encoding: .utf8).contains(#""schemaVersion": 3"#))
    }

    @Test func aKindAddedThroughFormatsNeedsNoRebuild() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kind = directory.appendingPathComponent("formats/sudoku.game")
        try FileManager.default.createDirectory(at: kind, withIntermediateDirectories: true)
        try Data(#"{"format": "savetool.kind/1", "kind": "sudoku.game", "title": "Sudoku", "files": ["game.json"], "codec": "json", "version": {"path": "/version", "current": 2}, "detect": [{"version": 1, "all": [{"has": "/grid"}]}]}"#.utf8)
            .write(to: kind.appendingPathComponent("kind.json"))
        try Data(#"{"format": "savetool.migrations/1", "kind": "sudoku.game", "steps": [{"from": 1, "to": 2, "ops": [{"op": "rename", "from": "/grid", "to": "/board"}]}]}"#.utf8)
            .write(to: kind.appendingPathComponent("migrations.json"))
        let save = directory.appendingPathComponent("game.json")
        try Data(#"{"grid": [[5, 3, 0]], "elapsed": 61}"#.utf8).write(to: save)
        let formats = directory.appendingPathComponent("formats").path
        // A new kind's folder, scaffolded, loads at once; an existing one is never overwritten.
        // The formats folder is made as needed, and --json says what was written.
        let scaffold = try CLI.run("--json", "formats", "new", "starfarm.save", "--codec", "json", "--file", "Saves/farm.json", "--directory", formats)
        #expect(scaffold.status == 0, "\(scaffold.errors)")
        #expect(try Codecs.value(scaffold.outputText)["created"] == .array([.string(formats + "/starfarm.save/kind.json"), .string(formats + "/starfarm.save/schema-v1.json")]))
        let shown = try CLI.run("--formats", formats, "formats", "show", "starfarm.save")
        #expect(shown.status == 0 && shown.outputText.contains("files:        Saves/farm.json"), "\(shown.outputText) \(shown.errors)")
        // Its files have no version field yet: the message says what would tell the version.
        let farm = directory.appendingPathComponent("Saves/farm.json")
        try FileManager.default.createDirectory(at: farm.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"{"gold": 3}"#.utf8).write(to: farm)
        let unversioned = try CLI.run("--formats", formats, "validate", farm.path)
        #expect(unversioned.status == 65 && unversioned.errors == "savetool: \(farm.path): starfarm.save, but no version field or fingerprint tells its version, expected a version field at /saveVersion, or a fingerprint in its kind.json's \"detect\" that matches it (its path matches Saves/farm.json)\n", "\(unversioned.errors)")
        try Data(#"{"gold": 3, "saveVersion": 1}"#.utf8).write(to: farm)
        #expect(try CLI.run("--formats", formats, "validate", farm.path).status == 0)
        #expect(try CLI.run("formats", "new", "starfarm.save", "--codec", "json", "--directory", formats).status == 73)
        #expect(try CLI.run("formats", "new", "other.save", "--codec", "nope", "--directory", formats).status == 64)
        // The names other tools give the plist codecs are answered with savetool's.
        let xml = try CLI.run("convert", CLI.tournament, "--to", "xml")
        #expect(xml.status == 64 && xml.errors.contains("no codec 'xml', expected one of: ") && xml.errors.contains("(an XML plist is plist)"), "\(xml.errors)")
        let archive = try CLI.run("formats", "new", "other.save", "--codec", "tar.gz", "--directory", formats)
        #expect(archive.status == 64 && archive.errors.hasPrefix("savetool: --codec tar.gz: an archive codec, expected one of save documents: bplist, plist, json, keyed"), "\(archive.errors)")
        #expect(!FileManager.default.fileExists(atPath: formats + "/other.save"))
        // A binary plist kind claims files named as apps name them: .plist.
        #expect(try CLI.run("formats", "new", "blocks.copy", "--codec", "bplist", "--directory", formats).status == 0)
        let made = try Codecs.value(try String(contentsOfFile: formats + "/blocks.copy/kind.json", encoding: .utf8))
        #expect(made["files"] == ["blocks.copy.plist"], "\(made)")
        // A file its schema refuses says what it was checked as, as a valid one does.
        try Data(#"{"gold": "3", "saveVersion": 1}"#.utf8).write(to: farm)
        try Data(#"{"format": "savetool.schema/1", "type": "object", "properties": {"gold": {"type": "integer"}}}"#.utf8).write(to: URL(fileURLWithPath: formats + "/starfarm.save/schema-v1.json"))
        let invalid = try CLI.run("--formats", formats, "validate", farm.path)
        #expect(invalid.status == 65)
        #expect(invalid.outputText == "\(farm.path): starfarm.save version 1 of 1 (its path matches Saves/farm.json), not valid: 1 problem\n", "\(invalid.outputText)")
        #expect(invalid.errors == "savetool: \(farm.path):/gold: found a string, expected integer\n", "\(invalid.errors)")
        // A kind whose codec no codec has is refused with its file and pointer.
        let unknownCodec = URL(fileURLWithPath: formats + "-codec/zz.save")
        try FileManager.default.createDirectory(at: unknownCodec, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: formats + "-codec") }
        try Data(#"{"format": "savetool.kind/1", "kind": "zz.save", "codec": "zjson", "version": {"current": 1}}"#.utf8)
            .write(to: unknownCodec.appendingPathComponent("kind.json"))
        // Two broken files in two folders: a line each, in one run.
        try Data(#"{"format": "savetool.migrations/1", "kind": "zz.save", "stpes": []}"#.utf8).write(to: unknownCodec.appendingPathComponent("migrations.json"))
        let second = URL(fileURLWithPath: formats + "-codec/yy.save")
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        try Data(#"{"format": "savetool.kind/1", "kind": "yy.save", "version": {"current": 0}}"#.utf8).write(to: second.appendingPathComponent("kind.json"))
        let both = try CLI.run("--formats", formats + "-codec", "formats", "list")
        #expect(both.status == 65 && both.errors.split(separator: "\n").count == 2 && both.errors.split(separator: "\n").allSatisfy { $0.hasPrefix("savetool: ") }, "\(both.errors)")
        #expect(both.errors.contains("zz.save/migrations.json:/stpes: an unknown key for migrations.json"), "\(both.errors)")
        try FileManager.default.removeItem(at: unknownCodec.appendingPathComponent("migrations.json"))
        try FileManager.default.removeItem(at: second)
        let refused = try CLI.run("--formats", formats + "-codec", "formats", "list")
        #expect(refused.status == 65 && refused.errors.contains("zz.save/kind.json:/codec: no codec \"zjson\", expected one of"), "\(refused.errors)")
        // So is an embedded document's kind that no folder declares: the mistake is the kind's, not the files'.
        try Data(#"{"format": "savetool.kind/1", "kind": "zz.save", "codec": "json", "version": {"current": 1}, "embedded": {"/x": {"codec": "json", "kind": "no.such"}}}"#.utf8)
            .write(to: unknownCodec.appendingPathComponent("kind.json"))
        let unknownKind = try CLI.run("--formats", formats + "-codec", "formats", "show", "zz.save")
        #expect(unknownKind.status == 65 && unknownKind.errors.contains(#"zz.save/kind.json:/embedded/~1x/kind: no save kind "no.such", expected one of"#), "\(unknownKind.errors)")
        // A folder that is not there is an error, not silently no kinds.
        let missing = try CLI.run("formats", "--formats", formats + "-nope")
        #expect(missing.status == 66 && missing.errors.contains("-nope: no such folder, expected a folder of save-kind folders"), "\(missing.errors)")
        #expect(try CLI.run("formats", "--plugins", formats + "-nope").status == 66)
        let notAFolder = try CLI.run("formats", "--plugins", CLI.sample("kape/Documents/current_tournament.json"))
        #expect(notAFolder.status == 66 && notAFolder.errors.contains("current_tournament.json: not a folder, expected a folder of savetool-codec-<id> plugins"), "\(notAFolder.errors)")
        #expect(try CLI.run("formats", "--formats", formats).outputText.contains(/sudoku\.game +Sudoku  \[versions 1–2\]  \(.*formats\/sudoku\.game\)/))
        let migrated = try CLI.run("--formats", formats, "migrate", save.path, "--in-place", "--no-backup")
        #expect(migrated.outputText == "1 migrated, 0 unchanged, 0 skipped, 0 failed\n", "\(migrated.errors)")
        // Written over its text: the rename where the old key stood, its spacing and no final newline, as before.
        #expect(try String(contentsOf: save, encoding: .utf8) == #"{"board": [[5, 3, 0]], "elapsed": 61, "version": 2}"#)
        #expect(try CLI.run("migrate", save.path, "--in-place").status == 0)  // without --formats: not a known kind, skipped
    }

    /// A file migrated in place is its old text with what the migration changed in it: the
    /// players written by Python (`ensure_ascii`, an inline list) keep their bytes, and git
    /// shows the renamed and added keys only.
    @Test func aFileMigratedInPlaceChangesOnlyWhatTheMigrationChanged() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let save = directory.appendingPathComponent("Documents/current_tournament.json")
        try FileManager.default.createDirectory(at: save.deletingLastPathComponent(), withIntermediateDirectories: true)
        let players = "    \"players\": [\n        {\"name\": \"Zo\\u00eb\", \"score\": 7},\n        {\"name\": \"Drita\", \"score\": 4}\n    ],\n"
        try Data(("{\n" + players + "    \"roundIndex\": 5,\n    \"currentPlayerIndex\": 0,\n    \"deckId\": \"spicy\"\n}\n").utf8).write(to: save)
        let migrated = try CLI.run("migrate", directory.path, "--in-place", "--no-backup")
        #expect(migrated.outputText == "1 migrated, 0 unchanged, 0 skipped, 0 failed\n", "\(migrated.errors)")
        #expect(try String(contentsOf: save, encoding: .utf8) == "{\n" + players
            + "    \"round\": 5,\n    \"activePlayerIndex\": 0,\n    \"deckId\": \"spicy\",\n    \"status\": \"playing\",\n    \"schemaVersion\": 3\n}\n")
    }

    @Test func anEmbeddedSaveIsMigratedInsideItsPlist() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let prefs = directory.appendingPathComponent("com.example.blocks.plist").path
        try FileManager.default.copyItem(atPath: CLI.blocks, toPath: prefs)
        let result = try CLI.run("migrate", prefs, "--in-place", "--no-backup", "--json")
        #expect(result.outputText.contains(#""steps":["/gameSave: blocks.gamesave 1→2"]"#), "\(result.outputText) \(result.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: prefs)).prefix(8) == Data("bplist00".utf8))
        #expect(try CLI.run("get", prefs, "/gameSave/player").outputText == "{\n  \"level\": 14,\n  \"xp\": 2380\n}\n")
        #expect(try CLI.run("get", prefs, "/gameSave/lastSaved", "--raw").outputText == "2025-11-27T08:00:00.25Z\n")
        #expect(try CLI.run("get", prefs, "/launchCount").outputText == "212\n", "the outer values are untouched")
        let validated = try CLI.run("validate", prefs)
        #expect(validated.outputText.contains("/gameSave: blocks.gamesave version 2 of 2"))
        #expect(try CLI.run("migrate", prefs, "--check").status == 0)
        // A mistake inside the embedded save is named with that save's kind, not the holder's.
        #expect(try CLI.run("set", prefs, "/gameSave/coins", #""lots""#).status == 0)
        let invalid = try CLI.run("migrate", prefs, "--dry-run")
        #expect(invalid.errors.contains("invalid: not a valid blocks.gamesave version 2: /gameSave/coins: found a string, expected integer"), "\(invalid.errors)")
    }

    @Test func theWalkSkipsHiddenNamesAndDoesNotFollowDirectoryLinks() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves")
        let v1 = #"{"players": ["Ana"], "scores": {"Ana": 1}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#
        for path in ["b/one.json", "a/deep/two.json", ".git/three.json", "a/.cache.json"] {
            let file = saves.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(v1.utf8).write(to: file)
        }
        // A link back to the top would make the walk endless if it were followed.
        try FileManager.default.createSymbolicLink(atPath: saves.appendingPathComponent("a/loop").path, withDestinationPath: saves.path)
        try FileManager.default.createSymbolicLink(atPath: saves.appendingPathComponent("b/linked.json").path, withDestinationPath: saves.appendingPathComponent("b/one.json").path)
        let result = try CLI.run("--json", "migrate", saves.path, "--dry-run")
        #expect(result.status == 0, "\(result.errors)")
        let files = result.outputText.split(separator: "\n").compactMap { try? Codecs.value(String($0))["file"]?.stringValue }
        #expect(files == ["a/deep/two.json", "b/linked.json", "b/one.json"].map { saves.path + "/" + $0 }, "sorted, one directory at a time; a link to a file is followed")
        // JSON Lines, then the summary as the last line.
        let last = result.outputText.split(separator: "\n").last.map(String.init) ?? ""
        #expect(try Codecs.value(last) == Codecs.value(#"{"summary": {"migrated": 3, "unchanged": 0, "skipped": 0, "failed": 0, "dryRun": true}}"#), "\(last)")
        #expect(try CLI.run("migrate", saves.appendingPathComponent("nope").path, "--dry-run").status == 66)
    }

    /// A private save stays private, whether it is migrated in place or copied with `--out`.
    @Test func migratedFilesKeepTheirOriginalsMode() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        let v1 = #"{"players": ["Ana"], "scores": {"Ana": 1}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#
        let modes: [String: Int] = ["private.json": 0o600, "shared.json": 0o644, "group.json": 0o640]
        for (name, mode) in modes {
            let path = saves.appendingPathComponent(name).path
            try Data(v1.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        }
        let out = directory.appendingPathComponent("out").path
        // An earlier copy in --out with other permissions does not decide: the original does.
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: out + "/private.json"))
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: out + "/private.json")
        func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
        let copied = try CLI.run("migrate", saves.path, "--out", out)
        #expect(copied.status == 0, "\(copied.errors)")
        let inPlace = try CLI.run("migrate", saves.path, "--in-place", "--no-backup")
        #expect(inPlace.status == 0, "\(inPlace.errors)")
        for (name, expected) in modes {
            #expect(try mode(out + "/" + name) == expected, "--out \(name)")
            #expect(try mode(saves.path + "/" + name) == expected, "--in-place \(name)")
            #expect(try Codecs.value(String(contentsOfFile: out + "/" + name, encoding: .utf8))["schemaVersion"] == 3)
        }
    }

    /// The documented way back from `--in-place` (docs/formats.md: import the bundle into a
    /// folder of its own, then `cp -a` it over) gives back the saves and leaves their folders'
    /// modes and times as they were before the migration, not as new folders' (0700, now).
    @Test func theWayBackFromInPlaceKeepsTheFoldersModesAndTimes() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("saves")
        let folder = saves.appendingPathComponent("slot/Documents")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let v1 = Data(#"{"players": ["Ana"], "scores": {"Ana": 1}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#.utf8)
        try v1.write(to: folder.appendingPathComponent("current_tournament.json"))
        let then = Date(timeIntervalSince1970: 1_700_000_000)
        for (path, mode) in [(folder.path, 0o750), (saves.appendingPathComponent("slot").path, 0o751)] {
            try FileManager.default.setAttributes([.posixPermissions: mode, .modificationDate: then], ofItemAtPath: path)
        }
        let migrated = try CLI.run("migrate", saves.path, "--in-place", "-q")
        #expect(migrated.status == 0, "\(migrated.errors)")
        let bundles = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("saves-before-migrate-") }
        let bundle = directory.appendingPathComponent(try #require(bundles.first, "no bundle of the originals")).path
        let originals = directory.appendingPathComponent("originals").path
        #expect(try CLI.run("import", bundle, "--into", originals, "--no-migrate", "-q").status == 0)
        #expect(try Processes.run(["cp", "-a", originals + "/.", saves.path + "/"]).status == 0)
        #expect(try Data(contentsOf: folder.appendingPathComponent("current_tournament.json")) == v1)
        for (path, mode) in [(folder.path, 0o750), (saves.appendingPathComponent("slot").path, 0o751)] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.posixPermissions] as? Int == mode, "\(path)")
            #expect(attributes[.modificationDate] as? Date == then, "\(path)")
        }
    }

    @Test func validateSaysWhenAnEmbeddedDocumentIsFromTheFuture() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var defaults = try Codecs.value(#"""
            {"defaults_version": 2, "player_id": "0B1E", "player_name": "Ilir", "gold": 1, "level": 1, "xp": 0, "reputation": {}, "cooldowns": {}}
            """#)
        try defaults.setValue(.data(Data(#"{"stateVersion":3,"kingdoms":{}}"#.utf8)), at: JSONPointer(tokens: ["kingdoms_local_state"]))
        let file = directory.appendingPathComponent("com.example.kingdoms.plist")
        try Data(Codecs.binary.encode(defaults, options: EncodingOptions())).write(to: file)
        let result = try CLI.run("validate", file.path)
        #expect(result.status == 65)
        #expect(result.errors == "savetool: \(file.path):/kingdoms_local_state: kingdom.state version 3, newer than the 2 savetool knows\n")
        // The same words for a whole file from the future.
        // The same words for a whole file from the future, with why it is taken for a tournament.
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        let whole = directory.appendingPathComponent("Documents/current_tournament.json")
        try Data(#"{"schemaVersion": 9}"#.utf8).write(to: whole)
        let future = try CLI.run("validate", whole.path)
        #expect(future.status == 65)
        let futureJSON = try CLI.run("--json", "validate", whole.path)
        #expect(futureJSON.status == 65)
        #expect(try Codecs.value(futureJSON.outputText)["error"] == "kape.tournament version 9, newer than the 3 savetool knows")
        #expect(future.errors == "savetool: \(whole.path): kape.tournament version 9, newer than the 3 savetool knows (its path matches Documents/current_tournament.json)\n")
        // Without a path a kind claims, a version field alone makes nobody's save.
        let loose = directory.appendingPathComponent("current_tournament.json")
        try Data(#"{"schemaVersion": 9}"#.utf8).write(to: loose)
        let unclaimed = try CLI.run("validate", loose.path)
        #expect(unclaimed.status == 65 && unclaimed.errors.contains("no known kind claims it by its path or recognises its content"))
        let migrated = try CLI.run("migrate", file.path, "--in-place", "--no-backup")
        #expect(migrated.status == 1 && migrated.outputText == "0 migrated, 0 unchanged, 0 skipped, 1 failed\n")
        // migrate names the embedded document's kind and version, not the holder's.
        #expect(migrated.errors.contains("\(file.path): future: kingdom.state version 3, newer than the 2 savetool knows, inside this kingdom.player; left as it is"), "\(migrated.errors)")
    }

    /// The sudoku sample's Documents (three version-1 games and three current ones) at `folder`.
    private func sudokuSaves(at folder: URL) throws {
        try FileManager.default.createDirectory(at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Corpus.packageRoot.appendingPathComponent("samples/sudoku/Documents"), to: folder)
    }

    @Test func aReportInsideTheMigratedFolderIsWrittenAndLeftOutOfTheWalk() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let report = saves.path + "/r.jsonl"
        try Data("an earlier report\n".utf8).write(to: URL(fileURLWithPath: report))
        let result = try CLI.run("migrate", saves.path, "--in-place", "--report", report)
        #expect(result.status == 0 && result.outputText == "3 migrated, 3 unchanged, 0 skipped, 0 failed\n", "\(result.errors)")
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        // The earlier report is replaced, and the report does not report on itself.
        #expect(lines.count == 6 && !lines.contains { $0.contains("r.jsonl") || $0.contains("earlier") }, "\(lines)")
        #expect(try CLI.run("get", saves.path + "/games/v1-fresh.json", "/version").outputText == "2\n")
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: saves.path)).contains { $0.hasPrefix(".") })
        // A report that is no file: a device, standard output.
        try FileManager.default.removeItem(at: saves)
        try sudokuSaves(at: saves)
        let devnull = try CLI.run("migrate", saves.path, "--in-place", "--no-backup", "--report", "/dev/null")
        #expect(devnull.status == 0 && devnull.outputText == "3 migrated, 3 unchanged, 0 skipped, 0 failed\n", "\(devnull.errors)")
        let stdout = try CLI.run("-q", "migrate", saves.path, "--check", "--report", "-")
        #expect(stdout.status == 0 && stdout.outputText.split(separator: "\n").count == 6, "\(stdout.outputText)\(stdout.errors)")
    }

    /// A report on standard output stays JSON Lines (the summary goes to stderr), is written
    /// once with --json, and says when nothing was written; the --out folder itself is no
    /// place for a report.
    @Test func reportLinesSayADryRunAndStayJSONLines() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let dry = try CLI.run("migrate", saves.path, "--dry-run", "--report", "-")
        let lines = dry.outputText.split(separator: "\n").map { try? Codecs.value(String($0)) }
        #expect(dry.status == 0 && lines.count == 6 && lines.allSatisfy { $0?["dryRun"] == true }, "\(dry.outputText)")
        #expect(dry.errors == "3 would be migrated, 3 unchanged, 0 skipped, 0 failed\n", "\(dry.errors)")
        let json = try CLI.run("--json", "migrate", saves.path, "--check", "--report", "-")
        let jsonLines = json.outputText.split(separator: "\n")
        #expect(json.status == 1 && jsonLines.count == 7, "each file once, then the summary: \(json.outputText)")
        #expect(try Codecs.value(String(jsonLines.last ?? ""))["summary"]?["dryRun"] == true)
        // /dev/stdout is standard output too: each line once, the summary on stderr.
        let device = try CLI.run("--json", "migrate", saves.path, "--check", "--report", "/dev/stdout")
        #expect(device.outputText.split(separator: "\n").count == 7, "\(device.outputText)")
        let text = try CLI.run("migrate", saves.path, "--dry-run", "--report", "/dev/stdout")
        #expect(text.outputText.split(separator: "\n").count == 6 && text.errors == dry.errors, "\(text.outputText)\(text.errors)")
        let written = try CLI.run("--json", "migrate", saves.path, "--out", directory.path + "/o")
        #expect(written.status == 0 && !written.outputText.contains("dryRun"), "\(written.outputText)")
        let onOut = try CLI.run("migrate", saves.path, "--out", directory.path + "/o2", "--report", directory.path + "/o2")
        #expect(onOut.status == 64 && onOut.errors.contains("\(directory.path)/o2: the folder for the migrated copies, expected a report path outside it"), "\(onOut.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/o2"))
        // Nor an --out folder that exists, nor a path on the way to one yet to be made.
        let existing = try CLI.run("migrate", saves.path, "--out", directory.path + "/o", "--report", directory.path + "/o")
        #expect(existing.status == 64 && existing.errors.contains("the folder for the migrated copies, expected a report path outside it"), "\(existing.errors)")
        let onTheWay = try CLI.run("migrate", saves.path, "--out", directory.path + "/w/x", "--report", directory.path + "/w")
        #expect(onTheWay.status == 64 && onTheWay.errors.contains("\(directory.path)/w: on the way to"), "\(onTheWay.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/w"))
    }

    /// An --out that cannot be made where permissions allow it (root passes them; /proc says
    /// no) is said once, before any file, not once per file.
    @Test func anOutThatCannotBeMadeIsSaidOnce() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let result = try CLI.run("migrate", saves.path, "--out", "/proc/savetool-nope")
        // Root is told by the folder it could not make; anyone else by the permissions first.
        let lines = result.errors.split(separator: "\n")
        #expect(result.status == 73 && lines.count == 1, "\(result.errors)")
        #expect(result.errors.hasPrefix("savetool: /proc/savetool-nope: ") && result.errors.hasSuffix(" in /proc, expected a place where the folder for the migrated copies can be made\n"), "\(result.errors)")
    }

    @Test func aReportThatCannotBeMadeStopsTheRunBeforeAnythingIsWritten() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let result = try CLI.run("migrate", saves.path, "--in-place", "--report", directory.path + "/missing/r.jsonl")
        #expect(result.status == 73 && result.errors.hasPrefix("savetool: \(directory.path)/missing/r.jsonl: cannot create: no such file or directory"), "\(result.errors)")
        // No bundle of originals either: nothing on disk changed.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["s"])
        #expect(try CLI.run("get", saves.path + "/games/v1-fresh.json", "/version").status == 1, "still version 1, which has no version key")
    }

    @Test func twoInputsLeadingToOnePlaceUnderOutFailInsteadOfOverwriting() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appendingPathComponent("a/Documents"), b = directory.appendingPathComponent("b/Documents")
        try sudokuSaves(at: a)
        try sudokuSaves(at: b)
        #expect(try CLI.run("set", b.path + "/games/v1-fresh.json", "/puzzleId", #""from-b""#).status == 0)
        let out = directory.path + "/o"
        let result = try CLI.run("migrate", a.path, b.path, "--out", out)
        #expect(result.status == 1 && result.outputText == "3 migrated, 3 unchanged, 0 skipped, 6 failed\n", "\(result.outputText)")
        #expect(result.errors.contains("savetool: \(b.path)/games/v1-fresh.json: failed: its copy would go to \(out)/games/v1-fresh.json, where the copy of \(a.path)/games/v1-fresh.json goes, expected inputs whose paths under \(out) differ"), "\(result.errors)")
        #expect(try CLI.run("get", out + "/games/v1-fresh.json", "/puzzleId").outputText != "\"from-b\"\n")
        // Two files of one name, given on their own, are the same case.
        let files = try CLI.run("migrate", a.path + "/games/v1-fresh.json", b.path + "/games/v1-fresh.json", "--out", directory.path + "/o2")
        #expect(files.status == 1 && files.outputText == "1 migrated, 0 unchanged, 0 skipped, 1 failed\n", "\(files.outputText)")
    }

    @Test func aPathNamedTwiceIsMigratedCountedAndBackedUpOnce() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let checked = try CLI.run("migrate", saves.path, saves.path + "/games", saves.path + "/games/v1-fresh.json", "--check")
        #expect(checked.status == 1 && checked.outputText == "3 would be migrated, 3 unchanged, 0 skipped, 0 failed\n", "\(checked.outputText)")
        #expect(checked.errors.contains("savetool: warning: \(saves.path)/games: inside \(saves.path), also named; migrated once"), "\(checked.errors)")
        let result = try CLI.run("migrate", saves.path, saves.path, "--in-place")
        #expect(result.status == 0 && result.outputText == "3 migrated, 3 unchanged, 0 skipped, 0 failed\n", "\(result.outputText)")
        #expect(result.errors.contains("savetool: warning: \(saves.path): named already as \(saves.path); migrated once"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tar.gz") }.count == 1)
        // A file inside a named folder that its walk does not visit (a name starting with .) is
        // migrated on its own, not dropped as "named already".
        let hidden = saves.path + "/.cloud/game.json"
        try FileManager.default.createDirectory(atPath: saves.path + "/.cloud", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Corpus.packageRoot.appendingPathComponent("samples/sudoku/Documents/games/v1-fresh.json").path, toPath: hidden)
        let dotted = try CLI.run("migrate", saves.path, hidden, "--kind", "sudoku.game", "--check")
        #expect(dotted.status == 1 && dotted.outputText == "1 would be migrated, 6 unchanged, 0 skipped, 0 failed\n", "\(dotted.outputText)\(dotted.errors)")
        #expect(!dotted.errors.contains("also named"), "\(dotted.errors)")
    }

    /// A step that fails inside an embedded save names the place in the file (`/inner/w`, not
    /// `/w`) and the embedded save's kind; an embedded save invalid after its steps, likewise.
    @Test func aFailureInsideAnEmbeddedSaveIsPlacedInTheFile() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let formats = directory.appendingPathComponent("formats")
        let definitions = [
            "h.kind/kind.json": #"{"format": "savetool.kind/1", "kind": "h.kind", "files": ["h.json"], "codec": "json", "version": {"current": 1, "path": "/v"}, "embedded": {"/inner": {"codec": "json", "kind": "i.kind"}}}"#,
            "i.kind/kind.json": #"{"format": "savetool.kind/1", "kind": "i.kind", "codec": "json", "version": {"current": 2, "path": "/v"}}"#,
            "i.kind/migrations.json": #"{"format": "savetool.migrations/1", "kind": "i.kind", "steps": [{"from": 1, "to": 2, "ops": [{"op": "assert", "path": "/w", "type": "string"}]}]}"#,
            "i.kind/schema-v2.json": #"{"type": "object", "properties": {"w": {"type": "integer"}}}"#,
        ]
        for (path, text) in definitions {
            let file = formats.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
        }
        let save = directory.appendingPathComponent("h.json")
        try Data(#"{"v": 1, "inner": "{\"v\":1,\"w\":{}}"}"#.utf8).write(to: save)
        let failed = try CLI.run("--formats", formats.path, "migrate", save.path, "--dry-run")
        #expect(failed.status == 1 && failed.errors == "savetool: \(save.path): failed: step i.kind 1→2, assert at /inner/w: found a dictionary, expected a string\n", "\(failed.errors)")
        try Data(#"{"v": 1, "inner": "{\"v\":1,\"w\":\"x\"}"}"#.utf8).write(to: save)
        let invalid = try CLI.run("--formats", formats.path, "migrate", save.path, "--dry-run")
        #expect(invalid.status == 1 && invalid.errors.contains("not a valid i.kind version 2: /inner/w: "), "\(invalid.errors)")
        // `validate` says of an embedded save whether it is valid, as it says of the file.
        try Data(#"{"v": 1, "inner": "{\"v\":2,\"w\":\"x\"}"}"#.utf8).write(to: save)
        let validated = try CLI.run("--formats", formats.path, "validate", save.path)
        #expect(validated.status == 65, "\(validated.errors)")
        #expect(validated.outputText.hasPrefix("\(save.path)/inner: i.kind version 2 of 2, not valid: 1 problem\n"), "\(validated.outputText)")
        #expect(validated.errors.hasPrefix("savetool: \(save.path):/inner/w: "), "\(validated.errors)")
        try Data(#"{"v": 1, "inner": "{\"v\":2,\"w\":5}"}"#.utf8).write(to: save)
        #expect(try CLI.run("--formats", formats.path, "validate", save.path).outputText.hasPrefix("\(save.path)/inner: i.kind version 2 of 2, valid\n"))
    }

    /// A kind without a version field tells versions by fingerprints alone: one of a version
    /// after the current tells a file from the future (never valid, never written), and a
    /// migration whose result its fingerprints do not call the current version fails rather
    /// than writing a file the next run would take for another.
    @Test func fingerprintsAloneTellTheFutureAndCheckTheResult() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kind = directory.appendingPathComponent("formats/f.kind")
        try FileManager.default.createDirectory(at: kind, withIntermediateDirectories: true)
        try Data(#"{"format": "savetool.kind/1", "kind": "f.kind", "files": ["f.json"], "codec": "json", "version": {"current": 2}, "detect": [{"version": 1, "all": [{"has": "/old"}]}, {"version": 2, "all": [{"has": "/new"}]}, {"version": 3, "all": [{"has": "/next"}]}]}"#.utf8)
            .write(to: kind.appendingPathComponent("kind.json"))
        try Data(#"{"format": "savetool.migrations/1", "kind": "f.kind", "steps": [{"from": 1, "to": 2, "ops": [{"op": "rename", "from": "/old", "to": "/other"}]}]}"#.utf8)
            .write(to: kind.appendingPathComponent("migrations.json"))
        let formats = directory.appendingPathComponent("formats").path
        let save = directory.appendingPathComponent("f.json")
        try Data(#"{"next": 1}"#.utf8).write(to: save)
        let future = try CLI.run("--formats", formats, "validate", save.path)
        #expect(future.status == 65 && future.errors.contains("f.kind version 3, newer than"), "\(future.errors)")
        let untouched = try CLI.run("--formats", formats, "migrate", save.path, "--in-place", "--no-backup")
        #expect(untouched.status == 1 && untouched.outputText == "0 migrated, 0 unchanged, 0 skipped, 1 failed\n", "\(untouched.outputText) \(untouched.errors)")
        #expect(try Data(contentsOf: save) == Data(#"{"next": 1}"#.utf8))
        try Data(#"{"old": 1}"#.utf8).write(to: save)
        let unrecognisable = try CLI.run("--formats", formats, "migrate", save.path, "--in-place", "--no-backup")
        #expect(unrecognisable.status == 1 && unrecognisable.errors.contains("step 1→2, recognise at '': the result is not recognised as f.kind, expected version 2: the kind's fingerprints must tell its versions apart"), "\(unrecognisable.errors)")
        #expect(try Data(contentsOf: save) == Data(#"{"old": 1}"#.utf8))
    }

    @Test func aNameThatIsNotUTF8IsAFailureNamedNotASilentSkip() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let name = saves.path + "/games/caf\\xE9.json"
        let bytes = Array((saves.path + "/games/caf").utf8) + [0xE9] + Array(".json".utf8) + [0]
        let descriptor = bytes.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o644) }
        #expect(descriptor >= 0)
        close(descriptor)
        let result = try CLI.run("migrate", saves.path, "--out", directory.path + "/o")
        #expect(result.status == 1 && result.outputText == "3 migrated, 3 unchanged, 0 skipped, 1 failed\n", "\(result.outputText)")
        #expect(result.errors.contains("savetool: \(name): failed: a name that is not UTF-8 (a byte that is not UTF-8 shown as \\x and two hex digits), expected UTF-8 names"), "\(result.errors)")
    }

    /// A report never takes a save's place: a path holding a save, or one under --out, is
    /// refused before anything is touched (the save was emptied for the report).
    @Test func aReportNeverTakesASavesPlace() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        let save = saves.path + "/games/v2-paused.json"
        let before = try Data(contentsOf: URL(fileURLWithPath: save))
        for arguments in [["--in-place"], ["--out", directory.path + "/o"], ["--check"]] {
            let refused = try Processes.run([CLI.executable, "migrate", saves.path, "--report", save] + arguments)
            #expect(refused.status == 64 && refused.errors.contains("savetool: \(save): holds a save (sudoku.game), expected a path for the report where no save is"), "\(arguments): \(refused.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: save)) == before)
        }
        let inside = try CLI.run("migrate", saves.path, "--out", directory.path + "/o", "--report", directory.path + "/o/games/v1-fresh.json")
        #expect(inside.status == 64 && inside.errors.contains("savetool: \(directory.path)/o/games/v1-fresh.json: inside \(directory.path)/o, where the migrated copies go, expected a report path outside it"), "\(inside.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["s"], "nothing made, no bundle")
    }

    /// Killed part way, the report holds a line for every file rewritten but the one in hand
    /// (one job): lines went out a batch at a time, and hundreds of rewrites had none.
    /// With two jobs, a slow file (every 100th is large) holds the other job back to one file
    /// ahead of it: lines wait for the files before them, and without that bound one job rewrote
    /// hundreds of files whose lines waited on the other's slow one.
    @Test(arguments: [1, 2])
    func aKilledRunsReportNamesWhatItRewrote(jobs: Int) throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        let fresh = try Data(contentsOf: Corpus.packageRoot.appendingPathComponent("samples/sudoku/Documents/games/v1-fresh.json"))
        var large = try Codecs.value(String(decoding: fresh, as: UTF8.self))
        try large.setValue(.array((0..<200_000).map { .integer(Int64($0)) }), at: JSONPointer(tokens: ["history"]))
        let largeBytes = try Codecs.json.encode(large)
        for index in 0..<3000 {
            try (index % 100 == 0 ? Data(largeBytes) : fresh).write(to: saves.appendingPathComponent(String(format: "game-%04d.json", index)))
        }
        let report = directory.path + "/r.jsonl"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.executable)
        process.arguments = ["migrate", saves.path, "--kind", "sudoku.game", "--in-place", "--no-backup", "--jobs", String(jobs), "--report", report]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        func lines() -> Int { ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "").split(separator: "\n").count }
        while process.isRunning, lines() < 200, Date() < deadline { usleep(2_000) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let written = try FileManager.default.contentsOfDirectory(atPath: saves.path).filter { name in
            let bytes = try? Data(contentsOf: saves.appendingPathComponent(name))
            return bytes != fresh && bytes != Data(largeBytes)
        }
        let reported = lines()
        #expect(reported >= 200, "the run got far enough to tell")
        #expect(written.count <= reported + jobs && reported <= written.count, "\(written.count) rewritten, \(reported) lines")
        #expect(written.count < 3000, "killed part way")
    }

    /// --out's folders: one that cannot be made is said once (73), not as a Foundation error for
    /// every file; a private folder's copy is private; a link where a folder goes is not followed.
    @Test func outsFoldersAreMadeAsTheOriginalsWereAndNeverThroughALink() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = directory.appendingPathComponent("s")
        try sudokuSaves(at: saves)
        try Data("hi\n".utf8).write(to: directory.appendingPathComponent("plain"))
        let blocked = try CLI.run("migrate", saves.path, "--out", directory.path + "/plain/o")
        #expect(blocked.status == 73 && blocked.errors.split(separator: "\n").count == 1, "\(blocked.errors)")
        #expect(blocked.errors.hasPrefix("savetool: \(directory.path)/plain/o: \(directory.path)/plain is a file, expected a folder"), "\(blocked.errors)")
        chmod(saves.path + "/games", 0o700)
        #expect(try CLI.run("migrate", saves.path, "--out", directory.path + "/o", "-q").status == 0)
        var info = stat()
        #expect(stat(directory.path + "/o/games", &info) == 0 && info.st_mode & 0o777 == 0o700)
        // The save folder itself private: so is --out, when migrate makes it.
        chmod(saves.path, 0o700)
        #expect(try CLI.run("migrate", saves.path, "--out", directory.path + "/o3", "-q").status == 0)
        #expect(stat(directory.path + "/o3", &info) == 0 && info.st_mode & 0o777 == 0o700)
        let outside = directory.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("o2"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/o2/games", withDestinationPath: outside.path)
        let linked = try CLI.run("migrate", saves.path, "--out", directory.path + "/o2")
        #expect(linked.status == 1 && linked.errors.contains("\(directory.path)/o2/games: cannot create: a symbolic link, expected a folder"), "\(linked.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written through the link")
    }
}
