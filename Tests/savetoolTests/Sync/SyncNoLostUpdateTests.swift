import Foundation
import SaveKit
import TestSupport
import Testing

/// Many devices push to one slot at once from stale bases: every push is answered 200 or 409,
/// and nothing an answer of 200 accepted is lost.
@Suite("savetool serve: no lost update", .serialized)
struct SyncNoLostUpdateTests {
    static let slot = "Library/Preferences/com.example.blocks.plist"
    static let space = "blocks/player-42"

    /// One device's change to the puzzle game's save (inside the defaults' gameSave data).
    enum Change {
        case coins(Int)
        case unlock(String)
        case levelUp
    }

    /// The save with `changes` made to its GameSaveData.
    static func applying(_ changes: [Change], to plist: [UInt8]) throws -> [UInt8] {
        var defaults = try Codecs.binary.decode(plist)
        guard case .data(let embedded)? = defaults["gameSave"] else { throw Failure("no gameSave data") }
        var game = try Codecs.json.decode(Array(embedded))
        for change in changes {
            switch change {
            case .coins(let amount):
                guard case .integer(let coins)? = game["coins"] else { throw Failure("no coins") }
                try game.setValue(.integer(coins + Int64(amount)), at: JSONPointer(parsing: "/coins"))
            case .unlock(let theme):
                try game.setValue(.array((game["unlockedThemes"]?.arrayValue ?? []) + [.string(theme)]), at: JSONPointer(parsing: "/unlockedThemes"))
            case .levelUp:
                guard case .integer(let level)? = game["player"]?["level"] else { throw Failure("no level") }
                try game.setValue(.integer(level + 1), at: JSONPointer(parsing: "/player/level"))
                try game.setValue(.integer(0), at: JSONPointer(parsing: "/player/xp"))
            }
        }
        var options = EncodingOptions()
        options.pretty = false
        try defaults.setValue(.data(Data(try Codecs.json.encode(game, options: options).dropLast())), at: JSONPointer(parsing: "/gameSave"))
        return try Codecs.binary.encode(defaults, options: EncodingOptions())
    }

    /// Whether `changes` leave the save as it was: coins that add up to nothing.
    static func cancelOut(_ changes: [Change]) -> Bool {
        var sum = 0
        for change in changes {
            guard case .coins(let amount) = change else { return false }
            sum += amount
        }
        return sum == 0
    }

    static func game(_ plist: [UInt8]) throws -> SaveValue {
        guard case .data(let embedded)? = try Codecs.binary.decode(plist)["gameSave"] else { throw Failure("no gameSave data") }
        return try Codecs.json.decode(Array(embedded))
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// What the devices were told, gathered from every thread.
    final class Tally: @unchecked Sendable {
        let lock = NSLock()
        var accepted = 0, parked = 0, other: [String] = []
        /// Pushes whose changes cancelled out (coins -5 then +5) sent from the head: answered 200
        /// with the head itself, storing nothing.
        var unchanged = 0
        var coins = 0
        var unlocks: [String] = []
        var highestLevel = 0
        /// Each accepted push's version and device, to name a version answered twice.
        var answered: [(version: Int, device: Int, base: Int)] = []
    }

    @Test(arguments: SyncStore.allCases)
    func thirtyTwoDevicesPushFiftyChangesEach(_ kind: SyncStore) throws {
        let root = try Processes.temporaryDirectory("sync-race")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, environment) = try kind.make(in: root)
        // On S3, two server processes share the bucket: a lost race is merged again by either.
        // Every version kept (no thinning): the history is checked against every accepted push.
        let servers = try (kind == .s3 ? [0, 1] : [0]).map { _ in
            try SyncServerProcess(store: store, arguments: ["--keep-versions", "0"], environment: environment)
        }
        let devices = 32, pushes = 50
        let initial = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"))))
        let first = try SyncAPI(servers[0].url).push(Self.space, Self.slot, initial, base: nil)
        #expect(first.status == 200 && first.version == 1, "\(first.text)")
        let baseGame = try Self.game(initial)
        guard case .integer(let baseCoins)? = baseGame["coins"], case .integer(let baseLevel)? = baseGame["player"]?["level"] else {
            Issue.record("the sample has no coins or level")
            return
        }
        let tally = Tally()
        tally.highestLevel = Int(baseLevel)

        DispatchQueue.concurrentPerform(iterations: devices) { device in
            var generator = SystemRandomNumberGenerator()
            let api = SyncAPI(servers[device % servers.count].url, device: "device-\(device)")
            var (base, copy) = (1, initial)
            var pending: [Change] = []
            for push in 0..<pushes {
                // A change made offline; now and then two before the device syncs again.
                let change: Change = switch Int.random(in: 0..<3, using: &generator) {
                // Never 0. Two coin changes may still cancel out: such a push, sent from the head,
                // stores nothing and is answered with the head (counted apart below).
                case 0: .coins([Int.random(in: -20 ... -1, using: &generator), Int.random(in: 1...50, using: &generator)].randomElement(using: &generator)!)
                case 1: .unlock("theme-\(device)-\(push)")
                default: .levelUp
                }
                pending.append(change)
                if pending.count < 2, Int.random(in: 0..<4, using: &generator) == 0, push < pushes - 1 { continue }
                do {
                    let body = try Self.applying(pending, to: copy)
                    let level = try Self.game(body)["player"]?["level"]
                    let answer = try api.push(Self.space, Self.slot, body, base: base)
                    tally.lock.withLock {
                        switch answer.status {
                        case 200 where answer.version == base:
                            // Only a push that changes nothing is answered with its own base.
                            if Self.cancelOut(pending) { tally.unchanged += 1 } else { tally.other.append("a change answered with its base, v\(base)") }
                        case 200:
                            tally.accepted += 1
                            tally.answered.append((answer.version ?? -1, device, base))
                            for change in pending {
                                switch change {
                                case .coins(let amount): tally.coins += amount
                                case .unlock(let theme): tally.unlocks.append(theme)
                                case .levelUp: if case .integer(let value)? = level { tally.highestLevel = max(tally.highestLevel, Int(value)) }
                                }
                            }
                        case 409: tally.parked += 1
                        default: tally.other.append("\(answer.status): \(answer.text.prefix(200))")
                        }
                    }
                    if answer.status == 200, let version = answer.version {
                        (base, copy) = (version, answer.bytes)
                    } else {
                        // A conflict: the push is parked on the server; the device takes the head.
                        let head = try api.get(Self.space, Self.slot)
                        if let version = head.version { (base, copy) = (version, head.bytes) }
                    }
                    pending = []
                } catch {
                    tally.lock.withLock { tally.other.append("\(error)") }
                }
            }
        }

        #expect(tally.other.isEmpty, "every push is answered 200 or 409: \(tally.other.prefix(5))")
        let head = try SyncAPI(servers[0].url).get(Self.space, Self.slot)
        let final = try Self.game(head.bytes)
        #expect(final["coins"] == .integer(baseCoins + Int64(tally.coins)), "the base plus the sum of the accepted increments")
        let themes = Set((final["unlockedThemes"]?.arrayValue ?? []).compactMap(\.stringValue))
        let missing = tally.unlocks.filter { !themes.contains($0) }
        #expect(missing.isEmpty, "every accepted unlock is there; missing: \(missing.prefix(5))")
        #expect(final["player"]?["level"] == .integer(Int64(tally.highestLevel)), "the highest level reached")
        let history = try Codecs.json.decode(try SyncAPI(servers[1 % servers.count].url).request("GET", SyncAPI.slot(Self.space, Self.slot) + "/history").bytes)
        let states = (history.arrayValue ?? []).map { $0["state"]?.stringValue ?? "" }
        let twice = Dictionary(grouping: tally.answered, by: \.version).filter { $0.value.count > 1 }
        let near = (history.arrayValue ?? []).filter { record in
            guard case .integer(let n)? = record["version"] else { return false }
            return twice.keys.contains { abs($0 - Int(n)) <= 2 }
        }.map { "\($0["version"]?.compactText ?? "") \($0["state"]?.compactText ?? "") \($0["device"]?.compactText ?? "") base \($0["base"]?.compactText ?? "-") \($0["how"]?.compactText ?? "") \($0["pushed"]?.compactText.prefix(10) ?? "")" }
        let logged = servers.flatMap { $0.log.split(separator: "\n") }.filter { line in twice.values.contains { $0.contains { line.hasSuffix("device=device-\($0.device)") } } }
        #expect(twice.isEmpty, "log: \(logged.suffix(30)) versions answered to two pushes: \(twice.values.map { $0.map { "v\($0.version) d\($0.device) b\($0.base)" } }) near: \(near)")
        #expect(states.filter { $0 == "version" }.count == 1 + tally.accepted, "the first version and one per accepted push that changed something")
        #expect(states.filter { $0 == "parked" }.count == tally.parked)
        #expect(head.version == 1 + tally.accepted)
        #expect(tally.accepted + tally.parked > 0)
    }

    /// Changes that cancel out (coins spent and earned back) pushed from the head store nothing:
    /// the answer is the head itself, and the history does not grow.
    @Test func aPushThatChangesNothingIsAnsweredWithTheHead() throws {
        let root = try Processes.temporaryDirectory("sync-nothing")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let phone = SyncAPI(server.url, device: "phone")
        let initial = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"))))
        #expect(try phone.push(Self.space, Self.slot, initial, base: nil).version == 1)
        let changes: [Change] = [.coins(-5), .coins(5)]
        #expect(Self.cancelOut(changes))
        let answer = try phone.push(Self.space, Self.slot, try Self.applying(changes, to: initial), base: 1)
        #expect(answer.status == 200 && answer.version == 1, "\(answer.status) \(answer.text)")
        let history = try Codecs.json.decode(try phone.request("GET", SyncAPI.slot(Self.space, Self.slot) + "/history").bytes)
        #expect(history.arrayValue?.count == 1)
    }

    /// A push tried again after its answer was lost is not merged twice: its counters would be.
    @Test func aPushTriedAgainIsAnsweredAsBefore() throws {
        let root = try Processes.temporaryDirectory("sync-retry")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let phone = SyncAPI(server.url, device: "phone"), tablet = SyncAPI(server.url, device: "tablet")
        let initial = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"))))
        #expect(try phone.push(Self.space, Self.slot, initial, base: nil).version == 1)
        let coins = try Self.game(initial)["coins"]
        let earned = try Self.applying([.coins(10)], to: initial)
        #expect(try phone.push(Self.space, Self.slot, earned, base: 1).version == 2)
        #expect(try tablet.push(Self.space, Self.slot, try Self.applying([.coins(10)], to: initial), base: 1).version == 3)
        // The phone's answer was lost: it pushes the same bytes from the same base again.
        let again = try phone.push(Self.space, Self.slot, earned, base: 1)
        #expect(again.status == 200 && again.version == 2, "\(again.status) \(again.text)")
        let head = try phone.get(Self.space, Self.slot)
        #expect(head.version == 3)
        // Both devices earned 10 from the base: both count, though their copies were equal.
        guard case .integer(let before)? = coins else { Issue.record("no coins"); return }
        #expect(try Self.game(head.bytes)["coins"] == .integer(before + 20))
    }
}
