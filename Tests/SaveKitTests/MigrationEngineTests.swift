import Foundation
@testable import SaveKit
import TestSupport
import Testing

@Suite("Migration engine")
struct MigrationEngineTests {
    static func ops(_ json: String) throws -> [MigrationOperation] {
        let plan = try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "test", "steps": [{"from": 1, "to": 2, "ops": \#(json)}]}"#))
        return plan.steps[0].operations
    }

    static func migrate(_ document: String, _ operations: String, required: Set<String> = []) throws -> SaveValue {
        var value = try Codecs.value(document)
        let engine = MigrationEngine(isRequired: { required.contains($0.description) })
        try engine.apply(try ops(operations), to: &value, step: "1→2")
        return value
    }

    @Test func kapeTournamentVersionOneToThree() throws {
        let v1 = #"{"players": ["Ana", "Besa", "Zoë"], "scores": {"Ana": 3, "Besa": 5}, "roundIndex": 2, "currentPlayerIndex": 1, "deckId": "classic", "extra": true}"#
        let v2 = try Self.migrate(v1, #"""
            [{"op": "forEach", "path": "/players", "ops": [
                {"op": "wrap", "path": "", "key": "name"},
                {"op": "set", "path": "/score", "value": {"$lookup": ["/scores", {"$rel": "/name"}, 0]}}]},
             {"op": "remove", "path": "/scores"},
             {"op": "set", "path": "/schemaVersion", "value": 2}]
            """#)
        #expect(try Codecs.compactJSON(v2) == #"{"players":[{"name":"Ana","score":3},{"name":"Besa","score":5},{"name":"Zoë","score":0}],"roundIndex":2,"currentPlayerIndex":1,"deckId":"classic","extra":true,"schemaVersion":2}"#)
        var v3 = v2
        try MigrationEngine().apply(try Self.ops(#"""
            [{"op": "rename", "from": "/roundIndex", "to": "/round"},
             {"op": "rename", "from": "/currentPlayerIndex", "to": "/activePlayerIndex"},
             {"op": "set", "path": "/status", "value": "playing", "mode": "ifMissing"},
             {"op": "set", "path": "/schemaVersion", "value": 3}]
            """#), to: &v3, step: "2→3")
        #expect(v3["round"] == 2 && v3["activePlayerIndex"] == 1 && v3["status"] == "playing" && v3["schemaVersion"] == 3)
        #expect(v3["extra"] == true, "unknown fields are kept")
    }

    /// `$rel` reads the element a `forEach` is at, as its operations leave it, in a dictionary
    /// as in an array, and inside an `if`; outside a `forEach` it is an error, not a null.
    @Test func relativeValuesReadTheElementAsItStands() throws {
        let value = try Self.migrate(#"{"a": [{"x": 1}, {"x": 2}], "m": {"k": {"x": 3}}}"#, #"""
            [{"op": "forEach", "path": "/a", "ops": [
                {"op": "set", "path": "/y", "value": {"$rel": "/x"}},
                {"op": "rename", "from": "/y", "to": "/z"},
                {"op": "if", "when": {"has": "/z"}, "then": [{"op": "set", "path": "/w", "value": {"$rel": "/z"}}]}]},
             {"op": "forEach", "path": "/m", "ops": [{"op": "set", "path": "/y", "value": {"$rel": "/x"}}]}]
            """#)
        #expect(try Codecs.compactJSON(value) == #"{"a":[{"x":1,"z":1,"w":1},{"x":2,"z":2,"w":2}],"m":{"k":{"x":3,"y":3}}}"#)
        #expect(throws: MigrationError(step: "1→2", operation: "set", path: JSONPointer(tokens: ["x"]), message: "$rel outside forEach, expected it only inside one")) {
            try Self.migrate(#"{"x": 1}"#, #"[{"op": "set", "path": "/y", "value": {"$rel": "/x"}}]"#)
        }
        #expect(throws: MigrationError.self) {
            try Self.migrate(#"{"a": 1}"#, #"[{"op": "forEach", "path": "/a", "ops": []}]"#)
        }
        // A failure inside an element is placed in the document, through nested forEach too.
        #expect(throws: MigrationError(step: "1→2", operation: "assert", path: try JSONPointer(parsing: "/m/k/list/1/x"), message: "found 2, expected 1")) {
            try Self.migrate(#"{"m": {"k": {"list": [{"x": 1}, {"x": 2}]}}}"#, #"""
                [{"op": "forEach", "path": "/m", "ops": [{"op": "forEach", "path": "/list", "ops": [{"op": "assert", "path": "/x", "equals": 1}]}]}]
                """#)
        }
        // A $ref names the document's own pointer, and fails at the place it was to set.
        #expect(throws: MigrationError(step: "1→2", operation: "set", path: try JSONPointer(parsing: "/list/0/y"), message: "no value at /config/x for $ref, expected one")) {
            try Self.migrate(#"{"list": [{"x": 1}]}"#, #"[{"op": "forEach", "path": "/list", "ops": [{"op": "set", "path": "/y", "value": {"$ref": "/config/x"}}]}]"#)
        }
    }

    /// Each step of a `$lookup` or `$rel` that finds nothing is named in words, at the place
    /// the value was to be set.
    @Test func aValueThatIsNotThereSaysWhichStepFoundNothing() throws {
        func failure(_ document: String, _ value: String) -> String? {
            do {
                _ = try Self.migrate(document, #"[{"op": "forEach", "path": "/list", "ops": [{"op": "set", "path": "/y", "value": "# + value + "}]}]")
                return nil
            } catch let error as MigrationError {
                return "\(error.path) \(error.message)"
            } catch {
                return "\(error)"
            }
        }
        let cases: [(String, String, String)] = [
            (#"{"list": [{"k": "a"}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}]}"#, "/list/0/y no dictionary at /map for $lookup, expected one"),
            (#"{"map": 1, "list": [{"k": "a"}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}]}"#, "/list/0/y no dictionary at /map for $lookup, expected one"),
            (#"{"map": {"2": 1}, "list": [{"k": true}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}]}"#, "/list/0/y a $lookup key that is a bool, expected a string"),
            (#"{"map": {"a": 1}, "list": [{"j": "a"}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}]}"#, "/list/0/k no value for $rel in this element, expected one"),
            (#"{"map": {"a": 1}, "list": [{"j": "a"}]}"#, #"{"$lookup": ["/map", {"$ref": "/key"}]}"#, "/list/0/y no value at /key for $ref, expected one"),
            (#"{"map": {"a": 1}, "list": [{"k": "b"}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}]}"#, #"/list/0/y no entry "b" in /map for $lookup, expected one (or a default as its third element)"#),
        ]
        for (document, value, expected) in cases {
            #expect(failure(document, value) == expected, "\(document) \(value)")
        }
        // Found, the same steps give the value, the default included.
        #expect(failure(#"{"map": {"2": 1}, "list": [{"k": 2}, {"k": 3}]}"#, #"{"$lookup": ["/map", {"$rel": "/k"}, 0]}"#) == nil)
        // A default of null is a default: the missing entry gives null.
        let withNullDefault = try Self.migrate(#"{"map": {}, "list": [{"k": "b"}]}"#, #"[{"op": "forEach", "path": "/list", "ops": [{"op": "set", "path": "/y", "value": {"$lookup": ["/map", {"$rel": "/k"}, null]}}]}]"#)
        #expect(try Codecs.compactJSON(withNullDefault) == #"{"map":{},"list":[{"k":"b","y":null}]}"#)
    }

    /// `keysIn` reads values by walking a pattern once (``MigrationEngine/values(matching:in:)``):
    /// the same values, in the same order, as expanding the pattern to pointers and reading each.
    @Test func valuesMatchingAPatternAreWhatItsPointersHold() throws {
        let document = try Codecs.value(#"""
            {"players": [{"name": "Ana", "tags": ["a", "b"]}, {"name": "Besa"}, "Zoë", 7, {"name": 3}],
             "scores": {"Ana": 3, "Besa": {"name": "inner"}, "0": "zero"}, "list": [[1, 2], [], [{"name": "x"}]],
             "": {"": "empty key"}, "n": null}
            """#)
        let patterns = [
            "", "/*", "/*/*", "/*/*/*", "/players/*/name", "/players/*", "/players/0/tags/*", "/players/1", "/players/-",
            "/players/01", "/players/9", "/scores/*", "/scores/0", "/scores/*/name", "/list/*/*", "/list/*/0/name", "/missing/*",
            "/n/*", "/", "//", "/*/name", "/players/*/tags/1",
        ]
        var nonEmpty = 0
        for text in patterns {
            let pattern = try JSONPointer(parsing: text)
            let walked = MigrationEngine.values(matching: pattern, in: document)
            let expanded = MigrationEngine.expand(pattern, in: document).compactMap { document.value(at: $0.0) }
            #expect(walked == expanded, "\(text)")
            if !walked.isEmpty { nonEmpty += 1 }
        }
        #expect(nonEmpty >= 15, "\(nonEmpty)")
    }

    @Test func wildcardsMatchEveryElementAndKey() throws {
        let value = try Self.migrate(#"{"players": [{"pts": 1}, {"pts": 2}], "kingdoms": {"A": {"gold": 1}, "B": {"gold": 2}}}"#, #"""
            [{"op": "rename", "from": "/players/*/pts", "to": "/players/*/score"},
             {"op": "convert", "path": "/kingdoms/*/gold", "to": "real"}]
            """#)
        #expect(try Codecs.compactJSON(value) == #"{"players":[{"score":1},{"score":2}],"kingdoms":{"A":{"gold":1.0},"B":{"gold":2.0}}}"#)
    }

    @Test func aMissingRenameSourceIsAnErrorOnlyWhenRequired() throws {
        let renamed = try Self.migrate(#"{"a": 1}"#, #"[{"op": "rename", "from": "/missing", "to": "/b"}]"#)
        #expect(renamed == ["a": 1])
        #expect(throws: MigrationError(step: "1→2", operation: "rename", path: JSONPointer(tokens: ["missing"]), message: "the field is missing, and the version migrated from requires it")) {
            try Self.migrate(#"{"a": 1}"#, #"[{"op": "rename", "from": "/missing", "to": "/b"}]"#, required: ["/missing"])
        }
    }

    @Test func arrayToMapAndBack() throws {
        let map = try Self.migrate(#"{"k": [{"name": "Arbëria", "gold": 1}, {"name": "Dardania", "gold": 2}]}"#, #"[{"op": "arrayToMap", "path": "/k", "keyField": "name"}]"#)
        #expect(try Codecs.compactJSON(map) == #"{"k":{"Arbëria":{"gold":1},"Dardania":{"gold":2}}}"#)
        var back = map
        try MigrationEngine().apply(try Self.ops(#"[{"op": "mapToArray", "path": "/k", "keyField": "name"}]"#), to: &back, step: "2→1")
        #expect(try Codecs.compactJSON(back) == #"{"k":[{"name":"Arbëria","gold":1},{"name":"Dardania","gold":2}]}"#)
        #expect(throws: MigrationError.self) {
            try Self.migrate(#"{"k": [{"name": "A"}, {"name": "A"}]}"#, #"[{"op": "arrayToMap", "path": "/k", "keyField": "name"}]"#)
        }
    }

    @Test func conversions() throws {
        let value = try Self.migrate(#"{"saved": 785923200.25, "played": "2026-11-21T08:00:00Z", "n": "42", "ms": 1763712000000, "flag": 1}"#, #"""
            [{"op": "convert", "path": "/saved", "to": "date", "from": "appleReference"},
             {"op": "convert", "path": "/played", "to": "date"},
             {"op": "convert", "path": "/n", "to": "integer"},
             {"op": "convert", "path": "/ms", "to": "date", "from": "unixMillis"},
             {"op": "convert", "path": "/flag", "to": "bool"},
             {"op": "convert", "path": "/missing", "to": "string"}]
            """#)
        #expect(value["saved"] == .date(Date(timeIntervalSinceReferenceDate: 785_923_200.25)))
        #expect(value["played"] == .date(RFC3339.parse("2026-11-21T08:00:00Z")!))
        #expect(value["n"] == 42 && value["flag"] == true)
        #expect(value["ms"] == .date(Date(timeIntervalSince1970: 1_763_712_000)))
        #expect(throws: MigrationError.self) { try Self.migrate(#"{"x": 1.5}"#, #"[{"op": "convert", "path": "/x", "to": "integer"}]"#) }
    }

    @Test func copyWrapUnwrapRemoveAssertAndReferences() throws {
        let value = try Self.migrate(#"{"a": {"v": 1}, "b": 2, "c": 3}"#, #"""
            [{"op": "copy", "from": "/b", "to": "/b2"},
             {"op": "unwrap", "path": "/a", "key": "v"},
             {"op": "wrap", "path": "/c", "key": "value"},
             {"op": "set", "path": "/d", "value": {"$ref": "/b2"}},
             {"op": "remove", "path": "/b"},
             {"op": "assert", "path": "/a", "equals": 1},
             {"op": "assert", "path": "/c", "type": "dictionary"}]
            """#)
        #expect(try Codecs.compactJSON(value) == #"{"a":1,"c":{"value":3},"b2":2,"d":2}"#)
        #expect(throws: MigrationError.self) { try Self.migrate(#"{"a": 1}"#, #"[{"op": "assert", "path": "/a", "equals": 2}]"#) }
    }

    @Test func aFailedStepLeavesTheDocumentUntouched() throws {
        var value = try Codecs.value(#"{"a": 1, "b": "x"}"#)
        let original = value
        #expect(throws: MigrationError.self) {
            try MigrationEngine().apply(try Self.ops(#"[{"op": "rename", "from": "/a", "to": "/z"}, {"op": "convert", "path": "/b", "to": "integer"}]"#), to: &value, step: "1→2")
        }
        #expect(value == original)
    }

    @Test func plansAndTheirErrors() throws {
        let plan = try MigrationPlan(parsing: try Codecs.value(#"""
            {"format": "savetool.migrations/1", "kind": "kape.tournament",
             "steps": [{"from": 1, "to": 2, "ops": []}, {"from": 2, "to": 3, "ops": [{"op": "remove", "path": "/x"}]}]}
            """#))
        #expect(plan.steps(from: 1, to: 3)?.map(\.name) == ["1→2", "2→3"])
        #expect(plan.steps(from: 3, to: 3)?.isEmpty == true)
        #expect(plan.steps(from: 0, to: 3) == nil)
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "0", "ops", "1"]), message: "unknown operation \"explode\", expected rename, move, copy, set, remove, convert, wrap, unwrap, forEach, arrayToMap, mapToArray, assert or if")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 2, "ops": [{"op": "remove", "path": "/a"}, {"op": "explode"}]}]}"#))
        }
        // A misspelt key is named as the unknown key it is, not as the right one missing.
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "0", "ops", "0", "too"]), message: "an unknown key for rename, expected one of op, from, to")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 2, "ops": [{"op": "rename", "from": "/a", "too": "/b"}]}]}"#))
        }
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "0", "ops", "0", "to"]), message: "/items/0 is inside /items, expected a place outside the value it moves")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 2, "ops": [{"op": "rename", "from": "/items", "to": "/items/0"}]}]}"#))
        }
        // A shortcut beside the steps it skips would never run: refused, naming both.
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "2"]), message: "a step from version 1 to 3 that never runs: /steps/0, from 1 to 2, is listed first and leads there too, expected a shortcut listed before the steps it skips")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 2, "ops": []}, {"from": 2, "to": 3, "ops": []}, {"from": 1, "to": 3, "ops": []}]}"#))
        }
        // Listed first, a shortcut runs to its version, and the step it skips to an earlier one.
        let shortcut = try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 3, "ops": []}, {"from": 1, "to": 2, "ops": []}, {"from": 2, "to": 3, "ops": []}]}"#))
        #expect(shortcut.steps(from: 1, to: 3)?.map(\.name) == ["1→3"] && shortcut.steps(from: 1, to: 2)?.map(\.name) == ["1→2"])
        // A shortcut whose end leads nowhere further gives way to the steps that do.
        let deadEnd = try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 3, "ops": []}, {"from": 1, "to": 2, "ops": []}, {"from": 2, "to": 4, "ops": []}]}"#))
        #expect(deadEnd.steps(from: 1, to: 4)?.map(\.name) == ["1→2", "2→4"] && deadEnd.steps(from: 1, to: 3)?.map(\.name) == ["1→3"])
        // A step after one that leads nowhere further is no dead step: it is taken where that one ends.
        let detour = try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 1, "to": 2, "ops": []}, {"from": 1, "to": 3, "ops": []}, {"from": 3, "to": 4, "ops": []}]}"#))
        #expect(detour.steps(from: 1, to: 4)?.map(\.name) == ["1→3", "3→4"] && detour.steps(from: 1, to: 2)?.map(\.name) == ["1→2"])
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "0"]), message: "\"from\" 3 and \"to\" 2, expected \"to\" above \"from\" (a step goes to a later version)")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": 3, "to": 2, "ops": []}]}"#))
        }
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["steps", "0"]), message: "\"from\" \"1\", \"to\" missing, expected integer \"from\" and \"to\" versions, \"to\" above \"from\"")) {
            try MigrationPlan(parsing: try Codecs.value(#"{"format": "savetool.migrations/1", "kind": "k", "steps": [{"from": "1", "ops": []}]}"#))
        }
    }

    @Test func ifRunsThenOrElseByTheCondition() throws {
        let ops = #"""
            [{"op": "if", "when": {"compare": ["/round", ">=", {"$ref": "/totalRounds"}]},
              "then": [{"op": "set", "path": "/status", "value": "finished"}],
              "else": [{"op": "set", "path": "/status", "value": "playing"}]}]
            """#
        #expect(try Self.migrate(#"{"round": 5, "totalRounds": 5}"#, ops)["status"] == "finished")
        #expect(try Self.migrate(#"{"round": 6, "totalRounds": 5}"#, ops)["status"] == "finished")
        #expect(try Self.migrate(#"{"round": 4, "totalRounds": 5}"#, ops)["status"] == "playing")
        #expect(try Self.migrate(#"{"round": 4}"#, ops)["status"] == "playing", "an optional field that is absent never compares")
        #expect(try Self.migrate(#"{"round": 4, "totalRounds": "five"}"#, ops)["status"] == "playing", "only numbers compare")
        #expect(try Self.migrate(#"{"round": 2.5, "totalRounds": 2}"#, ops)["status"] == "finished", "integers and reals compare as numbers")
        // No else: nothing happens when the condition fails.
        let onlyThen = #"[{"op": "if", "when": {"equals": ["/a", 1]}, "then": [{"op": "remove", "path": "/b"}]}]"#
        #expect(try Codecs.compactJSON(Self.migrate(#"{"a": 2, "b": 3}"#, onlyThen)) == #"{"a":2,"b":3}"#)
        #expect(try Codecs.compactJSON(Self.migrate(#"{"a": 1, "b": 3}"#, onlyThen)) == #"{"a":1}"#)
    }

    @Test func ifInsideForEachTestsEachElement() throws {
        let value = try Self.migrate(#"{"max": 10, "games": [{"score": 12}, {"score": 3}, {"name": "x"}]}"#, #"""
            [{"op": "forEach", "path": "/games", "ops": [
                {"op": "if", "when": {"all": [{"has": "/score"}, {"not": {"compare": ["/score", "<", {"$ref": "/max"}]}}]},
                 "then": [{"op": "set", "path": "/capped", "value": true}]},
                {"op": "if", "when": {"any": [{"missing": "/score"}, {"type": ["/score", "string"]}]},
                 "then": [{"op": "set", "path": "/score", "value": 0}]}]}]
            """#)
        #expect(try Codecs.compactJSON(value) == #"{"max":10,"games":[{"score":12,"capped":true},{"score":3},{"name":"x","score":0}]}"#)
    }

    @Test func conditionsAndIfAreCheckedWhenParsed() throws {
        func parseError(_ ops: String) -> String? {
            do { _ = try Self.ops(ops); return nil } catch { return "\(error)" }
        }
        #expect(parseError(#"[{"op": "if", "then": []}]"#) == #"/steps/0/ops/0: no "when", expected the condition"#)
        #expect(parseError(#"[{"op": "if", "when": {"has": "/a"}}]"#) == #"/steps/0/ops/0: no "then", expected the operations to run when the condition holds"#)
        #expect(parseError(#"[{"op": "if", "when": {"has": "/a"}, "then": [], "else": 3}]"#) == #"/steps/0/ops/0/else: found an integer, expected an array of operations"#)
        #expect(parseError(#"[{"op": "if", "when": {"compare": ["/a", "=>", 1]}, "then": []}]"#)?.hasPrefix(#"/steps/0/ops/0/when: found ["/a","=>",1], expected {"compare": ["/pointer", one of < <= > >= == !=, value]}"#) == true)
        #expect(parseError(#"[{"op": "if", "when": {"all": [{"has": "/a"}, {"bogus": 1}]}, "then": []}]"#)?.hasPrefix(#"/steps/0/ops/0/when/all/1: unknown condition "bogus""#) == true)
        #expect(parseError(#"[{"op": "if", "when": {"has": "/a"}, "then": [{"op": "explode"}]}]"#)?.hasPrefix(#"/steps/0/ops/0/then/0: unknown operation "explode""#) == true)
    }
}
