import Foundation
import SaveKit
import TestSupport
import Testing

@Suite("savetool get, set, remove, diff, inspect")
struct EditingCommandTests {
    /// A copy of a sample in a fresh directory.
    func copy(_ sample: String) throws -> (directory: URL, file: String) {
        let directory = try Processes.temporaryDirectory()
        let file = directory.appendingPathComponent(URL(fileURLWithPath: sample).lastPathComponent)
        try FileManager.default.copyItem(atPath: sample, toPath: file.path)
        return (directory, file.path)
    }

    /// Indices are explained as the command reads them: a read names the indices there are; a
    /// write also names the ones that append. Removing the whole document is a usage error.
    @Test func indicesAreExplainedForReadsAndWrites() throws {
        let (directory, file) = try copy(CLI.tournament)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"arr": [10, 11, 12, 13]}"#.utf8).write(to: URL(fileURLWithPath: file))
        let read = try CLI.run("get", file, "/arr/01")
        #expect(read.status == 1 && read.errors == "savetool: \(file):/arr/01: found index '01', expected 0...3\n", "\(read.errors)")
        let written = try CLI.run("set", file, "/arr/9", "1")
        #expect(written.status == 1 && written.errors == "savetool: \(file):/arr/9: found index '9', expected 0...4 (4 or '-' appends)\n", "\(written.errors)")
        #expect(try CLI.run("set", file, "/arr/4", "14").status == 0, "the length appends")
        let into = try CLI.run("get", file, "/arr/0/x")
        #expect(into.errors.contains("/arr/0: found an integer, expected a dictionary or an array"), "\(into.errors)")
        #expect(try CLI.run("remove", file, "").status == 64)
        // Said before the file is read: a file that does not even parse gets the usage error too.
        try Data(#"{"a": 1, "a": 2}"#.utf8).write(to: URL(fileURLWithPath: file))
        let whole = try CLI.run("remove", file, "")
        #expect(whole.status == 64 && whole.errors == "savetool: \(file): cannot remove the whole document, expected a pointer to a value inside it\n", "\(whole.errors)")
    }

    /// An edit keeps the file's owner and group (run as root, as `sudo savetool set` on a
    /// device's save is: the app must still own its save) and its mode; a new file takes the
    /// umask, as `cp` and the shell's `>` do.
    @Test func anEditKeepsTheOwnerAndANewFileTheUmask() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let save = directory.appendingPathComponent("s.json").path
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: save))
        chmod(save, 0o600)
        // As root, the save is given to another user first, as an app's would be; otherwise it stays ours.
        let owner: (uid_t, gid_t) = geteuid() == 0 ? (65534, 65534) : (geteuid(), getegid())
        #expect(chown(save, owner.0, owner.1) == 0)
        #expect(try CLI.run("set", save, "/a", "2").status == 0)
        var info = stat()
        #expect(stat(save, &info) == 0)
        #expect(info.st_uid == owner.0 && info.st_gid == owner.1, "owner \(info.st_uid):\(info.st_gid)")
        #expect(info.st_mode & 0o7777 == 0o600)
        let made = directory.appendingPathComponent("new.json").path
        let run = try Processes.run(["/bin/sh", "-c", "umask 077 && exec \"$0\" convert \"$1\" -o \"$2\"", CLI.executable, save, made])
        #expect(run.status == 0, "\(run.errors)")
        #expect(stat(made, &info) == 0 && info.st_mode & 0o777 == 0o600, "a new file under umask 077: \(String(info.st_mode & 0o777, radix: 8))")
    }

    /// Edits of one file run at once take turns: every one of them lands, none is lost to
    /// another's write of what it read before.
    @Test func editsRunAtOnceAllLand() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let save = directory.appendingPathComponent("race.json").path
        let entries = (0..<5000).map { #""k\#($0)": [\#((0..<50).map(String.init).joined(separator: ","))]"# }
        try Data("{\(entries.joined(separator: ","))}".utf8).write(to: URL(fileURLWithPath: save))
        for round in 0..<3 {
            let edits = (0..<3).map { index in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: CLI.executable)
                process.arguments = index == 2 ? ["remove", save, "/k\(round)"] : ["set", save, "/r\(round)-\(index)", "\(index)"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                return process
            }
            for edit in edits { try edit.run() }
            for edit in edits { edit.waitUntilExit() }
            #expect(edits.allSatisfy { $0.terminationStatus == 0 })
            #expect(try CLI.run("get", save, "/r\(round)-0").outputText == "0\n", "round \(round)")
            #expect(try CLI.run("get", save, "/r\(round)-1").outputText == "1\n", "round \(round)")
            #expect(try CLI.run("get", save, "/k\(round)").status == 1, "round \(round): removed")
        }
    }

    /// `--duplicate-keys` holds for the documents embedded in what a command reads, as for the
    /// document itself: a key repeated in the JSON a plist holds is refused, with its place,
    /// unless the command is told to keep the last value.
    @Test func embeddedDocumentsAreReadAsTheDocumentHoldingThem() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("prefs.plist").path
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>gameSave</key><string>{"level": 1, "coins": 5, "level": 2}</string></dict></plist>

            """
        try Data(plist.utf8).write(to: URL(fileURLWithPath: file))
        let refused = try CLI.run("get", file, "/gameSave/level")
        #expect(refused.status == 65 && refused.errors.contains(#"the key "level" a second time"#), "\(refused.errors)")
        let kept = try CLI.run("get", file, "/gameSave/level", "--duplicate-keys", "last")
        #expect(kept.status == 0 && kept.outputText == "2\n", "\(kept.outputText) \(kept.errors)")
        let decoded = try CLI.run("get", file, "/gameSave", "--decode", "--duplicate-keys", "last")
        #expect(decoded.outputText.contains(#""coins": 5"#) && decoded.outputText.contains(#""level": 2"#), "\(decoded.outputText) \(decoded.errors)")
        // inspect says the embedded save is there and why it does not read, not "none".
        let told = try CLI.run("inspect", file)
        #expect(told.status == 0 && told.outputText.contains(#"/gameSave  a json document that does not read: 1:26: the key "level" a second time"#), "\(told.outputText)")
        let inspected = try CLI.run("inspect", file, "--duplicate-keys", "last")
        #expect(inspected.status == 0 && inspected.outputText.contains("/gameSave"), "\(inspected.outputText) \(inspected.errors)")
        let compared = try CLI.run("diff", file, file, "--duplicate-keys", "last")
        #expect(compared.status == 0, "\(compared.outputText) \(compared.errors)")
    }

    /// The JSON embedded in a save is read by the app's own decoder: a value it cannot read (a
    /// date, NaN) is refused with its path, never written as a typed-JSON marker.
    @Test func embeddedJSONTakesOnlyPlainJSON() throws {
        let (directory, file) = try copy(CLI.sample("blocks/Library/Preferences/com.example.blocks.plist"))
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        for value in [#"{"$date": "2026-01-01T00:00:00Z"}"#, #"{"$real": "nan"}"#, #"[1, {"$data": "AA=="}]"#] {
            let refused = try CLI.run("set", file, "/gameSave/extra", value)
            #expect(refused.status == 65 && refused.errors.contains("expected a plain JSON value"), "\(value): \(refused.errors)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "nothing written")
        #expect(try CLI.run("set", file, "/gameSave/extra", #"{"when": "2026-01-01"}"#).status == 0)
        // A dictionary whose key looks like a marker is written as the app will read it: plain
        // keys, no "$dict" around them; and read back as such, so later edits go on.
        #expect(try CLI.run("set", file, "/gameSave/extra", #"{"$dict": {"$real": "nan"}}"#).status == 0)
        let raw = try CLI.run("get", file, "/gameSave", "--raw")
        let app = try JSONSerialization.jsonObject(with: Data(raw.outputText.utf8)) as? [String: Any]
        #expect((app?["extra"] as? [String: String]) == ["$real": "nan"], "\(raw.outputText)")
        #expect(try CLI.run("set", file, "/gameSave/coins", "1").status == 0)
    }

    /// With --json, an edit says what it did, as one JSON document.
    @Test func editsSayWhatTheyDidInJSON() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let save = directory.appendingPathComponent("s.json").path
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: save))
        let set = try CLI.run("--json", "set", save, "/b", "2")
        #expect(try Codecs.value(set.outputText) == ["file": .string(save), "pointer": "/b", "value": 2])
        let removed = try CLI.run("--json", "remove", save, "/a")
        #expect(try Codecs.value(removed.outputText) == ["file": .string(save), "pointer": "/a", "removed": true])
    }

    /// An edit keeps a JSON file's layout: one line (a final newline or not) stays one line, so
    /// that a one-field edit is a one-line diff; a file over several lines stays pretty; a file
    /// without a final newline gets none (git would show that line changed too).
    @Test func editsKeepAJSONFilesLayout() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (original, edited) in [
            ("{\"a\":1,\"b\":false}\n", "{\"a\":1,\"b\":true}\n"), ("{\"a\":1,\"b\":false}", "{\"a\":1,\"b\":true}"),
            ("{\n  \"a\": 1,\n  \"b\": false\n}\n", "{\n  \"a\": 1,\n  \"b\": true\n}\n"),
            // A byte order mark and CR LF line ends (a file from Windows) stay.
            ("\u{FEFF}{\r\n \"a\": 1,\r\n \"b\": false\r\n}\r\n", "\u{FEFF}{\r\n \"a\": 1,\r\n \"b\": true\r\n}\r\n"),
            ("\u{FEFF}{\"a\":1,\"b\":false}", "\u{FEFF}{\"a\":1,\"b\":true}"),
            // Tabs and four spaces (Python's json.dump(indent=4)) stay, at every level.
            ("{\n\t\"a\": [\n\t\t1\n\t],\n\t\"b\": false\n}\n", "{\n\t\"a\": [\n\t\t1\n\t],\n\t\"b\": true\n}\n"),
            ("{\n    \"a\": {\n        \"c\": \"x  y\"\n    },\n    \"b\": false\n}", "{\n    \"a\": {\n        \"c\": \"x  y\"\n    },\n    \"b\": true\n}"),
        ] {
            let save = directory.appendingPathComponent("s.json")
            try Data(original.utf8).write(to: save)
            #expect(try CLI.run("set", save.path, "/b", "true").status == 0)
            #expect(try Data(contentsOf: save) == Data(edited.utf8), "\(original)")
            #expect(try CLI.run("remove", save.path, "/b").status == 0)
            #expect(try String(contentsOf: save, encoding: .utf8).contains("\n ") == original.contains("\n "))
        }
        // Migrated in place, a one-line save stays one line.
        let game = directory.appendingPathComponent("game.json")
        let oneLine = try JSONSerialization.data(withJSONObject: JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: CLI.sample("sudoku/Documents/games/v1-fresh.json")))))
        try (oneLine + Data("\n".utf8)).write(to: game)
        #expect(try CLI.run("migrate", game.path, "--kind", "sudoku.game", "--in-place", "--no-backup").status == 0)
        let migrated = try String(contentsOf: game, encoding: .utf8)
        #expect(migrated.hasSuffix("}\n") && migrated.dropLast().contains("\n") == false, "\(migrated)")
    }

    /// Setting a value to what it already is writes nothing: not the bytes (this file has no
    /// final newline, which a rewrite adds), not the time, not a new inode.
    @Test func aSetThatChangesNothingLeavesTheFileAlone() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let save = directory.appendingPathComponent("s.json")
        try Data(#"{"a":1,"b":{"c":[true]}}"#.utf8).write(to: save)
        let old = Date(timeIntervalSince1970: 1_700_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: save.path)
        let inode = try FileManager.default.attributesOfItem(atPath: save.path)[.systemFileNumber] as? Int
        for (pointer, value) in [("/a", "1"), ("/b/c/0", "true"), ("/b", #"{"c": [true]}"#)] {
            let set = try CLI.run("set", save.path, pointer, value)
            #expect(set.status == 0 && set.errors.isEmpty, "\(set.errors)")
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: save.path)
        #expect(try Data(contentsOf: save) == Data(#"{"a":1,"b":{"c":[true]}}"#.utf8))
        #expect(attributes[.modificationDate] as? Date == old && attributes[.systemFileNumber] as? Int == inode)
        #expect(try CLI.run("set", save.path, "/a", "2").status == 0)
        #expect(try Data(contentsOf: save) == Data("{\"a\":2,\"b\":{\"c\":[true]}}".utf8))

        // Through an embedded save whose JSON is laid out otherwise than savetool writes it.
        let plist = directory.appendingPathComponent("p.plist")
        try Data(#"{"gameSave": {"$data": "eyAibGV2ZWwiIDogMyB9"}}"#.utf8).write(to: directory.appendingPathComponent("p.json"))  // { "level" : 3 }
        #expect(try CLI.run("convert", directory.appendingPathComponent("p.json").path, "-o", plist.path, "--to", "bplist").status == 0)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: plist.path)
        let holder = try Data(contentsOf: plist)
        let inside = try CLI.run("set", plist.path, "/gameSave/level", "3")
        #expect(inside.status == 0 && inside.errors.isEmpty, "\(inside.errors)")
        #expect(try Data(contentsOf: plist) == holder)
        #expect(try FileManager.default.attributesOfItem(atPath: plist.path)[.modificationDate] as? Date == old)
    }

    /// A save reached through a symbolic link is edited where it is, and the link stays: a
    /// rename over the link replaced it with a new file and left the save as it was, with exit 0.
    @Test func writesGoThroughSymbolicLinks() throws {
        let root = try Processes.temporaryDirectory("links")
        defer { try? FileManager.default.removeItem(at: root) }
        let real = root.appendingPathComponent("real"), device = root.appendingPathComponent("device/Documents/games")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.tournament, toPath: real.appendingPathComponent("t.json").path)
        try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v1-fresh.json"), toPath: real.appendingPathComponent("v1-fresh.json").path)
        let link = device.appendingPathComponent("t.json").path, target = real.appendingPathComponent("t.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../../../real/t.json")
        func isLink(_ path: String) -> Bool { (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil }

        #expect(try CLI.run("set", link, "/players/2/name", #""Zoë""#).status == 0)
        #expect(isLink(link))
        #expect(try CLI.run("get", target, "/players/2/name", "--raw").outputText == "Zoë\n")
        #expect(try CLI.run("remove", link, "/players/2").status == 0)
        #expect(isLink(link))
        #expect(try CLI.run("get", target, "/players/2/name", "--raw").outputText != "Zoë\n")
        #expect(try CLI.run("convert", link, "--to", "bplist", "-o", link).status == 0)
        #expect(isLink(link))
        let converted = try Data(contentsOf: URL(fileURLWithPath: target))
        #expect(Array(converted.prefix(6)) == Array("bplist".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: device.path) == ["t.json"], "nothing left beside the link")
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).sorted() == ["t.json", "v1-fresh.json"], "nor beside the save")

        // migrate --in-place of a folder follows a link that stays inside it (keeping the save's
        // original first, what the link leads to) and refuses one that leads out of it.
        let hidden = root.appendingPathComponent("device/.real")
        try FileManager.default.createDirectory(at: hidden, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v1-fresh.json"), toPath: hidden.appendingPathComponent("v1-fresh.json").path)
        let inside = device.appendingPathComponent("v1-fresh.json").path, outside = device.appendingPathComponent("v1-out.json").path
        try FileManager.default.createSymbolicLink(atPath: inside, withDestinationPath: "../../.real/v1-fresh.json")
        try FileManager.default.createSymbolicLink(atPath: outside, withDestinationPath: real.appendingPathComponent("v1-fresh.json").path)
        let before = try Data(contentsOf: URL(fileURLWithPath: inside))
        let migrated = try CLI.run("migrate", root.appendingPathComponent("device").path, "--in-place")
        #expect(migrated.status == 1)
        #expect(migrated.errors.contains("v1-out.json: failed: cannot create: a symbolic link leading out of \(root.appendingPathComponent("device").path)"), "\(migrated.errors)")
        #expect(isLink(inside) && isLink(outside))
        // The originals kept are those of the files rewritten: not the one behind the link out.
        #expect(migrated.errors.contains("savetool: originals of 1 file in \(root.appendingPathComponent("device").path) saved in "), "\(migrated.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: hidden.appendingPathComponent("v1-fresh.json").path)) != before, "migrated through the link inside")
        #expect(try Data(contentsOf: URL(fileURLWithPath: real.appendingPathComponent("v1-fresh.json").path)) == before, "never through the link out")
        let kept = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasPrefix("device-before-migrate-") }
        try #require(kept.count == 1)
        let restored = root.appendingPathComponent("restored").path
        #expect(try CLI.run("import", root.appendingPathComponent(kept[0]).path, "--into", restored, "--no-migrate").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored + "/Documents/games/v1-fresh.json")) == before)
    }

    /// A save held inside another that does not read is bad data with its place, in validate,
    /// in a get that goes into it, and in get --decode: not a value that is not there (exit 1).
    @Test func aDamagedEmbeddedSaveIsNamedWithItsPlace() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("blocks.plist").path
        try FileManager.default.copyItem(atPath: CLI.blocks, toPath: file)
        #expect(try CLI.run("set", file, "/gameSave", #"{"$data": "eyJhIjog"}"#).status == 0, "the JSON text {\"a\": cut short")
        let expected = "savetool: \(file):/gameSave: a json document that does not read: 1:7: the end of the input, expected a JSON value\n"
        for arguments in [["validate", file], ["get", file, "/gameSave/a"], ["get", file, "/gameSave", "--decode"]] {
            let result = try Processes.run([CLI.executable] + arguments)
            #expect(result.status == 65 && result.errors == expected, "\(arguments): \(result.status) \(result.errors)")
        }
    }

    @Test func getReadsThroughEmbeddedDocuments() throws {
        #expect(try CLI.run("get", CLI.blocks, "/gameSave/unlockedThemes/1").outputText == "\"neon\"\n")
        #expect(try CLI.run("get", CLI.blocks, "/gameSave/settings/theme", "--raw").outputText == "neon\n")
        #expect(try CLI.run("get", CLI.tournament, "/players/2/name", "--raw").outputText == "Lojtari é\n")
        let decoded = try CLI.run("get", CLI.kingdoms, "/kingdoms_local_state", "--decode", "--json")
        #expect(decoded.outputText.contains("\"Arbëria\""))
        let missing = try CLI.run("get", CLI.blocks, "/gameSave/nope")
        #expect(missing.status == 1)
        #expect(missing.errors == "savetool: \(CLI.blocks):/gameSave/nope: no such value, expected an existing key or index\n")
        #expect(try CLI.run("get", CLI.blocks, "gameSave").status == 64)
    }

    @Test func setKeepsTheCodecAndEditsEmbeddedJSON() throws {
        let (directory, file) = try copy(CLI.blocks)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try CLI.run("set", file, "/gameSave/coinBalance", "99999").status == 0)
        #expect(try CLI.run("set", file, "/launchCount", "213").status == 0)
        // A negative number is a value, not an option, with or without `--` and global flags around it.
        #expect(try CLI.run("set", file, "/musicVolume", "-3").status == 0)
        #expect(try CLI.run("get", file, "/musicVolume").outputText == "-3\n")
        #expect(try CLI.run("--json", "set", file, "/musicVolume", "-0.25").status == 0)
        #expect(try CLI.run("get", file, "/musicVolume").outputText == "-0.25\n")
        #expect(try CLI.run("set", file, "/musicVolume", "--", "0.65").status == 0)
        #expect(try CLI.run("set", file, "/musicVolume", "-x").status == 64)
        #expect(try CLI.run("set", file, "/lastBackup", #"{"$date": "2026-11-21T08:00:00Z"}"#).status == 0)
        #expect(try CLI.run("set", file, "/AppleLanguages/-", "de-DE", "--string").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).prefix(8) == Data("bplist00".utf8))
        #expect(try CLI.run("get", file, "/gameSave/coinBalance").outputText == "99999\n")
        let diff = try CLI.run("diff", CLI.blocks, file)
        #expect(diff.status == 1)
        #expect(diff.outputText.contains("~ /launchCount: 212 → 213"))
        #expect(diff.outputText.contains(#"+ /lastBackup: {"$date":"2026-11-21T08:00:00Z"}"#))
        #expect(diff.outputText.contains("+ /AppleLanguages/2: \"de-DE\""))
        // The embedded document is compared inside: the value that changed, by its full pointer.
        #expect(diff.outputText.contains("~ /gameSave/coinBalance: 1275 → 99999\n"), "\(diff.outputText)")
        #expect(!diff.outputText.contains("~ /gameSave:"))
        let inner = try CLI.run("diff", CLI.blocks, file, "--json")
        #expect(inner.outputText.contains(#""path": "/gameSave/coinBalance""#))
    }

    /// The puzzle game's two saves (its UserDefaults, a year apart): what changed inside the
    /// JSON save held as data, field by field.
    @Test func diffListsTheChangedFieldsInsideAnEmbeddedSave() throws {
        let result = try CLI.run("diff", CLI.blocks, CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"))
        #expect(result.status == 1)
        let lines = result.outputText.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("~ /gameSave: ") }, "\(lines)")
        #expect(lines.contains("- /gameSave/coinBalance: 1275"), "\(lines)")
        #expect(lines.contains("+ /gameSave/coins: 40"), "\(lines)")
        #expect(lines.contains("~ /launchCount: 212 → 1093"))
        let json = try CLI.run("--json", "diff", CLI.blocks, CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"))
        #expect(json.outputText.contains(#""path": "/gameSave/coins""#))
    }

    @Test func badEditsChangeNothing() throws {
        let (directory, file) = try copy(CLI.tournament)
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        let notJSON = try CLI.run("set", file, "/deckId", "party")
        #expect(notJSON.status == 64)
        #expect(notJSON.errors.contains("use --string"))
        #expect(try CLI.run("set", file, "/players/9/name", "\"X\"").status == 1)
        #expect(try CLI.run("remove", file, "/nope").status == 1)
        #expect(try CLI.run("remove", file, "").status == 64, "the whole document is no value to remove: a usage error")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 1)
    }

    @Test func removeAndPermissionsSurvive() throws {
        let (directory, file) = try copy(CLI.tournament)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        #expect(try CLI.run("remove", file, "/usedCardIds").status == 0)
        #expect(try CLI.run("get", file, "/usedCardIds").status == 1)
        let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    /// Every command that reads a document takes `--from`, which names the input's codec.
    @Test func everyReadingCommandTakesFrom() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("blob.dat").path
        try Data(#"{"a": 5}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(try CLI.run("get", file, "/a", "--from", "json").outputText == "5\n")
        #expect(try CLI.run("get", file, "/a", "--from", "bplist").status == 65)
        #expect(try CLI.run("inspect", file, "--from", "json").status == 0)
        #expect(try CLI.run("diff", file, file, "--from", "json").status == 0)
        #expect(try CLI.run("set", file, "/a", "6", "--from", "json").status == 0)
        #expect(try CLI.run("remove", file, "/a", "--from", "json").status == 0)
        #expect(try CLI.run("convert", file, "--from", "json", "--compact").outputText == "{}\n")
    }

    /// A holder that changed how it holds a document (data to text) is itself a change, even
    /// when the document inside is the same.
    @Test func aHolderThatChangedKindIsAChange() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let asData = directory.appendingPathComponent("a.json").path, asText = directory.appendingPathComponent("b.json").path
        try Data(#"{"save": {"$data": "eyJhIjogMX0="}}"#.utf8).write(to: URL(fileURLWithPath: asData))
        try Data(#"{"save": "{\"a\": 1}"}"#.utf8).write(to: URL(fileURLWithPath: asText))
        let result = try CLI.run("diff", asData, asText)
        #expect(result.status == 1 && result.outputText.hasPrefix("~ /save: "), "\(result.outputText)")
    }

    @Test func diffAcrossCodecs() throws {
        let same = try CLI.run("diff", CLI.kingdoms, CLI.sample("kingdom/Library/Preferences/com.example.kingdoms.xml.plist"))
        #expect(same.status == 0)
        #expect(same.outputText.isEmpty)
        let json = try CLI.run("--json", "diff", CLI.kingdoms, CLI.kingdoms)
        #expect(json.outputText.contains(#""same": true"#))
    }

    @Test func inspectTellsShapeAndEmbeddedDocuments() throws {
        let text = try CLI.run("inspect", CLI.kingdoms)
        #expect(text.status == 0)
        #expect(text.outputText.contains("codec:     bplist"))
        #expect(text.outputText.contains("kind:      kingdom.player version 2 of 2"))
        #expect(text.outputText.contains("/kingdoms_local_state  json document, dictionary, 3 keys (432 bytes), kingdom.state version 2 of 2"))
        let json = try CLI.run("inspect", CLI.tournament, "--json")
        #expect(json.outputText.contains(#""codec": "json""#))
        #expect(json.outputText.contains(#""key": "players""#))
        let bad = try CLI.run("inspect", Corpus.url("cpython_plistlib/invalid/binary/too_short_data.bplist").path)
        #expect(bad.status == 65)
    }
}
