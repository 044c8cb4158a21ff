import Foundation
import SaveKit
import TestSupport
import Testing

/// Keyed archives (NSKeyedArchiver) through the commands: seen as the objects they hold,
/// edited without breaking them, and their table still there with --raw-archive.
@Suite("savetool on keyed archives")
struct KeyedArchiveCommandTests {
    static let view = Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/keyed/player-view.json").path

    /// A folder with `player.archive` (binary), `player-xml.archive` (the same archive as an XML
    /// plist) and a `UserDefaults` plist holding the archive under `savedPlayer`.
    static func folder() throws -> URL {
        let directory = try Processes.temporaryDirectory("keyed")
        let archive = directory.appendingPathComponent("player.archive").path
        let made = try CLI.run("convert", view, "--from", "json", "--to", "keyed", "-o", archive)
        #expect(made.status == 0, "\(made.errors)")
        #expect(try CLI.run("convert", archive, "--to", "plist", "-o", directory.appendingPathComponent("player-xml.archive").path).status == 0)
        let defaults: SaveValue = ["launchCount": 12, "savedPlayer": .data(try Data(contentsOf: URL(fileURLWithPath: archive)))]
        try Data(try BinaryPlistCodec().encode(defaults)).write(to: directory.appendingPathComponent("com.example.archived.plist"))
        return directory
    }

    static func objects(_ path: String) throws -> [SaveValue] {
        try BinaryPlistCodec().decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))))["$objects"]?.arrayValue ?? []
    }

    @Test func inspectSaysWhatTheArchiveHolds() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["player.archive", "player-xml.archive"] {
            let inspected = try CLI.run("inspect", directory.appendingPathComponent(name).path)
            #expect(inspected.status == 0)
            #expect(inspected.outputText.contains("archive:   keyed archive (NSKeyedArchiver), root class Player, 33 objects, classes: NSDate, Item, NSMutableArray, NSArray, NSDictionary, Player, Guild"), "\(name): \(inspected.outputText)")
        }
        let defaults = try CLI.run("inspect", directory.appendingPathComponent("com.example.archived.plist").path)
        #expect(defaults.outputText.contains("  /savedPlayer  keyed archive (NSKeyedArchiver), root class Player, 33 objects"), "\(defaults.outputText)")
        let json = try Codecs.value(try CLI.run("--json", "inspect", directory.appendingPathComponent("player.archive").path).outputText)
        #expect(json["keyedArchive"]?["rootClass"] == "Player" && json["keyedArchive"]?["objects"] == 33)
    }

    @Test func getFollowsTheGraphAndRawArchiveShowsTheTable() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = directory.appendingPathComponent("player.archive").path
        #expect(try CLI.run("get", archive, "/root/guild/leader/name", "--raw").outputText == "Kai\n")
        #expect(try CLI.run("get", archive, "/root/inventory/$items/1/count").outputText == "3\n")
        #expect(try CLI.run("get", directory.appendingPathComponent("player-xml.archive").path, "/root/level").outputText == "7\n")
        let table = try CLI.run("get", archive, "/$top/root", "--raw-archive")
        #expect(table.status == 0 && table.outputText.contains("$uid"), "\(table.outputText)")
        // The JSON view goes back into an archive that reads the same.
        let json = directory.appendingPathComponent("view.json").path
        #expect(try CLI.run("convert", archive, "-o", json).status == 0)
        let back = directory.appendingPathComponent("back.archive").path
        #expect(try CLI.run("convert", json, "--from", "json", "--to", "keyed", "-o", back).status == 0)
        #expect(try CLI.run("diff", archive, back).status == 0)
    }

    @Test func setThroughADefaultsPlistChangesOneObjectAndKeepsTheFileBinary() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let defaults = directory.appendingPathComponent("com.example.archived.plist").path
        #expect(try CLI.run("get", defaults, "/savedPlayer/root/level").outputText == "7\n")
        let before = try BinaryPlistCodec().decode(Array(try Data(contentsOf: URL(fileURLWithPath: defaults))))
        #expect(try CLI.run("set", defaults, "/savedPlayer/root/level", "8").status == 0)
        #expect(try CLI.run("get", defaults, "/savedPlayer/root/level").outputText == "8\n")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: defaults)))
        #expect(bytes.starts(with: Array("bplist00".utf8)), "the outer plist stays binary")
        let after = try BinaryPlistCodec().decode(bytes)
        guard case .data(let old)? = before["savedPlayer"], case .data(let new)? = after["savedPlayer"] else {
            Issue.record("no savedPlayer data")
            return
        }
        #expect(Array(old).starts(with: Array("bplist00".utf8)) && Array(new).starts(with: Array("bplist00".utf8)))
        let oldObjects = try BinaryPlistCodec().decode(Array(old))["$objects"]?.arrayValue ?? []
        let newObjects = try BinaryPlistCodec().decode(Array(new))["$objects"]?.arrayValue ?? []
        #expect(oldObjects.count == newObjects.count)
        #expect(oldObjects.indices.filter { oldObjects[$0] != newObjects[$0] }.count == 1, "one object changed")
        #expect(after["launchCount"] == 12)
    }

    /// An archive's dates are `NSDate` objects whose time is a real, which an XML plist holds
    /// to the fraction: an archive in XML with a fraction of a second in a date is edited like
    /// any other, the date kept, and no flag of another command is suggested.
    @Test func anXMLArchiveWithAFractionOfASecondInADateIsEdited() throws {
        let directory = try Processes.temporaryDirectory("keyed-xml")
        defer { try? FileManager.default.removeItem(at: directory) }
        let view = directory.appendingPathComponent("view.json").path
        try Data(#"{"root": {"$class": "Player", "level": 7, "born": {"$date": "2025-11-28T05:20:00.5Z"}}}"#.utf8).write(to: URL(fileURLWithPath: view))
        let archive = directory.appendingPathComponent("player.archive").path
        #expect(try CLI.run("convert", view, "--to", "keyed", "-o", archive).status == 0)
        let xml = directory.appendingPathComponent("player-xml.plist").path
        #expect(try CLI.run("convert", archive, "--raw-archive", "--to", "plist", "-o", xml).status == 0)
        let edited = try CLI.run("set", xml, "/root/level", "8")
        #expect(edited.status == 0 && edited.errors.isEmpty, "\(edited.errors)")
        #expect(try CLI.run("get", xml, "/root/born").outputText == #"{"$date": "2025-11-28T05:20:00.5Z"}"# + "\n")
        #expect(try CLI.run("get", xml, "/root/level").outputText == "8\n")
        #expect(try String(contentsOfFile: xml, encoding: .utf8).hasPrefix("<?xml"), "still an XML plist")
        // Nor does an archive's date of year 0 (NSDate.distantPast) stop an edit: its time is a real.
        #expect(try CLI.run("set", xml, "/root/born", #"{"$date": -63114076800.0}"#).status == 0)
        let far = try CLI.run("set", xml, "/root/level", "9")
        #expect(far.status == 0 && far.errors.isEmpty, "\(far.errors)")
        #expect(try CLI.run("get", xml, "/root/born").outputText == #"{"$date": -63114076800.0}"# + "\n")
        // A plain XML plist holds whole seconds: refused, with no flag that `set` does not take.
        let plain = directory.appendingPathComponent("plain.plist").path
        #expect(try CLI.run("convert", "-", "--from", "json", "-o", plain, input: Array(#"{"a": 1}"#.utf8)).status == 0)
        let refused = try CLI.run("set", plain, "/when", #"{"$date": "2025-11-28T05:20:00.5Z"}"#)
        #expect(refused.status == 65 && refused.errors.contains("XML plist dates hold no fraction"), "\(refused.errors)")
        #expect(!refused.errors.contains("--round-dates"), "\(refused.errors)")
    }

    @Test func aValueOfAnotherTypeIsRefusedUnlessRetype() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let defaults = directory.appendingPathComponent("com.example.archived.plist").path
        let before = try Data(contentsOf: URL(fileURLWithPath: defaults))
        let refused = try CLI.run("set", defaults, "/savedPlayer/root/level", #"{"$date": "2026-01-01T00:00:00Z"}"#)
        #expect(refused.status == 65)
        #expect(refused.errors.contains("/savedPlayer/root/level: a date where the archive held an integer"), "\(refused.errors)")
        #expect(refused.errors.contains("--retype writes it anyway"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: defaults)) == before, "nothing written")
        let forced = try CLI.run("set", defaults, "/savedPlayer/root/level", #"{"$date": "2026-01-01T00:00:00Z"}"#, "--retype")
        #expect(forced.status == 0, "\(forced.errors)")
        #expect(try CLI.run("get", defaults, "/savedPlayer/root/level").outputText.contains("$date"))
    }

    @Test func diffComparesObjectsNotTheirPlaceInTheTable() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = directory.appendingPathComponent("player.archive").path
        // The same state with $objects in another order (every uid renumbered to match).
        let plist = try BinaryPlistCodec().decode(Array(try Data(contentsOf: URL(fileURLWithPath: archive))))
        let reordered = directory.appendingPathComponent("reordered.archive").path
        try Data(try BinaryPlistCodec().encode(KeyedArchives.reordered(plist))).write(to: URL(fileURLWithPath: reordered))
        let same = try CLI.run("diff", archive, reordered)
        #expect(same.status == 0 && same.outputText.isEmpty, "\(same.outputText)")
        #expect(try CLI.run("diff", archive, reordered, "--raw-archive").status == 1, "the tables differ")
        #expect(try CLI.run("set", reordered, "/root/guild/leader/level", "13").status == 0)
        let changed = try CLI.run("diff", archive, reordered)
        #expect(changed.status == 1 && changed.outputText == "~ /root/guild/leader/level: 12 → 13\n", "\(changed.outputText)")
    }

    @Test func aBrokenArchiveIsRefusedWithThePlace() throws {
        let directory = try Processes.temporaryDirectory("keyed-broken")
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken = directory.appendingPathComponent("broken.archive").path
        let plist: SaveValue = ["$archiver": "NSKeyedArchiver", "$version": 100_000, "$top": ["root": .uid(1)], "$objects": ["$null", ["name": .uid(7), "$class": .uid(2)], ["$classname": "Player", "$classes": ["Player", "NSObject"]]]]
        try Data(try BinaryPlistCodec().encode(plist)).write(to: URL(fileURLWithPath: broken))
        let before = try Data(contentsOf: URL(fileURLWithPath: broken))
        for arguments in [["get", broken, "/root/name"], ["set", broken, "/root/name", "1"], ["convert", broken, "--to", "json"]] {
            let result = try Processes.run([CLI.executable] + arguments)
            #expect(result.status == 65, "\(arguments)")
            #expect(result.errors.contains("broken.archive:/$objects/1/name: uid 7, past the last object (2)"), "\(result.errors)")
            #expect(result.errors.contains("--raw-archive reads its object table as it is"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: broken)) == before)
        #expect(try CLI.run("get", broken, "/$objects/1/name", "--raw-archive").status == 0)
        // An archive that lost its $top, or whose $objects is no array, is damaged, not a plain plist.
        for (damaged, message) in [
            (["$archiver": "NSKeyedArchiver", "$version": 100_000, "$objects": ["$null", "x"]] as SaveValue, "/$top: no $top, expected a dictionary of the archive's roots"),
            (["$archiver": "NSKeyedArchiver", "$top": ["root": .uid(1)], "$objects": ["a": "b"]], "/$objects: a dictionary, expected an array of the archived objects"),
        ] {
            try Data(try BinaryPlistCodec().encode(damaged)).write(to: URL(fileURLWithPath: broken))
            let result = try CLI.run("inspect", broken)
            #expect(result.status == 65 && result.errors.contains("broken.archive:" + message), "\(result.errors)")
            #expect(try CLI.run("get", broken, "/$archiver", "--raw-archive").outputText == "\"NSKeyedArchiver\"\n")
        }
    }

    /// A save kind over an archive's view (`Fixtures/keyed/formats/archived.player`): a class in
    /// its fingerprint, a migration that renames a field, and merge rules, all on the view.
    @Test func kindsRecogniseMigrateAndMergeTheView() throws {
        let directory = try Processes.temporaryDirectory("keyed-kind")
        defer { try? FileManager.default.removeItem(at: directory) }
        let formats = Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/keyed/formats").path
        let v1 = directory.appendingPathComponent("v1.json").path
        try Data(#"""
            {"root": {"$class": "Player", "name": "Zoë", "level": 7, "xp": 1250, "lastPlayed": {"$date": "2026-11-20T18:30:00Z"},
              "inventory": {"$class": "NSMutableArray", "$items": [{"$class": "Item", "kind": "sword", "count": 1}, {"$class": "Item", "kind": "potion", "count": 3}]}}}
            """#.utf8).write(to: URL(fileURLWithPath: v1))
        let archive = directory.appendingPathComponent("player.archive").path
        #expect(try CLI.run("convert", v1, "--from", "json", "--to", "keyed", "-o", archive).status == 0)
        let validated = try CLI.run("--formats", formats, "validate", archive)
        #expect(validated.status == 0 && validated.outputText.contains("archived.player version 1 of 2 (its content matches the fingerprint of version 1)"), "\(validated.outputText)")

        let out = directory.appendingPathComponent("out").path
        let migrated = try CLI.run("--formats", formats, "migrate", archive, "--out", out)
        #expect(migrated.outputText == "1 migrated, 0 unchanged, 0 skipped, 0 failed\n", "\(migrated.outputText) \(migrated.errors)")
        let base = out + "/player.archive"
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: base))).starts(with: Array("bplist00".utf8)))
        #expect(try CLI.run("get", base, "/root/experience").outputText == "1250\n")
        #expect(try CLI.run("get", base, "/root/saveVersion").outputText == "2\n")
        #expect(try CLI.run("get", base, "/root/xp").status == 1)
        // The renamed field keeps its place, in the view and in the archive's own object.
        let player = try Codecs.value(try CLI.run("get", base, "/root").outputText)
        #expect(player.dictionaryValue.map { Array($0.keys.prefix(4)) } == ["$class", "name", "level", "experience"], "\(player)")
        #expect(try CLI.run("get", archive, "/$objects/1", "--raw-archive").outputText.contains("\"xp\": 1250,\n  \"lastPlayed\""), "xp stood there")
        let objects = try Codecs.value(try CLI.run("get", base, "/$objects", "--raw-archive").outputText).arrayValue ?? []
        let stored = objects.compactMap(\.dictionaryValue).first { $0["experience"] != nil }.map { Array($0.keys) } ?? []
        #expect(stored.firstIndex(of: "experience") == stored.firstIndex(of: "level").map { $0 + 1 }, "\(stored)")
        #expect(try CLI.run("--formats", formats, "validate", base).outputText.contains("archived.player version 2 of 2"))

        // Two devices from that base: the merge rules of the kind decide, on the view.
        let local = directory.appendingPathComponent("local.archive").path, remote = directory.appendingPathComponent("remote.archive").path
        try FileManager.default.copyItem(atPath: base, toPath: local)
        try FileManager.default.copyItem(atPath: base, toPath: remote)
        for (file, pointer, value) in [
            (local, "/root/level", "8"), (local, "/root/experience", "100"), (local, "/root/inventory/$items/-", #"{"$class": "Item", "kind": "shield", "count": 1}"#),
            (remote, "/root/experience", "1900"), (remote, "/root/inventory/$items/1/count", "5"),
        ] {
            #expect(try CLI.run("set", file, pointer, value).status == 0, "\(pointer)")
        }
        let merged = directory.appendingPathComponent("merged.archive").path
        let result = try CLI.run("--formats", formats, "merge", "--local", local, "--remote", remote, "--base", base, "-o", merged)
        #expect(result.status == 0, "\(result.outputText) \(result.errors)")
        let view = try Codecs.value(try CLI.run("convert", merged, "--compact").outputText)
        #expect(view["root"]?["level"] == 8 && view["root"]?["experience"] == 100, "the higher level, with its own experience")
        let items = view["root"]?["inventory"]?["$items"]?.arrayValue ?? []
        #expect(items.map { $0["kind"] } == ["sword", "potion", "shield"] && items[1]["count"] == 5)
    }

    @Test func fromKeyedEditsOverTheArchivesOwnTable() throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let xml = directory.appendingPathComponent("player-xml.archive").path
        let before = try Self.objectsXML(xml)
        #expect(try CLI.run("set", "--from", "keyed", xml, "/root/level", "8").status == 0)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: xml)))
        #expect(bytes.starts(with: Array("<?xml".utf8)), "still an XML plist")
        let after = try Self.objectsXML(xml)
        #expect(before.count == after.count && before.indices.filter { before[$0] != after[$0] }.count == 1)
    }

    static func objectsXML(_ path: String) throws -> [SaveValue] {
        try XMLPlistCodec().decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))))["$objects"]?.arrayValue ?? []
    }

    @Test func aDamagedArchiveInsideAnotherDocumentIsAnErrorWithItsPlace() throws {
        let directory = try Processes.temporaryDirectory("keyed-embedded-broken")
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken: SaveValue = ["$archiver": "NSKeyedArchiver", "$version": 100_000, "$top": ["root": .uid(1)], "$objects": ["$null", ["name": .uid(7), "$class": .uid(2)], ["$classname": "Player", "$classes": ["Player", "NSObject"]]]]
        let outer = directory.appendingPathComponent("outer.plist").path
        try Data(try BinaryPlistCodec().encode(["savedPlayer": .data(Data(try BinaryPlistCodec().encode(broken)))])).write(to: URL(fileURLWithPath: outer))
        let before = try Data(contentsOf: URL(fileURLWithPath: outer))
        for arguments in [["get", outer, "/savedPlayer/root"], ["set", outer, "/savedPlayer/$objects/1/level", "9"]] {
            let result = try Processes.run([CLI.executable] + arguments)
            #expect(result.status == 65, "\(arguments): \(result.errors)")
            #expect(result.errors.contains("outer.plist:/savedPlayer/$objects/1/name: uid 7, past the last object (2)"), "\(result.errors)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: outer)) == before)
        // inspect describes the file, and says the archive inside cannot be read (not "none").
        let inspected = try Processes.run([CLI.executable, "inspect", outer])
        #expect(inspected.status == 0)
        #expect(inspected.outputText.contains("/savedPlayer  keyed archive that cannot be read: "), "\(inspected.outputText)")
        #expect(inspected.outputText.contains("uid 7, past the last object (2)"), "\(inspected.outputText)")
    }
}
