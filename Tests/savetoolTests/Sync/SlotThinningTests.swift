import Foundation
import SaveKit
import SaveServer
import SaveStorage
import SaveSync
import TestSupport
import Testing

/// Thinning a slot keeps the last `keep` versions and each of the last `days` days' last
/// version. It reads only a few versions to find the days' last ones; these histories check it
/// against the rule read plainly, version by version.
@Suite("Sync server: thinning")
struct SlotThinningTests {
    /// The versions the rule keeps, from every version's time.
    static func kept(_ times: [Date], keep: Int, days: Int, now: Date) -> [Int] {
        func day(_ date: Date) -> Int { Int((date.timeIntervalSince1970 / 86_400).rounded(.down)) }
        let versions = Array(1...times.count)
        guard versions.count > keep else { return versions }
        let floor = times.count - keep + 1
        let oldest = now.addingTimeInterval(-Double(days) * 86_400)
        var kept = Set(floor...times.count)
        var lastOfDay: [Int: Int] = [:]
        for number in 1..<floor where times[number - 1] >= oldest && day(times[number - 1]) < day(times[floor - 1]) {
            lastOfDay[day(times[number - 1])] = number
        }
        kept.formUnion(lastOfDay.values)
        return kept.sorted()
    }

    @Test func eachDaysLastVersionIsKeptAsTheRuleSays() throws {
        var generator = SeededGenerator(seed: 0x7417)
        let root = try Processes.temporaryDirectory("slot-thinning")
        defer { try? FileManager.default.removeItem(at: root) }
        var cases = 0
        for trial in 0..<60 {
            let folder = root.appendingPathComponent("store-\(trial)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            let store = SlotStore(storage: LocalFolderStorage(directory: folder.path))
            let address = try SlotAddress(space: "blocks/p\(trial)", slot: "save.plist")
            // Versions in time order over up to 12 days, some days empty, some crowded.
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            var time = now.addingTimeInterval(-Double.random(in: 0...12, using: &generator) * 86_400)
            var times: [Date] = []
            for _ in 0..<Int.random(in: 1...60, using: &generator) {
                times.append(time)
                time = time.addingTimeInterval(Bool.random(using: &generator) ? Double.random(in: 0...3_600, using: &generator) : Double.random(in: 0...150_000, using: &generator))
            }
            for (index, createdAt) in times.enumerated() {
                let record = VersionRecord(
                    version: index + 1, sha256: String(repeating: "0", count: 64), size: 2, codec: "json", kind: nil, schemaVersion: nil,
                    device: "phone", createdAt: createdAt, how: index == 0 ? .first : .fastForward)
                try store.create(record, bytes: Array("{}".utf8), at: address)
            }
            let keep = Int.random(in: 1...12, using: &generator), days = Int.random(in: 0...9, using: &generator)
            try store.thin(address, keep: keep, days: days, now: now)
            let left = try store.history(of: address).filter { $0.state == .version }.map(\.version).sorted()
            #expect(left == Self.kept(times, keep: keep, days: days, now: now), "trial \(trial): keep \(keep), days \(days)")
            cases += 1
        }
        #expect(cases == 60)
    }
}
