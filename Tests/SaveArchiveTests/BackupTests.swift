import Foundation
@testable import SaveArchive
import SaveKit
import TestSupport
import Testing

@Suite("Backups")
struct BackupTests {
    typealias Day = BackupRepository.Day

    static func backup(_ day: String, _ ext: String = "tar.gz", name: String = "kape") -> BackupRepository.Backup {
        BackupRepository.Backup(name: name, day: Day(day)!, path: "/repo/\(name)-\(day).\(ext)", format: ArchiveFormat(path: "x.\(ext)")!)
    }

    /// 15 simulated days of November with gaps, two backups on the 20th, one dated in the future.
    static let history: [BackupRepository.Backup] = [
        "2026-11-01", "2026-11-02", "2026-11-03", "2026-11-05", "2026-11-08", "2026-11-09", "2026-11-10",
        "2026-11-12", "2026-11-13", "2026-11-15", "2026-11-16", "2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21",
    ].map { backup($0) } + [backup("2026-11-20", "tar.zst"), backup("2026-12-24")]

    struct Case: Sendable, CustomTestStringConvertible {
        var keep: Int
        var today: String
        var kept: [String]
        var testDescription: String { "keep \(keep) on \(today)" }
    }

    static let cases: [Case] = [
        // Seven days with a backup, not seven calendar days: the gaps use up no slot.
        Case(keep: 7, today: "2026-11-21", kept: ["2026-12-24", "2026-11-21", "2026-11-20", "2026-11-20", "2026-11-19", "2026-11-18", "2026-11-16", "2026-11-15", "2026-11-13"]),
        Case(keep: 1, today: "2026-11-21", kept: ["2026-12-24", "2026-11-21"]),
        Case(keep: 2, today: "2026-11-20", kept: ["2026-12-24", "2026-11-21", "2026-11-20", "2026-11-20", "2026-11-19"]),
        Case(keep: 30, today: "2026-11-21", kept: history.map(\.day.description).sorted(by: >)),
        // Today is a gap: the last days that have a backup are kept, whenever they were.
        Case(keep: 3, today: "2026-11-11", kept: ["2026-12-24", "2026-11-21", "2026-11-20", "2026-11-20", "2026-11-19", "2026-11-18", "2026-11-16", "2026-11-15", "2026-11-13", "2026-11-12", "2026-11-10", "2026-11-09", "2026-11-08"]),
    ]

    @Test(arguments: cases)
    func retentionPolicy(_ test: Case) {
        let (kept, deleted) = BackupRepository.retention(of: Self.history, keep: test.keep, today: Day(test.today)!)
        #expect(kept.map(\.day.description).sorted(by: >) == test.kept)
        #expect(kept.count + deleted.count == Self.history.count)
        #expect(!deleted.contains { $0.day > Day(test.today)! }, "a future backup was deleted")
    }

    @Test func dayNames() {
        #expect(Day("2026-02-29") == nil)
        #expect(Day("2024-02-29") != nil)
        #expect(Day("2026-1-01") == nil)
        #expect(Day("2026-11-21")?.description == "2026-11-21")
    }

    /// A repository and a small save directory.
    struct Fixture {
        let root: URL
        var repo: URL { root.appendingPathComponent("repo") }
        var source: URL { root.appendingPathComponent("kape") }
        let engine: BackupEngine

        init() throws {
            let root = try Processes.temporaryDirectory("backups")
            let repo = root.appendingPathComponent("repo"), source = root.appendingPathComponent("kape")
            try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: source.appendingPathComponent("Documents"), withIntermediateDirectories: true)
            try Data(#"{"round": 1}"#.utf8).write(to: source.appendingPathComponent("Documents/current_tournament.json"))
            var engine = BackupEngine(repository: BackupRepository(directory: repo.path), createdBy: "test")
            engine.lockWait = 0.3
            self.root = root
            self.engine = engine
        }
    }

    @Test func createReplaceUnchangedAndRetention() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        // Foreign files: never touched, even one named like a backup.
        try Data("notes".utf8).write(to: fixture.repo.appendingPathComponent("notes.txt"))
        try Data("not a bundle".utf8).write(to: fixture.repo.appendingPathComponent("kape-2026-10-01.tar.gz"))

        let today = Day("2026-11-21")!
        for day in ["2026-11-10", "2026-11-12", "2026-11-15", "2026-11-19"] {
            #expect(try fixture.engine.create(source: fixture.source.path, day: Day(day)!, today: today, keep: 3).outcome == .created)
        }
        let first = try fixture.engine.create(source: fixture.source.path, day: today, today: today, keep: 3)
        #expect(first.outcome == .created)
        #expect(first.deleted.map(\.day.description) == ["2026-11-12"])  // 11-10 went when 11-19 was made
        let path = first.backup.path
        let before = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
        #expect(try fixture.engine.create(source: fixture.source.path, day: today, today: today, keep: 3).outcome == .unchanged)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date == before)
        try Data(#"{"round": 2}"#.utf8).write(to: fixture.source.appendingPathComponent("Documents/current_tournament.json"))
        #expect(try fixture.engine.create(source: fixture.source.path, day: today, today: today, keep: 3).outcome == .replaced)

        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.repo.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names == ["kape-2026-10-01.tar.gz", "kape-2026-11-15.tar.gz", "kape-2026-11-19.tar.gz", "kape-2026-11-21.tar.gz", "notes.txt"])
        // The backup restores the current files.
        let restored = fixture.root.appendingPathComponent("restored")
        try BundleImporter(createdBy: "test").restore(path, into: restored.path)
        #expect(try String(contentsOf: restored.appendingPathComponent("Documents/current_tournament.json"), encoding: .utf8) == #"{"round": 2}"#)
    }

    @Test func everyFlippedByteIsCaughtByVerify() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        let report = try fixture.engine.create(source: fixture.source.path, day: Day("2026-11-21")!, today: Day("2026-11-21")!, keep: 7, format: .tar(.none))
        let original = try Data(contentsOf: URL(fileURLWithPath: report.backup.path))
        #expect(throws: Never.self) { try fixture.engine.verify(report.backup.path) }
        // Uncompressed, so that a flipped byte lands where its meaning is plain: headers, manifest, data.
        var caught = 0
        for index in stride(from: 0, to: original.count, by: 97) {
            var damaged = original
            damaged[index] ^= 0x20
            try damaged.write(to: URL(fileURLWithPath: report.backup.path))
            if (try? fixture.engine.verify(report.backup.path)) == nil { caught += 1 }
            else {
                // A flip that verify accepts must have changed nothing that matters: the files read back the same.
                let restored = fixture.root.appendingPathComponent("check-\(index)")
                try BundleImporter(createdBy: "test").restore(report.backup.path, into: restored.path)
                #expect(try Data(contentsOf: restored.appendingPathComponent("Documents/current_tournament.json")) == Data(#"{"round": 1}"#.utf8))
            }
        }
        #expect(caught > 0)
    }

    @Test func aSecondSavetoolWaitsThenGivesUp() throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.root) }
        var held: RepositoryLock? = try RepositoryLock(repository: fixture.repo.path)
        #expect(throws: RepositoryLock.Failure.self) {
            try fixture.engine.create(source: fixture.source.path, day: Day("2026-11-21")!, today: Day("2026-11-21")!, keep: 7)
        }
        #expect(held != nil)
        held = nil
        #expect(try fixture.engine.create(source: fixture.source.path, day: Day("2026-11-21")!, today: Day("2026-11-21")!, keep: 7).outcome == .created)
    }
}
