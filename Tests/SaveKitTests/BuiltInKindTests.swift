import Foundation
import SaveKit
import TestSupport
import Testing

/// Every version step of every kind in `Formats/`, each from a document written the way that
/// version of the app wrote it to the exact document the next version expects.
@Suite("Built-in kinds, step by step")
struct BuiltInKindTests {
    static let migrator = Migrator(kinds: (try? KindLoader.kinds(in: Corpus.packageRoot.appendingPathComponent("Formats").path)) ?? [])

    /// Migrates `json` (typed JSON) of `kind` to `version` and returns it as compact typed JSON.
    static func step(_ kind: String, _ json: String, to version: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let outcome = migrator.migrate(try Codecs.value(json), kind: kind, to: version)
        guard case .migrated(_, _, let reached, _, let value) = outcome, reached == version else {
            Issue.record("expected a migration to version \(version), got \(outcome)", sourceLocation: sourceLocation)
            return ""
        }
        let found = migrator.kinds.first { $0.name == kind }
        #expect(found?.schemas[version]?.violations(of: value) == [], "the result fits the schema of version \(version)", sourceLocation: sourceLocation)
        return try Codecs.compactJSON(value)
    }

    /// The outcome of migrating a document that must not migrate.
    static func refusal(_ kind: String, _ json: String) throws -> Migrator.Outcome {
        migrator.migrate(try Codecs.value(json), kind: kind)
    }

    @Test func everyFormatsFolderLoads() {
        #expect(Self.migrator.kinds.map(\.name) == ["blocks.defaults", "blocks.gamesave", "kape.tournament", "kingdom.player", "kingdom.state", "sudoku.game"])
        for kind in Self.migrator.kinds {
            #expect(kind.schemas[kind.currentVersion] != nil, "\(kind.name) has a schema for its current version")
            if kind.currentVersion > 1 {
                #expect(kind.migrations?.steps(from: 1, to: kind.currentVersion) != nil, "\(kind.name) has steps from 1 to \(kind.currentVersion)")
            }
        }
    }

    // MARK: - kape.tournament

    @Test func kapeOneToTwoGroupsPlayersWithTheirScores() throws {
        #expect(try Self.step("kape.tournament", #"""
            {"players": ["Ana", "Besa", "Zoë 🎉"], "scores": {"Ana": 3, "Besa": 5}, "roundIndex": 2, "currentPlayerIndex": 1, "deckId": "classic", "usedCardIds": [1]}
            """#, to: 2) == #"{"players":[{"name":"Ana","score":3},{"name":"Besa","score":5},{"name":"Zoë 🎉","score":0}],"roundIndex":2,"currentPlayerIndex":1,"deckId":"classic","usedCardIds":[1],"schemaVersion":2}"#)
        #expect(try Self.step("kape.tournament", #"{"players": [], "scores": {}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "party"}"#, to: 2)
            == #"{"players":[],"roundIndex":0,"currentPlayerIndex":0,"deckId":"party","schemaVersion":2}"#)
    }

    @Test func kapeOneToTwoRefusesAScoreForNoPlayer() throws {
        let outcome = try Self.refusal("kape.tournament", #"{"players": ["Ana"], "scores": {"Ana": 1, "Ghost": 9}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "x"}"#)
        guard case .failed(_, 1, let error) = outcome else { Issue.record("expected a failure, got \(outcome)"); return }
        #expect(error.description == #"step 1→2, assert at /scores/Ghost: "Ghost" is not among the values at /players/*, expected only those keys"#)
    }

    @Test func kapeTwoToThreeRenamesInPlaceAndSetsTheStatus() throws {
        #expect(try Self.step("kape.tournament", #"""
            {"schemaVersion": 2, "players": [{"name": "Ana", "score": 3}], "roundIndex": 2, "currentPlayerIndex": 1, "deckId": "classic"}
            """#, to: 3) == #"{"schemaVersion":3,"players":[{"name":"Ana","score":3}],"round":2,"activePlayerIndex":1,"deckId":"classic","status":"playing"}"#)
        // round ≥ totalRounds: finished; below it, or with no totalRounds: playing.
        #expect(try Self.step("kape.tournament", #"""
            {"schemaVersion": 2, "players": [], "roundIndex": 10, "totalRounds": 10, "currentPlayerIndex": 0, "deckId": "classic"}
            """#, to: 3) == #"{"schemaVersion":3,"players":[],"round":10,"totalRounds":10,"activePlayerIndex":0,"deckId":"classic","status":"finished"}"#)
        #expect(try Self.step("kape.tournament", #"""
            {"schemaVersion": 2, "players": [], "roundIndex": 9, "totalRounds": 10, "currentPlayerIndex": 0, "deckId": "classic"}
            """#, to: 3).hasSuffix(#""status":"playing"}"#))
    }

    @Test func kapeOneToThreeInOneRun() throws {
        let outcome = Self.migrator.migrate(try Codecs.value(#"""
            {"players": ["Érion", "Ola 🌶️"], "scores": {"Ola 🌶️": 11}, "roundIndex": 8, "totalRounds": 8, "currentPlayerIndex": 1, "deckId": "spicy"}
            """#))
        guard case .migrated("kape.tournament", 1, 3, let steps, let value) = outcome else { Issue.record("\(outcome)"); return }
        #expect(steps == ["1→2", "2→3"])
        #expect(try Codecs.compactJSON(value) == #"{"players":[{"name":"Érion","score":0},{"name":"Ola 🌶️","score":11}],"round":8,"totalRounds":8,"activePlayerIndex":1,"deckId":"spicy","schemaVersion":3,"status":"finished"}"#)
    }

    // MARK: - sudoku.game

    @Test func sudokuOneToTwo() throws {
        #expect(try Self.step("sudoku.game", #"""
            {"puzzleId": "daily", "board": "530070000", "notes": {"2": [1, 2]}, "seconds": 312, "completed": false}
            """#, to: 2) == #"{"puzzleId":"daily","board":"530070000","pencilMarks":{"2":[1,2]},"completed":false,"timer":{"elapsedSeconds":312,"paused":false},"version":2}"#)
        #expect(try Self.step("sudoku.game", #"""
            {"puzzleId": "classic-117", "board": "539979999", "notes": {}, "seconds": 1804, "completed": true, "completedAt": 731842335.5}
            """#, to: 2) == #"{"puzzleId":"classic-117","board":"539979999","pencilMarks":{},"completed":true,"completedAt":"2024-03-11T09:32:15.5Z","timer":{"elapsedSeconds":1804,"paused":true},"version":2}"#)
    }

    // MARK: - blocks.gamesave and blocks.defaults

    @Test func blocksGameSaveOneToTwo() throws {
        #expect(try Self.step("blocks.gamesave", #"""
            {"playerLevel": 14, "currentXP": 2380, "coinBalance": 1275, "unlockedThemes": ["classic", "🎃 Halloween"],
             "levelProgress": {"1": {"stars": 3, "bestScore": 1820, "completed": true}}, "achievements": [],
             "settings": {"theme": "neon"}, "lastSaved": 785923200.25, "lastPlayed": 785919600.0}
            """#, to: 2) == #"{"coins":1275,"unlockedThemes":["classic","🎃 Halloween"],"levelProgress":{"1":{"stars":3,"bestScore":1820,"completed":true}},"achievements":[],"settings":{"theme":"neon"},"lastSaved":"2025-11-27T08:00:00.25Z","lastPlayed":"2025-11-27T07:00:00Z","player":{"level":14,"xp":2380},"saveVersion":2}"#)
    }

    @Test func blocksDefaultsMigrateTheGameSaveInside() throws {
        let gameSave = #"{"playerLevel":1,"currentXP":0,"coinBalance":50,"unlockedThemes":["classic"],"lastSaved":757382400.0}"#
        let defaults = SaveValue.dictionary(["gameSave": .data(Data(gameSave.utf8)), "launchCount": 1])
        let outcome = Self.migrator.migrate(defaults, registry: .builtIn)
        guard case .migrated("blocks.defaults", 1, 1, let steps, let value) = outcome else { Issue.record("\(outcome)"); return }
        #expect(steps == ["/gameSave: blocks.gamesave 1→2"])
        guard case .data(let bytes)? = value["gameSave"] else { Issue.record("gameSave is no longer data"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"coins":50,"unlockedThemes":["classic"],"lastSaved":"2025-01-01T00:00:00Z","player":{"level":1,"xp":0},"saveVersion":2}"#,
                "still compact JSON, as the app wrote it")
        #expect(value["launchCount"] == 1)
    }

    // MARK: - kingdom.player and kingdom.state

    @Test func kingdomPlayerOneToTwo() throws {
        #expect(try Self.step("kingdom.player", #"""
            {"player_id": "6F9619FF", "player_name": "Zoë 🏰", "gold": 0, "level": 23, "xp": 120400,
             "reputation": {"Ilyria": 100, "Çamëria": 50, "Epiri": 49, "Mokra": 0, "Dardania": -1},
             "cooldowns": {"raid": 1748887230, "heal": 1748886300.5}, "mapZoom": 14.5}
            """#, to: 2) == #"{"player_id":"6F9619FF","player_name":"Zoë 🏰","gold":0,"level":23,"xp":120400,"reputation":{"Ilyria":{"score":100,"standing":"honored"},"Çamëria":{"score":50,"standing":"honored"},"Epiri":{"score":49,"standing":"neutral"},"Mokra":{"score":0,"standing":"neutral"},"Dardania":{"score":-1,"standing":"hostile"}},"cooldowns":{"raid":{"$date":"2025-06-02T18:00:30Z"},"heal":{"$date":"2025-06-02T17:45:00.5Z"}},"mapZoom":14.5,"defaults_version":2}"#)
        #expect(try Self.step("kingdom.player", #"""
            {"player_id": "0B1E", "player_name": "Ilir", "gold": 100, "level": 1, "xp": 0, "reputation": {}, "cooldowns": {}}
            """#, to: 2) == #"{"player_id":"0B1E","player_name":"Ilir","gold":100,"level":1,"xp":0,"reputation":{},"cooldowns":{},"defaults_version":2}"#)
    }

    @Test func kingdomPlayerOneRefusesAReputationOutOfRange() throws {
        let outcome = try Self.refusal("kingdom.player", #"""
            {"player_id": "x", "player_name": "x", "gold": 1, "level": 1, "xp": 0, "reputation": {"Mokra": 140}, "cooldowns": {}}
            """#)
        guard case .invalid("kingdom.player", 1, let violations) = outcome else { Issue.record("\(outcome)"); return }
        #expect(violations.map(\.description) == ["/reputation/Mokra: 140 is above the maximum 100"])
    }

    @Test func kingdomStateOneToTwo() throws {
        #expect(try Self.step("kingdom.state", #"""
            {"kingdoms": {
               "Arbëria": {"ruler": "Gjergj", "buildings": {"castle": 3, "farm": 5}, "treasury": 1450,
                           "contracts": [{"with": "Dardania", "goods": "grain", "until": 1796083200}]},
               "Mokra": {"ruler": "Ilir", "buildings": {}, "treasury": 0, "contracts": []}},
             "savedAt": 1756900800}
            """#, to: 2) == #"{"kingdoms":{"Arbëria":{"ruler":"Gjergj","buildings":[{"type":"castle","level":3},{"type":"farm","level":5}],"treasury":{"gold":1450},"contracts":[{"with":"Dardania","goods":"grain","until":"2026-12-01T00:00:00Z"}]},"Mokra":{"ruler":"Ilir","buildings":[],"treasury":{"gold":0},"contracts":[]}},"savedAt":"2025-09-03T12:00:00Z","stateVersion":2}"#)
    }

    @Test func kingdomDefaultsMigrateTheirStateInside() throws {
        let state = #"{"kingdoms":{"Mokra":{"ruler":"Ilir","buildings":{"castle":1},"treasury":5,"contracts":[]}},"savedAt":1736238600}"#
        let defaults = try Codecs.value(#"""
            {"player_id": "0B1E", "player_name": "Ilir", "gold": 100, "level": 1, "xp": 0, "reputation": {"Mokra": 3}, "cooldowns": {}}
            """#)
        var holder = defaults
        try holder.setValue(.data(Data(state.utf8)), at: JSONPointer(tokens: ["kingdoms_local_state"]))
        let outcome = Self.migrator.migrate(holder, registry: .builtIn)
        guard case .migrated("kingdom.player", 1, 2, let steps, let value) = outcome else { Issue.record("\(outcome)"); return }
        #expect(steps == ["1→2", "/kingdoms_local_state: kingdom.state 1→2"])
        guard case .data(let bytes)? = value["kingdoms_local_state"] else { Issue.record("the state is no longer data"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"kingdoms":{"Mokra":{"ruler":"Ilir","buildings":[{"type":"castle","level":1}],"treasury":{"gold":5},"contracts":[]}},"savedAt":"2025-01-07T08:30:00Z","stateVersion":2}"#)
    }

    @Test func anEmbeddedStateFromTheFutureLeavesTheWholeFileAlone() throws {
        var holder = try Codecs.value(#"""
            {"defaults_version": 2, "player_id": "0B1E", "player_name": "Ilir", "gold": 1, "level": 1, "xp": 0, "reputation": {}, "cooldowns": {}}
            """#)
        try holder.setValue(.data(Data(#"{"stateVersion": 3, "kingdoms": {}}"#.utf8)), at: JSONPointer(tokens: ["kingdoms_local_state"]))
        let outcome = Self.migrator.migrate(holder, registry: .builtIn)
        guard case .future("kingdom.state", 3) = outcome else { Issue.record("\(outcome)"); return }
    }
}
