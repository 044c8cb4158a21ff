import PropertyBased
import SaveKit
import TestSupport
import Testing

/// The laws a merge must keep, over generated documents whose every field has a rule.
@Suite("Merge laws")
struct MergePropertyTests {
    /// Symmetric policies only, so that swapping the sides must not change the result.
    static let rules = try! MergeRules(parsing: Codecs.value("""
        {"format": "savetool.merge/1", "kind": "generated", "default": "max",
         "rules": [
           {"group": ["/player/level", "/player/xp"], "policy": "lexMax"},
           {"path": "/coins", "policy": "counter", "noBase": "max"},
           {"path": "/best", "policy": "max"},
           {"path": "/fastest", "policy": "min"},
           {"path": "/stats/*", "policy": "counter", "noBase": "min"}]}
        """))

    /// Small ranges, so that sides often agree, differ from the base on one side only, or both.
    static let document = zip(
        Gen.int(in: 1...3), Gen.int(in: 0...3), Gen.int(in: 0...4), Gen.int(in: 0...3), Gen.int(in: 0...3),
        Gen.element(of: ["a", "b", "c"]), Gen.int(in: 0...3), Gen.bool()
    ).map { level, xp, coins, best, fastest, name, played, hasWins -> SaveValue in
        var stats: SaveValue = ["played": .integer(Int64(played))]
        if hasWins { try? stats.setValue(.integer(Int64(played * 2)), at: JSONPointer(tokens: ["wins"])) }
        return [
            "player": ["level": .integer(Int64(level)), "xp": .integer(Int64(xp))], "coins": .integer(Int64(coins)),
            "best": .integer(Int64(best)), "fastest": .integer(Int64(fastest)), "name": .string(name!), "stats": stats,
        ]
    }

    static func merge(_ base: SaveValue?, _ local: SaveValue, _ remote: SaveValue) -> ValueMerger.Outcome {
        ValueMerger(rules: rules).merge(base: base, local: local, remote: remote)
    }

    @Test func mergingACopyWithItselfChangesNothing() async {
        await propertyCheck(count: 300, input: Self.document) { a in
            #expect(Self.merge(a, a, a).value == a)
            #expect(Self.merge(nil, a, a).value == a)
            #expect(Self.merge(a, a, a).decisions.isEmpty)
        }
    }

    @Test func aChangeOnOneSideIsTakenAsItIs() async {
        await propertyCheck(count: 300, input: Self.document, Self.document) { base, changed in
            let onLocal = Self.merge(base, changed, base), onRemote = Self.merge(base, base, changed)
            #expect(onLocal.value == changed)
            #expect(onRemote.value == changed)
            #expect(onLocal.conflicts.isEmpty && onRemote.conflicts.isEmpty)
        }
    }

    @Test func swappingTheSidesGivesTheSameResultUnderSymmetricPolicies() async {
        #expect(Self.rules.rules.allSatisfy(\.policy.isSymmetric) && Self.rules.defaultPolicy.isSymmetric)
        await propertyCheck(count: 300, input: Self.document, Self.document, Self.document) { base, x, y in
            let (forward, backward) = (Self.merge(base, x, y), Self.merge(base, y, x))
            // A key removed on one side and changed on the other is a conflict both ways round
            // (the local value stands in for it, so there the results differ by design).
            #expect(forward.conflicts.map(\.path) == backward.conflicts.map(\.path))
            #expect(forward.conflicts.allSatisfy { $0.why.hasPrefix("removed on the") })
            if forward.conflicts.isEmpty { #expect(forward.value == backward.value) }
            let (twoWay, twoWayBack) = (Self.merge(nil, x, y), Self.merge(nil, y, x))
            #expect(twoWay.value == twoWayBack.value)
        }
    }

    /// A counter with a base adds both sides' changes; a group keeps its members together.
    @Test func countersAddAndGroupsStayWhole() async {
        await propertyCheck(count: 300, input: Self.document, Self.document, Self.document) { base, x, y in
            let merged = Self.merge(base, x, y).value
            let (b, l, r) = (base["coins"]!.int64Value!, x["coins"]!.int64Value!, y["coins"]!.int64Value!)
            // Equal changes on both sides count twice: both devices earned them.
            #expect(merged["coins"]?.int64Value == b + (l - b) + (r - b))
            let player = merged["player"]
            #expect([base["player"], x["player"], y["player"]].contains(player), "a level and XP from one copy, never mixed")
        }
    }
}
