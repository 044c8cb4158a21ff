import Foundation
import SaveKit
import TestSupport
import Testing

/// ``BatchMigration`` as a program embedding SaveKit uses it, without the command line: the
/// sudoku sample (three v1 games and three at v2) migrated into a folder, in place, and not at all.
@Suite("Batch migration")
struct BatchMigrationTests {
    static let kinds = (try? KindLoader.kinds(in: Corpus.packageRoot.appendingPathComponent("Formats").path)) ?? []

    /// What a batch hands on, in the order it hands it on.
    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ item: String) { lock.lock(); defer { lock.unlock() }; items.append(item) }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
    }

    /// Keeps nothing, but records what it was given and what the files held at that moment.
    struct RecordingKeeper: OriginalsKeeping {
        let calls: Collected
        func keep(_ paths: [String]?, under root: String, in directory: String, name: String) throws -> String? {
            for path in paths ?? [] {
                let version = try Self.version(of: root + "/" + path)
                calls.add("\(path) at version \(version)")
            }
            return paths?.isEmpty == false ? directory + "/kept-" + name : nil
        }

        static func version(of path: String) throws -> Int {
            let value = try JSONCodec().decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            guard case .integer(let version)? = value["version"] else { return 1 }
            return Int(version)
        }
    }

    static func saves(in directory: URL) throws -> String {
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.copyItem(at: Corpus.packageRoot.appendingPathComponent("samples/sudoku/Documents"), to: saves)
        return saves.path
    }

    static let v1Games = ["games/v1-completed.json", "games/v1-fresh.json", "games/v1-in-progress.json"]
    static let allGames = v1Games + ["games/v2-completed.json", "games/v2-in-progress.json", "games/v2-paused.json"]

    @Test func copiesGoIntoAFolderAndOutcomesComeInTheWalksOrder() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = try Self.saves(in: directory)
        let before = try Data(contentsOf: URL(fileURLWithPath: saves + "/games/v1-fresh.json"))
        let pipeline = try SavePipeline(kinds: Self.kinds, registry: .builtIn)
        let batch = BatchMigration(paths: [saves], pipeline: pipeline, destination: .folder(directory.path + "/out"), jobs: 2)
        try batch.checkPlaces()
        let seen = Collected()
        let summary = try batch.run { outcome in seen.add("\(outcome.file.relative) \(outcome.result.status.rawValue)") }
        var expected = BatchMigration.Summary()
        (expected.migrated, expected.unchanged) = (3, 3)
        #expect(summary == expected)
        #expect(seen.all == Self.allGames.map { "\($0) \(Self.v1Games.contains($0) ? "migrated" : "unchanged")" })
        for game in Self.v1Games { #expect(try RecordingKeeper.version(of: directory.path + "/out/" + game) == 2) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: saves + "/games/v1-fresh.json")) == before, "the originals stay")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/out/games/v2-paused.json"), "only migrated files are copied")
    }

    @Test func inPlaceTheOriginalsOfTheFilesThatChangeAreKeptFirst() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = try Self.saves(in: directory)
        let pipeline = try SavePipeline(kinds: Self.kinds, registry: .builtIn)
        let (kept, notices) = (Collected(), Collected())
        let batch = BatchMigration(
            paths: [saves], pipeline: pipeline, destination: .inPlace(keepingOriginals: RecordingKeeper(calls: kept)), jobs: 2
        ) { notice in notices.add("\(notice)") }
        let summary = try batch.run()
        #expect(summary.migrated == 3 && summary.unchanged == 3 && summary.failed == 0)
        // Given only the files that change, while they were still at version 1.
        #expect(kept.all == Self.v1Games.map { "\($0) at version 1" })
        #expect(notices.all == ["\(BatchMigration.Notice.originalsKept(files: 3, argument: saves, place: directory.path + "/kept-saves"))"])
        for game in Self.allGames { #expect(try RecordingKeeper.version(of: saves + "/" + game) == 2) }
    }

    /// A file the walk meets by its path and through a link inside the folder is kept once, by
    /// its own path (a link kept as the file it leads to would come back as a copy); hard links
    /// are each kept by their own name, since each is a name of its own to restore.
    @Test func aFileReachedThroughALinkIsKeptByItsOwnPath() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = try Self.saves(in: directory)
        try FileManager.default.createSymbolicLink(atPath: saves + "/a-link.json", withDestinationPath: "games/v1-fresh.json")
        try FileManager.default.linkItem(atPath: saves + "/games/v1-in-progress.json", toPath: saves + "/games/z-hard.json")
        let pipeline = try SavePipeline(kinds: Self.kinds, registry: .builtIn)
        let kept = Collected()
        // One job: the link (first in the walk) migrates the file it leads to, which is then unchanged.
        let summary = try BatchMigration(
            paths: [saves], pipeline: pipeline, destination: .inPlace(keepingOriginals: RecordingKeeper(calls: kept)), jobs: 1
        ).run()
        #expect(kept.all == (Self.v1Games + ["games/z-hard.json"]).map { "\($0) at version 1" }, "the link is not kept as a second copy: \(kept.all)")
        #expect(summary.migrated == 4 && summary.unchanged == 4 && summary.failed == 0, "\(summary)")
        #expect(try RecordingKeeper.version(of: saves + "/games/z-hard.json") == 2)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: saves + "/a-link.json") == "games/v1-fresh.json")
        #expect(try RecordingKeeper.version(of: saves + "/games/v1-fresh.json") == 2)
    }

    @Test func aDryRunWritesNothingAndAFailingConsumerStopsTheRun() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = try Self.saves(in: directory)
        let pipeline = try SavePipeline(kinds: Self.kinds, registry: .builtIn)
        var dryRun = BatchMigration(paths: [saves], pipeline: pipeline, destination: .folder(directory.path + "/out"))
        dryRun.dryRun = true
        #expect(try dryRun.run().migrated == 3)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/out"))

        struct Full: Error {}
        var inPlace = BatchMigration(paths: [saves], pipeline: pipeline, destination: .inPlace(keepingOriginals: nil), jobs: 1)
        inPlace.handsOutcomesOnAtOnce = true
        #expect(throws: Full.self) { try inPlace.run { _ in throw Full() } }
        // Handed on at once, one job: the first file was migrated, and no file was started after the failure.
        #expect(try RecordingKeeper.version(of: saves + "/" + Self.v1Games[0]) == 2)
        #expect(try RecordingKeeper.version(of: saves + "/" + Self.v1Games[1]) == 1)
        #expect(try RecordingKeeper.version(of: saves + "/" + Self.v1Games[2]) == 1)
        // Three jobs waiting their turn are woken by the failure, and start nothing more.
        let many = directory.appendingPathComponent("many/games")
        try FileManager.default.createDirectory(at: many, withIntermediateDirectories: true)
        let names = (0..<12).map { String(format: "g%02d.json", $0) }
        for name in names { try FileManager.default.copyItem(atPath: saves + "/" + Self.v1Games[1], toPath: many.path + "/" + name) }
        var three = BatchMigration(paths: [many.deletingLastPathComponent().path], pipeline: pipeline, destination: .inPlace(keepingOriginals: nil), jobs: 3)
        three.handsOutcomesOnAtOnce = true
        #expect(throws: Full.self) { try three.run { _ in throw Full() } }
        let migrated = try names.map { try RecordingKeeper.version(of: many.path + "/" + $0) }.filter { $0 == 2 }.count
        #expect(migrated >= 1 && migrated <= 3, "at most one file per job: \(migrated)")
        // Handed on after each batch, the failure stops the run there, and is thrown.
        let seen = Collected()
        #expect(throws: Full.self) { try BatchMigration(paths: [saves], pipeline: pipeline, destination: .nowhere).run { seen.add($0.file.relative); throw Full() } }
        #expect(seen.all == [Self.allGames[0]])
    }

    @Test func placesAreCheckedBeforeAnythingAndSaidWithoutFlags() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let saves = try Self.saves(in: directory)
        let pipeline = try SavePipeline(kinds: Self.kinds, registry: .builtIn)
        let among = BatchMigration(paths: [saves], pipeline: pipeline, destination: .folder(saves + "/migrated"))
        let error = try #require(throws: SaveError.self) { try among.checkPlaces() }
        #expect(error.category == .usage && error.hint == .migrateInPlace && error.file == saves + "/migrated")
        #expect(error.message == "would put the migrated copies among the files migrated from \(saves), expected a folder outside them")
        let report = BatchMigration(paths: [saves], pipeline: pipeline, destination: .nowhere)
        let held = try #require(throws: SaveError.self) { try report.checkReportPlace(saves + "/games/v2-paused.json") }
        #expect(held.message == "holds a save (sudoku.game), expected a path for the report where no save is")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["saves"])
        // run() checks too: a caller that skipped checkPlaces() never writes a copy over its original.
        let over = BatchMigration(paths: [saves + "/games/v1-fresh.json"], pipeline: pipeline, destination: .folder(saves + "/games"))
        #expect(throws: SaveError.self) { try over.run() }
        #expect(try RecordingKeeper.version(of: saves + "/games/v1-fresh.json") == 1)
        // A path named twice, and a folder inside one named: each file once, with a warning.
        let notices = Collected()
        let twice = BatchMigration(paths: [saves, saves + "/games", saves], pipeline: pipeline, destination: .nowhere) { notices.add("\($0)") }
        #expect(twice.paths == [saves])
        #expect(notices.all.count == 2)
    }
}
