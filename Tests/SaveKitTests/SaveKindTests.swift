import Foundation
@testable import SaveKit
import TestSupport
import Testing

@Suite("Save kinds")
struct SaveKindTests {
    /// A kind folder holding only `kind.json`.
    static func writeKindFile(_ json: String, into folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(json.utf8).write(to: folder.appendingPathComponent("kind.json"))
    }

    /// A `Formats/kape.tournament/` folder as formats.md describes it, written for the test.
    static func writeKind(into root: URL, kindJSON: String? = nil) throws -> URL {
        let folder = root.appendingPathComponent("kape.tournament")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((kindJSON ?? #"""
            {"format": "savetool.kind/1", "kind": "kape.tournament", "title": "Kape party game — tournament in progress",
             "files": ["Documents/current_tournament.json"], "codec": "json",
             "version": {"path": "/schemaVersion", "current": 3},
             "detect": [
               {"version": 1, "all": [{"type": ["/scores", "object"]}, {"has": "/roundIndex"}]},
               {"version": 2, "all": [{"missing": "/scores"}, {"has": "/roundIndex"}]}]}
            """#).utf8).write(to: folder.appendingPathComponent("kind.json"))
        try Data(#"""
            {"format": "savetool.migrations/1", "kind": "kape.tournament", "steps": [
              {"from": 1, "to": 2, "ops": [
                {"op": "forEach", "path": "/players", "ops": [
                  {"op": "wrap", "path": "", "key": "name"},
                  {"op": "set", "path": "/score", "value": {"$lookup": ["/scores", {"$rel": "/name"}, 0]}}]},
                {"op": "remove", "path": "/scores"}]},
              {"from": 2, "to": 3, "ops": [
                {"op": "rename", "from": "/roundIndex", "to": "/round"},
                {"op": "rename", "from": "/currentPlayerIndex", "to": "/activePlayerIndex"},
                {"op": "set", "path": "/status", "value": "playing", "mode": "ifMissing"}]}]}
            """#.utf8).write(to: folder.appendingPathComponent("migrations.json"))
        try Data(#"""
            {"type": "object", "required": ["schemaVersion", "players", "round", "activePlayerIndex", "status", "deckId"],
             "properties": {
               "players": {"type": "array", "items": {"type": "object", "required": ["name", "score"],
                 "properties": {"name": {"type": "string"}, "score": {"type": "integer", "minimum": 0}}}},
               "round": {"type": "integer", "minimum": 0}, "status": {"enum": ["playing", "finished"]}}}
            """#.utf8).write(to: folder.appendingPathComponent("schema-v3.json"))
        try Data(#"{"type": "object", "required": ["roundIndex"]}"#.utf8).write(to: folder.appendingPathComponent("schema-v2.json"))
        return folder
    }

    /// ``Migrator/claim(path:)`` skips `fnmatch` for a path that does not end with the text
    /// after a pattern's last wildcard: that skip must never turn away a path `fnmatch` takes.
    /// Every pattern against every path, wildcards, brackets and escapes among them.
    @Test func aClaimIsWhatFnmatchSays() throws {
        let base = try #require(BuiltInKindTests.migrator.kinds.first)
        let patterns = [
            "Documents/current_tournament.json", "Documents/games/*.json", "*.plist", "saves/?/slot.json", "a[bc]d.json",
            "x\\*y.json", "data/*", "Library/Preferences/com.example.*.plist", "*", "[!.]*.sav", "lit\\", "end]", "Documents/",
        ]
        let paths = [
            "Documents/current_tournament.json", "saves/Documents/current_tournament.json", "Documents/current_tournament.json.bak",
            "Documents/games/g1.json", "Documents/games/sub/g1.json", "x/Documents/games/g.json", "save.plist", "a/b/save.plist",
            "saves/1/slot.json", "saves/12/slot.json", "abd.json", "acd.json", "aed.json", "x*y.json", "xzy.json", "data/a",
            "data/a/b", "Library/Preferences/com.example.blocks.plist", "slot.sav", ".slot.sav", "lit\\", "end]", "Documents/", "",
        ]
        for pattern in patterns {
            var kind = base
            kind.files = [pattern]
            let migrator = Migrator(kinds: [kind])
            for path in paths {
                let expected = fnmatch(pattern, path, FNM_PATHNAME) == 0 || fnmatch("*/" + pattern, path, 0) == 0
                #expect((migrator.claim(path: path) != nil) == expected, "\(pattern) against \(path)")
            }
        }
    }

    @Test func recognitionByVersionFieldAndFingerprints() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        _ = try Self.writeKind(into: root)
        let kinds = try KindLoader.kinds(in: root.path)
        let kind = try #require(kinds.first)
        #expect(kind.name == "kape.tournament" && kind.currentVersion == 3 && kind.migrations?.steps.count == 2)
        #expect(kind.claims(path: "saves/Documents/current_tournament.json"))
        #expect(kind.claims(path: "Documents/current_tournament.json"))
        #expect(!kind.claims(path: "Documents/current_tournament.json.bak"))
        let cases: [(String, SaveKind.Recognition)] = [
            (#"{"players": ["Ana"], "scores": {"Ana": 3}, "roundIndex": 2}"#, .version(1)),
            (#"{"players": [{"name": "Ana", "score": 3}], "roundIndex": 2}"#, .version(2)),
            (#"{"schemaVersion": 3, "round": 2}"#, .version(3)),
            (#"{"schemaVersion": 9}"#, .future(9)),
            (#"{"schemaVersion": "3"}"#, .unrecognized),
            (#"{"players": []}"#, .unrecognized),
        ]
        for (json, expected) in cases {
            #expect(kind.recognise(try Codecs.value(json)) == expected, "\(json)")
        }
        // A kind whose fingerprints overlap: a document both match is ambiguous, not guessed.
        var overlapping = kind
        overlapping.fingerprints.append(SaveKind.Fingerprint(version: 2, conditions: [.has(JSONPointer(tokens: ["roundIndex"]))]))
        #expect(overlapping.recognise(try Codecs.value(#"{"scores": {}, "roundIndex": 1}"#)) == .ambiguous([1, 2]))

        // Claimed by a fingerprint, versioned by the field: the reason says both, never that
        // a version 3 save "matches the fingerprint of version 1".
        var lasting = kind
        lasting.fingerprints = [SaveKind.Fingerprint(version: 1, conditions: [.has(JSONPointer(tokens: ["round"]))])]
        let (recognition, evidence) = try #require(lasting.recogniseByContent(try Codecs.value(#"{"schemaVersion": 3, "round": 2}"#)))
        #expect(recognition == .version(3))
        #expect(evidence.description == "its content matches the kind's fingerprint of version 1, and /schemaVersion gives the version")
        let agreeing = try #require(lasting.recogniseByContent(try Codecs.value(#"{"schemaVersion": 1, "round": 2}"#)))
        #expect(agreeing.1.description == "its content matches the fingerprint of version 1")
        // A field that gives no version is not said to give it; what is wrong with it is.
        let stringly = try Codecs.value(#"{"schemaVersion": "3", "round": 2}"#)
        let broken = try #require(lasting.recogniseByContent(stringly))
        #expect(broken.0 == .unrecognized && broken.1.description == "its content matches the fingerprint of version 1")
        #expect(lasting.versionProblem(in: stringly) == "its version field /schemaVersion holds a string, expected an integer from 1")
    }

    @Test func migrateVersionOneToCurrentAndValidate() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let kind = try KindLoader.load(folder: try Self.writeKind(into: root).path)
        var save = try Codecs.value(#"{"players": ["Ana", "Zoë 🎉"], "scores": {"Ana": 3}, "roundIndex": 2, "currentPlayerIndex": 1, "deckId": "classic"}"#)
        guard case .version(let version) = kind.recognise(save) else { Issue.record("not recognised"); return }
        let steps = try #require(kind.migrations?.steps(from: version, to: kind.currentVersion))
        for step in steps {
            let schema = kind.schemas[step.from]
            try MigrationEngine(isRequired: { schema?.requires($0) ?? false }).apply(step.operations, to: &save, step: step.name)
            try save.setValue(.integer(Int64(step.to)), at: kind.versionPath!)
        }
        #expect(try Codecs.compactJSON(save) == #"{"players":[{"name":"Ana","score":3},{"name":"Zoë 🎉","score":0}],"round":2,"activePlayerIndex":1,"deckId":"classic","schemaVersion":3,"status":"playing"}"#)
        #expect(kind.schemas[3]?.violations(of: save) == [])
        #expect(kind.recognise(save) == .version(3))
    }

    @Test func schemaViolationsNameTheirValues() throws {
        let schema = try Schema(parsing: try Codecs.value(#"""
            {"type": "object", "required": ["round"], "properties": {
              "round": {"type": "integer", "minimum": 0}, "status": {"enum": ["playing", "finished"]},
              "players": {"type": "array", "items": {"type": "object", "required": ["name"]}}}}
            """#))
        let violations = schema.violations(of: try Codecs.value(#"{"status": "paused", "players": [{"name": "A"}, {}], "extra": 1}"#))
        #expect(violations.map(\.description) == [
            "/round: missing, expected a required field", "/players/1/name: missing, expected a required field",
            #"/status: found "paused", expected one of "playing", "finished""#,
        ])
        #expect(schema.violations(of: try Codecs.value(#"{"round": -1}"#)).map(\.description) == ["/round: -1 is below the minimum 0"])
        // Integers are compared as integers, not as reals that round them (2^53 + 1 would be 2^53).
        let exact = try Schema(parsing: try Codecs.value(#"{"type": "integer", "maximum": 9007199254740992, "minimum": -9007199254740992.5}"#))
        #expect(exact.violations(of: .integer(9_007_199_254_740_993)).map(\.description) == ["'': 9007199254740993 is above the maximum 9007199254740992"])
        #expect(exact.violations(of: .integer(9_007_199_254_740_992)).isEmpty)
        #expect(exact.violations(of: .integer(-9_007_199_254_740_993)).map(\.description) == ["'': -9007199254740993 is below the minimum -9007199254740992.0"])
        #expect(exact.violations(of: .int(UInt64.max)).map(\.description) == ["'': 18446744073709551615 is above the maximum 9007199254740992"])
        for (a, b, order) in [(SaveValue.integer(3), SaveValue.real(2.5), 1), (.real(-0.5), .integer(0), -1), (.int(UInt64.max), .real(0x1p64), -1),
                              (.int(UInt64.max), .real(1e19), 1), (.integer(Int64.min), .real(-0x1p63), 0), (.integer(1), .real(.nan), nil)] as [(SaveValue, SaveValue, Int?)] {
            #expect(Schema.compareNumbers(a, b) == order, "\(a) \(b)")
        }
        #expect(throws: FormatDefinitionError.self) { try Schema(parsing: try Codecs.value(#"{"minimum": "0"}"#)) }
        // A misspelt keyword's value is the schema's mistake, named where it is, not every save's.
        let names = "object, dictionary, array, string, boolean, bool, null, integer, number, real, date, data, uid"
        for (schema, message) in [
            (#"{"properties": {"gold": {"type": "integr"}}}"#, "/properties/gold/type: found \"integr\", expected a type name (\(names)) or a list of them"),
            (#"{"type": ["integer", 5]}"#, "/type/1: found an integer, expected a type name (\(names)) or a list of them"),
            (#"{"type": {"integer": true}}"#, "/type: found a dictionary, expected a type name (\(names)) or a list of them"),
            (#"{"required": "gold"}"#, "/required: found \"gold\", expected a list of property names"),
            (#"{"required": ["gold", 1]}"#, "/required/1: found an integer, expected a property name"),
            (#"{"items": {"enum": "a"}}"#, "/items/enum: found \"a\", expected a list of the values allowed"),
            (#"{"properties": ["gold"]}"#, "/properties: found an array, expected an object of schemas by property name"),
            (#"{"type": []}"#, "/type: found an array, expected a type name (\(names)) or a list of them"),
            (#"{"enum": []}"#, "/enum: found an array, expected a list of the values allowed, one at least"),
            (#"{"minimum": 10, "maximum": 1}"#, "/minimum: 10 is above the maximum 1, expected a minimum no value is kept out by"),
        ] {
            do {
                _ = try Schema(parsing: try Codecs.value(schema))
                Issue.record("accepted: \(schema)")
            } catch let error as FormatDefinitionError {
                #expect(error.description == message)
            }
        }
        #expect(schema.violations(of: try Codecs.value(#"{"round": 1.5}"#)).map(\.description) == ["/round: found a real, expected integer"])
        #expect(schema.requires(JSONPointer(tokens: ["round"])))
        #expect(schema.requires(JSONPointer(tokens: ["players", "*", "name"])))
        #expect(!schema.requires(JSONPointer(tokens: ["status"])))
    }

    @Test func aBrokenKindFileIsNamedWithItsPlace() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root, kindJSON: #"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 0}}"#)
        #expect(throws: KindLoader.LoadError(file: folder.path + "/kind.json", at: JSONPointer(tokens: ["version", "current"]), message: "found 0, expected the current version (an integer from 1)")) {
            try KindLoader.load(folder: folder.path)
        }
        // Not JSON: the parser's line and column are the place.
        let broken = try Self.writeKind(into: root, kindJSON: "{\"format\": \"savetool.kind/1\",\n}")
        #expect(throws: KindLoader.LoadError.self) { try KindLoader.load(folder: broken.path) }
        do { _ = try KindLoader.load(folder: broken.path) } catch { #expect("\(error)".hasPrefix(broken.path + "/kind.json:2:1: "), "\(error)") }
    }

    /// Two folders that declare one kind: which would count depends on folder names, which mean
    /// nothing, so the second is refused, naming the first.
    @Test func twoFoldersDeclaringOneKindAreRefused() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        for folder in ["x", "y"] {
            try Self.writeKindFile(#"{"format": "savetool.kind/1", "kind": "same.k", "version": {"current": 1}}"#, into: root.appendingPathComponent(folder))
        }
        #expect(throws: KindLoader.LoadError(
            file: root.path + "/y/kind.json", at: JSONPointer(tokens: ["kind"]),
            message: #""same.k", expected a kind no other folder declares: \#(root.path)/x declares it too"#)) {
            try KindLoader.kinds(in: root.path)
        }
    }

    /// A kind.json is read strictly: what the loader would ignore, or read as "no condition" and
    /// so match every file, is refused with its file and place.
    @Test(arguments: [
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detetc": []}"#, "/detetc", "an unknown key, expected one of format, kind, title, files, codec, version, detect, embedded"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "files": "Documents/*.json"}"#, "/files", "a string, expected an array of path patterns"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "files": [3]}"#, "/files/0", "an integer, expected a string"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detect": {"1": {}}}"#, "/detect", "a dictionary, expected an array of fingerprints"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detect": [{"version": 1, "when": []}]}"#, "/detect/0/when", "an unknown key, expected one of version, all"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detect": [{"version": 1}]}"#, "/detect/0/all", "missing or empty, expected the conditions that all hold for this version"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detect": [{"version": 1, "all": []}]}"#, "/detect/0/all", "missing or empty, expected the conditions that all hold for this version"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1, "pth": "/v"}}"#, "/version/pth", "an unknown key, expected one of current, path"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "embedded": {"/a": {"codec": "json", "knd": "y"}}}"#, "/embedded/~1a/knd", "an unknown key, expected one of codec, kind"),
        (#"["not", "an", "object"]"#, "", "an array, expected the kind's object"),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": "2"}}"#, "/version/current", "a string, expected an integer"),
        (#"{"format": "savetool.kind/2", "kind": "x", "version": {"current": 1}}"#, "/format", #"found "savetool.kind/2", expected "savetool.kind/1""#),
        (#"{"kind": "x", "version": {"current": 1}}"#, "/format", #"missing, expected "savetool.kind/1""#),
        (#"{"format": "savetool.kind/1", "kind": "", "version": {"current": 1}}"#, "/kind", #"found "", expected the kind's name"#),
        (#"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 1}, "detect": [{"version": "1", "all": [{"has": "/a"}]}]}"#, "/detect/0/version", "a string, expected an integer"),
    ])
    func malformedDefinitionsAreRefusedWithTheirPlace(_ json: String, _ pointer: String, _ message: String) throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root, kindJSON: json)
        #expect(throws: KindLoader.LoadError(file: folder.path + "/kind.json", at: try JSONPointer(parsing: pointer), message: message)) {
            try KindLoader.load(folder: folder.path)
        }
    }

    @Test func additionalPropertiesCheckEveryValueOfAMap() throws {
        let schema = try Schema(parsing: try Codecs.value(#"""
            {"type": "object", "properties": {"scores": {"type": "object", "properties": {"bonus": {"type": "string"}},
              "additionalProperties": {"type": "integer", "minimum": 0}}, "open": {"type": "object", "additionalProperties": true}}}
            """#))
        let violations = schema.violations(of: try Codecs.value(#"{"scores": {"Ana": 3, "Zoë 🎉": -1, "Besa": "5", "bonus": "x"}, "open": {"a": null}}"#))
        #expect(violations.map(\.description) == ["/scores/Zoë 🎉: -1 is below the minimum 0", "/scores/Besa: found a string, expected integer"])
        // A required field of every value in a map is required for renames through `*`.
        let map = try Schema(parsing: try Codecs.value(#"{"type": "object", "additionalProperties": {"type": "object", "required": ["ruler"]}}"#))
        #expect(map.requires(JSONPointer(tokens: ["*", "ruler"])))
        #expect(map.requires(JSONPointer(tokens: ["Arbëria", "ruler"])))
    }

    @Test func fingerprintsCanCompareAndCombine() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root, kindJSON: #"""
            {"format": "savetool.kind/1", "kind": "kape.tournament", "version": {"current": 2},
             "detect": [
               {"version": 1, "all": [{"has": "/roundIndex"}, {"not": {"compare": ["/roundIndex", ">=", {"$ref": "/totalRounds"}]}}]},
               {"version": 2, "all": [{"any": [{"equals": ["/status", "done"]}, {"compare": ["/roundIndex", ">=", {"$ref": "/totalRounds"}]}]}]}]}
            """#)
        let kind = try KindLoader.load(folder: folder.path)
        #expect(kind.recognise(try Codecs.value(#"{"roundIndex": 2, "totalRounds": 5}"#)) == .version(1))
        #expect(kind.recognise(try Codecs.value(#"{"roundIndex": 2}"#)) == .version(1), "no totalRounds: the comparison is false")
        #expect(kind.recognise(try Codecs.value(#"{"roundIndex": 5, "totalRounds": 5}"#)) == .version(2))
        #expect(kind.recognise(try Codecs.value(#"{"status": "done"}"#)) == .version(2))
        #expect(kind.recognise(try Codecs.value(#"{"status": "done", "roundIndex": 1}"#)) == .ambiguous([1, 2]))
        let broken = try Self.writeKind(into: root, kindJSON: #"{"format": "savetool.kind/1", "kind": "k", "version": {"current": 1}, "detect": [{"version": 1, "all": [{"has": "/a"}, {"not": {"maybe": "/b"}}]}]}"#)
        #expect(throws: KindLoader.LoadError.self) { try KindLoader.load(folder: broken.path) }
        do { _ = try KindLoader.load(folder: broken.path) } catch {
            #expect("\(error)".hasPrefix(broken.path + "/kind.json:/detect/0/all/1/not: unknown condition \"maybe\""))
        }
    }

    @Test func aBrokenMigrationsOrSchemaFileIsNamedWithItsPlace() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root)
        let migrations = folder.appendingPathComponent("migrations.json")
        try Data(#"{"format": "savetool.migrations/1", "kind": "kape.tournament", "steps": [{"from": 1, "to": 2, "ops": [{"op": "if", "when": {"compare": ["/a", "~", 1]}, "then": []}]}]}"#.utf8).write(to: migrations)
        #expect(throws: KindLoader.LoadError(file: migrations.path, at: JSONPointer(tokens: ["steps", "0", "ops", "0", "when"]),
                                             message: #"found ["/a","~",1], expected {"compare": ["/pointer", one of < <= > >= == !=, value]}"#)) {
            try KindLoader.load(folder: folder.path)
        }
        try FileManager.default.removeItem(at: migrations)
        let schema = folder.appendingPathComponent("schema-v2.json")
        try Data(#"{"type": "object", "properties": {"scores": {"additionalProperties": 3}}}"#.utf8).write(to: schema)
        #expect(throws: KindLoader.LoadError(file: schema.path, at: JSONPointer(tokens: ["properties", "scores", "additionalProperties"]),
                                             message: "found an integer, expected a schema object")) {
            try KindLoader.load(folder: folder.path)
        }
    }

    /// Mistakes in several files of a kind, and in several kinds, are all named in one run, each
    /// with its file and place: an author fixes them in one go (a trial took 11 runs for 11).
    @Test func everyFilesMistakeIsNamedAtOnce() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root)
        let other = root.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data(#"{"format": "savetool.kind/1", "kind": "o.k", "version": {"current": 1}, "detetc": []}"#.utf8).write(to: other.appendingPathComponent("kind.json"))
        let files = [
            ("migrations.json", #"{"format": "savetool.migrations/1", "kind": "kape.tournament", "stpes": [], "steps": []}"#),
            ("merge.json", #"{"format": "savetool.merge/1", "kind": "kape.tournament", "rules": [{"path": "/t", "policy": "max"}, {"path": "/t", "policy": "min"}]}"#),
            ("schema-v1.json", #"{"type": "int"}"#),
        ]
        for (name, text) in files { try Data(text.utf8).write(to: folder.appendingPathComponent(name)) }
        let expected = KindLoader.LoadErrors(errors: [
            KindLoader.LoadError(file: folder.path + "/schema-v1.json", at: JSONPointer(tokens: ["type"]),
                                 message: #"found "int", expected a type name (object, dictionary, array, string, boolean, bool, null, integer, number, real, date, data, uid) or a list of them"#),
            KindLoader.LoadError(file: folder.path + "/migrations.json", at: JSONPointer(tokens: ["stpes"]), message: "an unknown key for migrations.json, expected one of format, kind, steps"),
            KindLoader.LoadError(file: folder.path + "/merge.json", at: JSONPointer(tokens: ["rules", "1", "path"]), message: "/t, which /rules/0 has a rule for already, expected one rule per path"),
            KindLoader.LoadError(file: other.path + "/kind.json", at: JSONPointer(tokens: ["detetc"]), message: "an unknown key, expected one of format, kind, title, files, codec, version, detect, embedded"),
        ])
        #expect(throws: expected) { try KindLoader.kinds(in: root.path) }
    }

    /// What a run would only find when a file needs it is refused when the kind loads.
    @Test(arguments: [
        (#"{"from": 1, "to": 2, "opz": [], "ops": []}"#, "/steps/0/opz", "an unknown key for a step, expected one of from, to, ops"),
        (#"{"from": 1, "to": 2, "ops": [{"op": "rename", "from": "/f/*/cs", "to": "/f/callsign"}]}"#, "/steps/0/ops/0/to",
         #"/f/callsign with 0 '*', expected as many as /f/*/cs has (1): each takes the key its '*' in "from" matched"#),
        (#"{"from": 1, "to": 2, "ops": [{"op": "copy", "from": "/f/a", "to": "/f/*/a/*"}]}"#, "/steps/0/ops/0/to",
         #"/f/*/a/* with 2 '*', expected as many as /f/a has (0): each takes the key its '*' in "from" matched"#),
        (#"{"from": 1, "to": 2, "ops": [{"op": "assert", "path": "/a", "type": "objet"}]}"#, "/steps/0/ops/0/type",
         #""objet", expected a type name (object, dictionary, array, string, boolean, bool, null, integer, number, real, date, data, uid)"#),
        (#"{"from": 1, "to": 2, "ops": {}}"#, "/steps/0/ops", "found a dictionary, expected an array of operations"),
        (#"{"from": 1, "to": 2, "ops": [{"op": "assert", "path": "/a", "keysIn": ["/b"]}]}"#, "/steps/0/ops/0/keysIn", "found an array, expected a JSON Pointer"),
        (#"{"from": 1, "to": 2, "ops": [{"op": "convert", "path": "/a", "to": "strng"}]}"#, "/steps/0/ops/0/to", #""strng", expected one of integer, real, string, bool, date, data"#),
        (#"{"from": 1, "to": 2, "ops": [{"op": "set", "path": "/a"}]}"#, "/steps/0/ops/0", #"no "value", expected the value to set (a literal, or {"$ref": "/pointer"})"#),
    ])
    func stepMistakesAreRefusedWhenTheKindLoads(_ step: String, _ pointer: String, _ message: String) throws {
        #expect(throws: FormatDefinitionError(at: try JSONPointer(parsing: pointer), message: message)) {
            try MigrationPlan(parsing: Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [\#(step)]}"#))
        }
    }

    /// A fingerprint of a version after the current one tells a file from the future (a kind
    /// without a version field has no other way): never called valid, never written.
    @Test func aFingerprintBeyondTheCurrentVersionTellsTheFuture() throws {
        let root = try Processes.temporaryDirectory("kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try Self.writeKind(into: root, kindJSON: #"{"format": "savetool.kind/1", "kind": "kape.tournament", "version": {"current": 3}, "detect": [{"version": 4, "all": [{"has": "/a"}]}, {"version": 3, "all": [{"has": "/b"}]}]}"#)
        let kind = try KindLoader.load(folder: folder.path)
        #expect(kind.recognise(try Codecs.value(#"{"a": 1}"#)) == .future(4))
        #expect(kind.recognise(try Codecs.value(#"{"b": 1}"#)) == .version(3))
        let zero = try Self.writeKind(into: root.appendingPathComponent("z"), kindJSON: #"{"format": "savetool.kind/1", "kind": "x", "version": {"current": 3}, "detect": [{"version": 0, "all": [{"has": "/a"}]}]}"#)
        #expect(throws: KindLoader.LoadError(file: zero.path + "/kind.json", at: JSONPointer(tokens: ["detect", "0", "version"]), message: "0, expected a version from 1")) {
            try KindLoader.load(folder: zero.path)
        }
    }

    /// Content that the fingerprints of two kinds match is `ambiguous` in the pipeline that
    /// migrate and import go through, as `validate` says it, never skipped as nobody's.
    @Test func contentTwoKindsRecogniseIsAmbiguousInThePipeline() throws {
        let root = try Processes.temporaryDirectory("two-kinds")
        defer { try? FileManager.default.removeItem(at: root) }
        for name in ["dungeon.save", "clone.save"] {
            try Self.writeKindFile(
                #"{"format": "savetool.kind/1", "kind": "\#(name)", "codec": "json", "version": {"path": "/v", "current": 1}, "detect": [{"version": 1, "all": [{"has": "/dungeonLevel"}]}]}"#,
                into: root.appendingPathComponent(name))
        }
        let pipeline = try SavePipeline(kinds: try KindLoader.kinds(in: root.path), registry: .builtIn)
        let result = pipeline.process(Array(#"{"dungeonLevel": 3}"#.utf8), path: "saves/other.json")
        #expect(result.status == .ambiguous)
        #expect(result.problem == "recognised by the fingerprints of 2 kinds (clone.save, dungeon.save), expected one", "\(result.problem ?? "")")
        #expect(pipeline.process(Array(#"{"gold": 3}"#.utf8), path: "saves/other.json").status == .unrecognized)
    }
}
