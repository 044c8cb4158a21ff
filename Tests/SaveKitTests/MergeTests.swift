import Foundation
import SaveKit
import TestSupport
import Testing

/// The merge engine on the built-in kinds' own merge.json: the traps that break naive merges,
/// and each policy's decisions.
@Suite("Merge")
struct MergeTests {
    static let kinds = (try? KindLoader.kinds(in: Corpus.packageRoot.appendingPathComponent("Formats").path)) ?? []

    static func merger(kind: String? = nil) throws -> SaveMerger {
        try SaveMerger(kinds: kinds, registry: .builtIn, kind: kind)
    }

    static func copy(_ json: String, _ name: String, path: String? = nil) -> SaveMerger.Copy {
        SaveMerger.Copy(bytes: Array(json.utf8), path: path, name: name)
    }

    /// Merges typed JSON documents as `kind`; returns the result as a value.
    static func merge(_ kind: String, base: String?, local: String, remote: String) throws -> (value: SaveValue, result: SaveMerger.Result) {
        let result = try merger(kind: kind).merge(
            base: base.map { copy($0, "base.json") }, local: copy(local, "local.json"), remote: copy(remote, "remote.json"))
        return (try Codecs.json.decode(result.output), result)
    }

    @Test func everyBuiltInKindHasMergeRules() {
        #expect(Self.kinds.count == 6)
        for kind in Self.kinds { #expect(kind.merge != nil, "\(kind.name) has a merge.json") }
    }

    // MARK: - The five traps

    /// A counter without a base is never summed and never silently maxed: coins are a conflict,
    /// and statistics take their stated fallback (the larger).
    @Test func counterWithoutBaseIsAConflictOrItsStatedFallback() throws {
        let local = #"{"saveVersion": 2, "player": {"level": 3, "xp": 10}, "coins": 120, "unlockedThemes": [], "statistics": {"gamesPlayed": 40}, "lastSaved": "2026-11-20T10:00:00Z"}"#
        let remote = #"{"saveVersion": 2, "player": {"level": 3, "xp": 10}, "coins": 90, "unlockedThemes": [], "statistics": {"gamesPlayed": 55}, "lastSaved": "2026-11-20T10:00:00Z"}"#
        let (value, result) = try Self.merge("blocks.gamesave", base: nil, local: local, remote: remote)
        #expect(result.conflicts.map(\.path.description) == ["/coins"])
        #expect(result.conflicts.first?.why.contains("without a base") == true)
        #expect(value["statistics"]?["gamesPlayed"] == 55, "the noBase fallback: the larger count, not 95")
        // With a base the same counter is the base plus both changes.
        let base = local.replacingOccurrences(of: #""coins": 120"#, with: #""coins": 100"#).replacingOccurrences(of: #""gamesPlayed": 40"#, with: #""gamesPlayed": 30"#)
        let (merged, withBase) = try Self.merge("blocks.gamesave", base: base, local: local, remote: remote)
        #expect(withBase.conflicts.isEmpty)
        #expect(merged["coins"] == 110, "100 + 20 − 10")
        #expect(merged["statistics"]?["gamesPlayed"] == 65, "30 + 10 + 25")
    }

    /// Two devices that each earned the same from the base hold equal counters: both changes
    /// count (a counter is the base plus both sides' changes), whereas an equal value under any
    /// other rule is one change, taken once. Found by the sync server's 32-device test.
    @Test func theSameChangeToACounterOnBothSidesCountsTwice() throws {
        let base = #"{"saveVersion": 2, "player": {"level": 3, "xp": 10}, "coins": 100, "unlockedThemes": ["a"], "statistics": {"gamesPlayed": 30}, "lastSaved": "2026-11-20T10:00:00Z"}"#
        let both = base.replacingOccurrences(of: #""coins": 100"#, with: #""coins": 110"#).replacingOccurrences(of: #"["a"]"#, with: #"["a", "b"]"#)
        // Equal copies, byte for byte, and equal counters inside copies that differ elsewhere.
        for (local, remote) in [(both, both), (both, both.replacingOccurrences(of: #""gamesPlayed": 30"#, with: #""gamesPlayed": 31"#))] {
            let (value, result) = try Self.merge("blocks.gamesave", base: base, local: local, remote: remote)
            #expect(result.conflicts.isEmpty)
            #expect(value["coins"] == 120, "100 + 10 + 10")
            #expect(value["unlockedThemes"] == ["a", "b"], "a union: the same unlock once")
        }
        let (unchanged, _) = try Self.merge("blocks.gamesave", base: base, local: base, remote: base)
        #expect(unchanged["coins"] == 100)
    }

    /// Buildings reordered on one device and upgraded on the other: the upgrade is kept, in the
    /// new order, and no building is duplicated.
    @Test func keyedArrayReorderedOnOneSideAndEditedOnTheOther() throws {
        func state(_ buildings: String) -> String {
            #"{"stateVersion": 2, "savedAt": "2026-11-20T10:00:00Z", "kingdoms": {"Aurel": {"ruler": "Zoë", "treasury": {"gold": 50}, "contracts": [], "buildings": \#(buildings)}}}"#
        }
        let base = state(#"[{"type": "farm", "level": 1}, {"type": "mill", "level": 2}, {"type": "wall", "level": 1}]"#)
        let reordered = state(#"[{"type": "wall", "level": 1}, {"type": "farm", "level": 1}, {"type": "mill", "level": 2}]"#)
        let upgraded = state(#"[{"type": "farm", "level": 1}, {"type": "mill", "level": 3}, {"type": "wall", "level": 1}]"#)
        for (local, remote) in [(reordered, upgraded), (upgraded, reordered)] {
            let (value, result) = try Self.merge("kingdom.state", base: base, local: local, remote: remote)
            #expect(result.conflicts.isEmpty)
            let buildings = value["kingdoms"]?["Aurel"]?["buildings"]?.arrayValue ?? []
            #expect(buildings.compactMap { $0["type"]?.stringValue } == ["wall", "farm", "mill"], "the reordering is kept")
            #expect(buildings.first { $0["type"] == "mill" }?["level"] == 3, "the upgrade is kept")
        }
    }

    /// Each element of a keyed list is named by its place in the merged list: two elements never
    /// share a path (the third element of one side and of the other), and an element's path is
    /// its index in the result.
    @Test func rfc3339TimesCompareAsTheTimesTheySpell() throws {
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/lastSaved", "policy": "max"}, {"path": "/firstSeen", "policy": "min"}, {"path": "/name", "policy": "max"}]}"#))
        func save(_ last: String, _ first: String, _ name: String) throws -> SaveValue {
            try Codecs.value(#"{"lastSaved": "\#(last)", "firstSeen": "\#(first)", "name": "\#(name)"}"#)
        }
        let base = try save("2026-11-20T00:00:00Z", "2026-01-01T00:00:00Z", "a")
        // 11:00+02:00 is 09:00Z, before 10:00Z; 10:00:00Z is before 10:00:00.5Z. Text that is no
        // time still compares by its bytes.
        for (local, remote, later, earlier) in [
            ("2026-11-21T11:00:00+02:00", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00+02:00"),
            ("2026-11-21T10:00:00.5Z", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00.5Z", "2026-11-21T10:00:00Z"),
        ] {
            let outcome = ValueMerger(rules: rules).merge(base: base, local: try save(local, local, "b"), remote: try save(remote, remote, "c"))
            #expect(outcome.conflicts.isEmpty)
            #expect(outcome.value["lastSaved"]?.stringValue == later, "max of \(local) and \(remote)")
            #expect(outcome.value["firstSeen"]?.stringValue == earlier, "min of \(local) and \(remote)")
            #expect(outcome.value["name"]?.stringValue == "c")
        }
    }

    @Test func keyedElementsAreNamedByTheirPlaceInTheResult() throws {
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/inventory", "policy": "keyed", "key": "/id"}]}"#))
        func items(_ text: String) throws -> SaveValue { try Codecs.value(#"{"inventory": \#(text)}"#) }
        let base = try items(#"[{"id": "sword", "qty": 1}, {"id": "potion", "qty": 1}]"#)
        let local = try items(#"[{"id": "potion", "qty": 2}, {"id": "sword", "qty": 1}, {"id": "shield", "qty": 1}]"#)
        let remote = try items(#"[{"id": "sword", "qty": 2}, {"id": "potion", "qty": 1}, {"id": "bow", "qty": 1}]"#)
        let outcome = ValueMerger(rules: rules).merge(base: base, local: local, remote: remote)
        #expect(outcome.conflicts.isEmpty)
        let result = outcome.value["inventory"]?.arrayValue ?? []
        let paths = outcome.decisions.map(\.path.description)
        #expect(Set(paths).count == paths.count, "\(paths)")
        // Each decision's element sits at its path's index in the result (before the fix, the
        // bow and the shield were both /inventory/2, from their own sides' indices).
        let decided = Dictionary(outcome.decisions.map { ($0.path.description, $0.result) }, uniquingKeysWith: { first, _ in first })
        #expect(decided["/inventory/0/qty"] == 2 && decided["/inventory/2/qty"] == 2, "\(paths)")
        #expect(decided["/inventory/1"]??["id"] == "bow" && decided["/inventory/3"]??["id"] == "shield", "\(paths)")
        #expect(result.compactMap { $0["id"]?.stringValue } == ["potion", "bow", "sword", "shield"])
        #expect(result[0]["qty"] == 2 && result[2]["qty"] == 2, "both edits kept")
    }

    /// A level removed on one device and improved on the other is a conflict, not a silent
    /// deletion or resurrection.
    @Test func deleteAgainstEditIsAConflict() throws {
        func save(_ progress: String) -> String {
            #"{"saveVersion": 2, "player": {"level": 3, "xp": 10}, "coins": 5, "unlockedThemes": [], "levelProgress": \#(progress), "lastSaved": "2026-11-20T10:00:00Z"}"#
        }
        let base = save(#"{"1": {"stars": 1, "bestScore": 100, "completed": true}, "2": {"stars": 0, "bestScore": 0, "completed": false}}"#)
        let removed = save(#"{"1": {"stars": 1, "bestScore": 100, "completed": true}}"#)
        let edited = save(#"{"1": {"stars": 1, "bestScore": 100, "completed": true}, "2": {"stars": 2, "bestScore": 700, "completed": true}}"#)
        let (_, result) = try Self.merge("blocks.gamesave", base: base, local: edited, remote: removed)
        #expect(result.conflicts.map(\.path.description) == ["/levelProgress/2"])
        #expect(result.conflicts.first?.why == "removed on the remote side and changed on the local side")
        // Removed on one side and left alone on the other: removed.
        let (value, clean) = try Self.merge("blocks.gamesave", base: base, local: base, remote: removed)
        #expect(clean.conflicts.isEmpty)
        #expect(value["levelProgress"]?["2"] == nil)
    }

    /// A counter holding anything but a number on either side is a conflict: adding "abc"
    /// to coins has no answer, and must never be taken as 0 (it gave 30.0 from 40, 70 and "abc").
    @Test(arguments: [#""abc""#, "true", "null", #"{"a": 1}"#, #""100""#])
    func aCounterHoldingANonNumberIsAConflict(_ remote: String) throws {
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/coins", "policy": "counter"}]}"#))
        let outcome = ValueMerger(rules: rules).merge(
            base: try Codecs.value(#"{"coins": 40}"#), local: try Codecs.value(#"{"coins": 70}"#), remote: try Codecs.value(#"{"coins": \#(remote)}"#))
        #expect(outcome.conflicts.count == 1, "\(outcome.decisions)")
        #expect(outcome.value == (try Codecs.value(#"{"coins": 70}"#)))
    }

    /// A device whose clock runs hours ahead wins nothing by it: `latest` follows the clock
    /// stored in the save, and a sudoku in progress is judged by its timer, not by times.
    @Test func aSkewedWallClockDoesNotDecide() throws {
        // The rule of merge.json: `latest` on a save counter, with wall-clock times that lie.
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "", "policy": "latest", "clock": "/saveCount"}]}"#))
        let phone = try Codecs.value(#"{"saveCount": 41, "savedAt": "2026-11-20T23:50:00Z", "gold": 7}"#)
        let tablet = try Codecs.value(#"{"saveCount": 42, "savedAt": "2026-11-20T18:10:00Z", "gold": 9}"#)  // clock 5 h behind, saved later
        let base = try Codecs.value(#"{"saveCount": 40, "savedAt": "2026-11-20T17:00:00Z", "gold": 1}"#)
        let outcome = ValueMerger(rules: rules).merge(base: base, local: phone, remote: tablet)
        #expect(outcome.value == tablet)
        #expect(outcome.decisions.first?.why.contains("clock /saveCount is later (42 against 41)") == true)
        let tied = ValueMerger(rules: rules).merge(base: base, local: phone, remote: try Codecs.value(#"{"saveCount": 41, "savedAt": "2026-11-21T09:00:00Z", "gold": 3}"#))
        #expect(tied.conflicts.count == 1, "equal clocks are a conflict, whatever savedAt says")
        // The built-in sudoku: the copy played longer wins, though the other was saved "later".
        let played = #"{"version": 2, "puzzleId": "p", "board": "1", "timer": {"elapsedSeconds": 900, "paused": true}, "completed": false, "pencilMarks": {"3": [1]}}"#
        let skewed = #"{"version": 2, "puzzleId": "p", "board": "2", "timer": {"elapsedSeconds": 300, "paused": true}, "completed": false}"#
        let start = #"{"version": 2, "puzzleId": "p", "board": "0", "timer": {"elapsedSeconds": 100, "paused": true}, "completed": false}"#
        let (value, result) = try Self.merge("sudoku.game", base: start, local: skewed, remote: played)
        #expect(result.conflicts.isEmpty)
        #expect(value == (try Codecs.value(played)), "the remote copy, pencil marks included")
    }

    /// A completed game against a later copy still in progress: the completed one whole, and no
    /// field of the other (pencil marks, its timer) leaks in.
    @Test func aCompletedSudokuWinsWhole() throws {
        let base = #"{"version": 2, "puzzleId": "daily", "board": "500", "timer": {"elapsedSeconds": 60, "paused": false}, "completed": false}"#
        let completed = #"{"version": 2, "puzzleId": "daily", "board": "534", "timer": {"elapsedSeconds": 400, "paused": true}, "completed": true, "completedAt": "2026-11-20T08:00:00Z"}"#
        let later = #"{"version": 2, "puzzleId": "daily", "board": "530", "timer": {"elapsedSeconds": 9000, "paused": false}, "completed": false, "pencilMarks": {"7": [2, 4]}}"#
        for (local, remote) in [(later, completed), (completed, later)] {
            for base in [base, nil] {
                let (value, result) = try Self.merge("sudoku.game", base: base, local: local, remote: remote)
                #expect(result.conflicts.isEmpty)
                #expect(value == (try Codecs.value(completed)))
                #expect(value["pencilMarks"] == nil)
            }
        }
    }

    /// Two different puzzles in the one slot (the tablet moved on to another while the phone
    /// kept playing the daily one): a conflict, where the completed one used to win and the
    /// other puzzle's progress was dropped without a word.
    @Test func twoDifferentSudokusAreAConflict() throws {
        let base = #"{"version": 2, "puzzleId": "daily", "board": "500", "timer": {"elapsedSeconds": 60, "paused": false}, "completed": false}"#
        let daily = #"{"version": 2, "puzzleId": "daily", "board": "530", "timer": {"elapsedSeconds": 4021, "paused": true}, "completed": false}"#
        let expert = #"{"version": 2, "puzzleId": "expert-3", "board": "534", "timer": {"elapsedSeconds": 400, "paused": true}, "completed": true}"#
        for (local, remote) in [(daily, expert), (expert, daily)] {
            for base in [base, nil] {
                let (_, result) = try Self.merge("sudoku.game", base: base, local: local, remote: remote)
                #expect(result.conflicts.count == 1, "\(result.decisions)")
                #expect(result.conflicts.first?.why.hasPrefix("two different /puzzleId (local ") == true, "\(result.decisions)")
            }
        }
        // 1 and 1.0 are one identity, and no identity on either side is no difference: the
        // criteria decide.
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "", "policy": "pickSide", "identity": "/id", "by": [{"max": "/t"}]}]}"#))
        for (local, remote) in [(#"{"id": 1, "t": 5}"#, #"{"id": 1.0, "t": 9}"#), (#"{"t": 5}"#, #"{"t": 9}"#)] {
            let outcome = ValueMerger(rules: rules).merge(base: nil, local: try Codecs.value(local), remote: try Codecs.value(remote))
            #expect(outcome.conflicts.isEmpty && outcome.value["t"] == 9, "\(outcome.decisions)")
        }
        let oneSided = ValueMerger(rules: rules).merge(base: nil, local: try Codecs.value(#"{"id": 1, "t": 5}"#), remote: try Codecs.value(#"{"t": 9}"#))
        #expect(oneSided.conflicts.count == 1, "an identity against none differs")
        // An identity given to a policy that does not take it is refused when the kind loads.
        #expect {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/a", "policy": "keyed", "key": "/id", "identity": "/id"}]}"#))
        } throws: { error in
            "\(error)".contains("/rules/0/identity: a parameter of pickSide, not of keyed, expected none here")
        }
    }

    // MARK: - Policies

    @Test func aGroupIsTakenWholeFromOneSide() throws {
        let save = { (level: Int, xp: Int) in #"{"saveVersion": 2, "player": {"level": \#(level), "xp": \#(xp)}, "coins": 0, "unlockedThemes": [], "lastSaved": "x"}"# }
        let (value, result) = try Self.merge("blocks.gamesave", base: save(5, 100), local: save(6, 10), remote: save(5, 900))
        #expect(value["player"] == ["level": 6, "xp": 10], "level 6 with its own XP, never level 6 with 900 XP")
        // Named by its first member: the object holding a group may be the whole file.
        #expect(result.decisions.contains { $0.policy == "lexMax" && $0.path.description == "/player/level" })
    }

    /// A group at the top of a file is named by its first member, never "" (the whole file): an
    /// answer for the group is told apart from one for a whole file's conflict.
    @Test func aGroupsConflictIsNamedByItsFirstMember() throws {
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/level", "/xp"], "policy": "lexMax"}]}"#))
        let (local, remote) = (try Codecs.value(#"{"level": 4, "xp": 1}"#), try Codecs.value(#"{"level": 4, "xp": "lots"}"#))
        let open = ValueMerger(rules: rules).merge(base: nil, local: local, remote: remote)
        #expect(open.conflicts.map(\.path.description) == ["/level"])
        let answered = ValueMerger(rules: rules) { conflict in
            conflict.path.description == "/level" ? (.value([4, 5]), "an answer") : nil
        }.merge(base: nil, local: local, remote: remote)
        #expect(answered.conflicts.isEmpty && answered.value == ["level": 4, "xp": 5])
        // An answer of another shape settles nothing, and the conflict says why.
        for wrong: SaveValue in [[4], [4, 5, 6], 4] {
            let refused = ValueMerger(rules: rules) { _ in (.value(wrong), "an answer") }.merge(base: nil, local: local, remote: remote)
            #expect(refused.conflicts.count == 1 && refused.value == local, "\(wrong)")
            #expect(refused.conflicts.first?.why.hasSuffix("expected an array of 2 values, one per member in the rule's order") == true, "\(refused.conflicts.first?.why ?? "")")
        }
        #expect(open.conflicts.first?.why.hasPrefix("the group /level, /xp cannot be ordered") == true)
        let whole = ValueMerger(rules: rules) { conflict in conflict.path.isRoot ? (.take(.remote), "an answer") : nil }
        #expect(whole.merge(base: nil, local: local, remote: remote).conflicts.count == 1, "an answer for the whole file settles no group")
    }

    @Test func unionKeepsEveryUnlock() throws {
        let save = { (themes: String) in #"{"saveVersion": 2, "player": {"level": 1, "xp": 0}, "coins": 0, "unlockedThemes": \#(themes), "lastSaved": "x"}"# }
        let (value, _) = try Self.merge("blocks.gamesave", base: save(#"["classic"]"#), local: save(#"["classic", "neon"]"#), remote: save(#"["classic", "ocean"]"#))
        #expect(value["unlockedThemes"] == ["classic", "neon", "ocean"])
    }

    @Test func aKingdomOnOneSideIsKeptAndAKnownOneKeepsItsLocalState() throws {
        func state(_ kingdoms: String) -> String { #"{"stateVersion": 2, "savedAt": "2026-11-20T10:00:00Z", "kingdoms": \#(kingdoms)}"# }
        let aurel = { (ruler: String) in #""Aurel": {"ruler": "\#(ruler)", "treasury": {"gold": 5}, "contracts": [], "buildings": []}"# }
        let local = state("{\(aurel("Zoë (local)"))}")
        let remote = state(#"{\#(aurel("Zoë (map data)")), "Brisa": {"ruler": "Ada", "treasury": {"gold": 1}, "contracts": [], "buildings": []}}"#)
        let (value, result) = try Self.merge("kingdom.state", base: nil, local: local, remote: remote)
        #expect(result.conflicts.isEmpty)
        #expect(value["kingdoms"]?["Aurel"]?["ruler"] == "Zoë (local)")
        #expect(value["kingdoms"]?["Brisa"]?["ruler"] == "Ada")
    }

    @Test func theTournamentFurtherAlongWinsWhole() throws {
        let tournament = { (round: Int, scores: [Int]) in
            #"{"schemaVersion": 3, "players": [\#(scores.enumerated().map { #"{"name": "P\#($0.offset)", "score": \#($0.element)}"# }.joined(separator: ", "))], "round": \#(round), "activePlayerIndex": 0, "status": "playing", "deckId": "classic"}"#
        }
        let (further, _) = try Self.merge("kape.tournament", base: nil, local: tournament(2, [9, 9]), remote: tournament(3, [0, 1]))
        #expect(further["round"] == 3)
        let (scored, _) = try Self.merge("kape.tournament", base: nil, local: tournament(3, [2, 2]), remote: tournament(3, [2, 3]))
        #expect(scored.value(at: try JSONPointer(parsing: "/players/1/score")) == 3)
    }

    /// Both sides are migrated to the current version first: a v1 tournament merges with a v3 one.
    @Test func sidesAreMigratedToOneVersionFirst() throws {
        let old = #"{"players": ["Ana"], "scores": {"Ana": 4}, "roundIndex": 4, "currentPlayerIndex": 0, "deckId": "classic"}"#
        let current = #"{"schemaVersion": 3, "players": [{"name": "Ana", "score": 1}], "round": 2, "activePlayerIndex": 0, "status": "playing", "deckId": "classic"}"#
        let (value, result) = try Self.merge("kape.tournament", base: nil, local: current, remote: old)
        #expect(result.conflicts.isEmpty)
        #expect(value["schemaVersion"] == 3)
        #expect(value["round"] == 4)
    }

    /// The holder's kind and the embedded document's kind each merge their own values, and the
    /// embedded JSON goes back as data, in the holder's binary plist.
    @Test func anEmbeddedSaveIsMergedByItsOwnKind() throws {
        let blocks = Array(try Data(contentsOf: Corpus.packageRoot.appendingPathComponent("samples/blocks-2026/Library/Preferences/com.example.blocks.plist")))
        var local = try Codecs.binary.decode(blocks), remote = local
        func setGameSave(_ document: inout SaveValue, _ change: (inout SaveValue) throws -> Void) throws {
            var inner = try Codecs.json.decode(EmbeddedDocument.bytes(of: document["gameSave"]!)!)
            try change(&inner)
            var options = EncodingOptions()
            options.pretty = false
            try document.setValue(.data(Data(try Codecs.json.encode(inner, options: options).dropLast())), at: JSONPointer(parsing: "/gameSave"))
        }
        try setGameSave(&local) { try $0.setValue(55, at: JSONPointer(parsing: "/coins")) }
        try setGameSave(&remote) { try $0.setValue(.array(["classic", "lava"]), at: JSONPointer(parsing: "/unlockedThemes")) }
        try remote.setValue(1100, at: JSONPointer(parsing: "/launchCount"))
        let result = try Self.merger().merge(
            base: SaveMerger.Copy(bytes: blocks, path: "Library/Preferences/com.example.blocks.plist", name: "base"),
            local: SaveMerger.Copy(bytes: try Codecs.binary.encode(local), path: "Library/Preferences/com.example.blocks.plist", name: "local"),
            remote: SaveMerger.Copy(bytes: try Codecs.binary.encode(remote), path: "Library/Preferences/com.example.blocks.plist", name: "remote"))
        #expect(result.kind == "blocks.defaults")
        #expect(result.output.starts(with: Array("bplist00".utf8)), "the local copy's codec")
        let merged = try Codecs.binary.decode(result.output)
        guard case .data(let held)? = merged["gameSave"] else { Issue.record("gameSave is still data"); return }
        let inner = try Codecs.json.decode(Array(held))
        #expect(inner["coins"] == 55)
        #expect(inner["unlockedThemes"]?.arrayValue?.contains("lava") == true)
        #expect(merged["launchCount"] == 1100)
        #expect(result.decisions.map(\.path.description).contains("/gameSave/coins"))
    }

    /// A merged copy is the local copy's text with the merged changes in it: a file that git
    /// merges through `savetool merge` shows only those lines changed, whoever wrote its layout
    /// (here `JSONEncoder`'s `" : "` and Python's spacing inside an embedded save).
    @Test func aMergedCopyChangesOnlyWhatTheMergeChanged() throws {
        let base = "{\n  \"saveVersion\" : 2,\n  \"player\" : {\"level\": 1, \"xp\": 0},\n  \"coins\" : 40,\n  \"unlockedThemes\" : [\"classic\"],\n  \"lastSaved\" : \"x\"\n}\n"
        let local = base.replacingOccurrences(of: "\"coins\" : 40", with: "\"coins\" : 45")
        let remote = base.replacingOccurrences(of: "[\"classic\"]", with: "[\"classic\", \"lava\"]").replacingOccurrences(of: "\"coins\" : 40", with: "\"coins\" : 50")
        let result = try Self.merger(kind: "blocks.gamesave").merge(base: Self.copy(base, "base"), local: Self.copy(local, "local"), remote: Self.copy(remote, "remote"))
        #expect(result.conflicts.isEmpty)
        #expect(String(decoding: result.output, as: UTF8.self)
            == base.replacingOccurrences(of: "\"coins\" : 40", with: "\"coins\" : 55").replacingOccurrences(of: "[\"classic\"]", with: "[\"classic\", \"lava\"]"))

        // Inside a binary plist: the embedded JSON keeps Python's ", " and ": ".
        let blocks = Array(try Data(contentsOf: Corpus.packageRoot.appendingPathComponent("samples/blocks-2026/Library/Preferences/com.example.blocks.plist")))
        var holder = try Codecs.binary.decode(blocks)
        let python = #"{"saveVersion": 2, "player": {"level": 3, "xp": 10}, "coins": 40, "unlockedThemes": ["classic"], "lastSaved": "2026-11-20T22:41:07Z"}"#
        func copy(_ json: String, _ name: String) throws -> SaveMerger.Copy {
            try holder.setValue(.data(Data(json.utf8)), at: JSONPointer(parsing: "/gameSave"))
            return SaveMerger.Copy(bytes: try Codecs.binary.encode(holder), path: "Library/Preferences/com.example.blocks.plist", name: name)
        }
        let embedded = try Self.merger().merge(
            base: try copy(python, "base"), local: try copy(python.replacingOccurrences(of: "\"coins\": 40", with: "\"coins\": 45"), "local"),
            remote: try copy(python.replacingOccurrences(of: "\"xp\": 10", with: "\"xp\": 20"), "remote"))
        guard case .data(let held)? = try Codecs.binary.decode(embedded.output)["gameSave"] else { Issue.record("gameSave is still data"); return }
        #expect(String(decoding: held, as: UTF8.self) == python.replacingOccurrences(of: "\"coins\": 40", with: "\"coins\": 45").replacingOccurrences(of: "\"xp\": 10", with: "\"xp\": 20"))
    }

    @Test func answersAndPreferencesSettleConflicts() throws {
        let local = #"{"saveVersion": 2, "player": {"level": 1, "xp": 0}, "coins": 120, "unlockedThemes": [], "lastSaved": "x"}"#
        let remote = #"{"saveVersion": 2, "player": {"level": 1, "xp": 0}, "coins": 90, "unlockedThemes": [], "lastSaved": "x"}"#
        let answers = try MergeAnswers(parsing: Codecs.value(#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/coins", "value": 100}]}"#))
        var merger = try Self.merger(kind: "blocks.gamesave")
        merger.resolve = { conflict in answers.resolution(file: nil, path: conflict.path).map { ($0, "an answer") } }
        let result = try merger.merge(base: nil, local: Self.copy(local, "l"), remote: Self.copy(remote, "r"))
        #expect(result.conflicts.isEmpty)
        #expect(try Codecs.json.decode(result.output)["coins"] == 100)
        #expect(result.decisions.first { $0.path.description == "/coins" }?.why.hasSuffix("settled by an answer") == true)
    }

    /// A mistyped answers file is refused at the place, saying what it found there.
    @Test func aBadAnswersFileSaysWhatItFound() throws {
        let cases: [(document: String, at: [String], message: String)] = [
            (#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/coins", "take": "sideways"}]}"#, ["answers", "0", "take"], #""sideways", expected "local", "remote" or "base""#),
            (#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/coins", "take": 2}]}"#, ["answers", "0", "take"], #"an integer, expected "local", "remote" or "base""#),
            (#"{"format": "savetool.merge/1", "answers": []}"#, ["format"], #""savetool.merge/1", expected "savetool.merge-answers/1""#),
            (#"{"answers": []}"#, ["format"], #"missing, expected "savetool.merge-answers/1""#),
        ]
        for (document, at, message) in cases {
            #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: at), message: message)) { try MergeAnswers(parsing: Codecs.value(document)) }
        }
    }

    /// Two groups sharing a member would both be named by it: refused when the rules load.
    @Test func aValueInTwoGroupsIsRefused() throws {
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["rules", "1", "group", "0"]), message: "/p/level, a member of the group of /rules/0 already, expected each value in one group at most")) {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/p/level", "/q"], "policy": "lexMax"}, {"group": ["/p/level", "/p/xp"], "policy": "lexMax"}]}"#))
        }
        // Through a wildcard, either way round; a member twice in one group too.
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["rules", "1", "group", "0"]), message: "/players/0/level, a member of the group of /rules/0 (as /players/*/level) already, expected each value in one group at most")) {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/players/*/level", "/players/*/xp"], "policy": "lexMax"}, {"group": ["/players/0/level", "/players/0/rank"], "policy": "lexMax"}]}"#))
        }
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["rules", "1", "group", "1"]), message: "/players/*/xp, a member of the group of /rules/0 (as /players/0/xp) already, expected each value in one group at most")) {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/players/0/level", "/players/0/xp"], "policy": "lexMax"}, {"group": ["/players/*/rank", "/players/*/xp"], "policy": "lexMax"}]}"#))
        }
        #expect(throws: FormatDefinitionError(at: JSONPointer(tokens: ["rules", "0", "group", "1"]), message: "/a, a member of the group of /rules/0 already, expected each value in one group at most")) {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/a", "/a"], "policy": "lexMax"}]}"#))
        }
        // Groups in different objects do not overlap, wildcards or not.
        #expect(throws: Never.self) {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/players/*/level", "/players/*/xp"], "policy": "lexMax"}, {"group": ["/teams/*/level", "/teams/*/xp"], "policy": "lexMax"}]}"#))
        }
    }

    /// An answer taking the base where a merge has none settles nothing (and never crashes).
    @Test func anAnswerForAMissingBaseLeavesTheConflictOpen() throws {
        let rules = try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"group": ["/a", "/b"], "policy": "lexMax"}]}"#))
        let merger = ValueMerger(rules: rules) { _ in (.take(.base), "an answer") }
        let outcome = merger.merge(base: nil, local: try Codecs.value(#"{"a": 1, "b": "x"}"#), remote: try Codecs.value(#"{"a": "one", "b": "y"}"#))
        #expect(outcome.conflicts.count == 1)
        #expect(outcome.conflicts.first?.why.hasSuffix("the answer takes the base, but this merge has none") == true)
    }

    @Test func twoDifferentUnrecognisedFilesAreAConflict() throws {
        let result = try Self.merger().merge(base: nil, local: Self.copy(#"{"a": 1}"#, "l.json"), remote: Self.copy(#"{"a": 2}"#, "r.json"))
        #expect(result.conflicts.count == 1)
        #expect(result.output == Array(#"{"a": 1}"#.utf8))
    }

    /// A file that only looks like JSON (an .ini beginning `[Graphics]`) is no save document:
    /// it merges as a whole file, taken when both sides changed it alike, never "bad data"
    /// that stops the whole folder. (The built-in registry also knew no extension: `didSet`
    /// does not run in an initialiser.)
    @Test func aFileThatOnlyLooksLikeJSONMergesWhole() throws {
        #expect(CodecRegistry.builtIn.codec(forPath: "Documents/a.json")?.id == "json")
        let ini = "[Graphics]\nvsync=1\n"
        #expect(CodecRegistry.builtIn.saveDocumentCodec(for: Array(ini.utf8), named: "settings.ini") == nil)
        #expect(CodecRegistry.builtIn.saveDocumentCodec(for: Array("[1, 2]".utf8), named: "list") != nil, "a guess that decodes")
        let alike = try Self.merger().merge(
            base: Self.copy("[Graphics]\nvsync=0\n", "settings.ini"), local: Self.copy(ini, "settings.ini"), remote: Self.copy(ini, "settings.ini"))
        #expect(alike.conflicts.isEmpty && alike.output == Array(ini.utf8), "\(alike.decisions)")
        let differ = try Self.merger().merge(base: nil, local: Self.copy(ini, "settings.ini"), remote: Self.copy("[Graphics]\nvsync=2\n", "settings.ini"))
        #expect(differ.conflicts.count == 1)
    }

    @Test func badInputNamesTheFileAndThePlace() throws {
        #expect {
            try Self.merger().merge(base: nil, local: Self.copy(#"{"a": 1}"#, "l.json"), remote: Self.copy("{\"a\": 1,\n  oops}", "r.json"))
        } throws: { error in
            let error = error as? SaveError
            return error?.category == .badData && error?.description.hasPrefix("r.json:2:3: ") == true
        }
    }

    @Test func mergeRulesAreCheckedWithTheirPlace() throws {
        #expect {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/a", "policy": "maximum"}]}"#))
        } throws: { error in
            (error as? FormatDefinitionError)?.description.hasPrefix("/rules/0/policy: \"maximum\", expected one of preferLocal") == true
        }
        #expect {
            try MergeRules(parsing: Codecs.value(#"{"format": "savetool.merge/1", "kind": "k", "rules": [{"path": "/a", "policy": "keyed"}]}"#))
        } throws: { error in
            (error as? FormatDefinitionError)?.description == "/rules/0/key: missing, expected a JSON Pointer for \"keyed\""
        }
    }
}
