import Foundation
import SaveKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `migrate --in-place` saves the originals of exactly the files it will change in a new bundle
/// beside its argument, on disk before the first file is replaced: whatever happens, every
/// original is in the tree or in one of those bundles.
@Suite("trust: originals are never lost")
struct TrustMigrateTests {
    /// The bundles `<argument>-before-migrate-<time>[-N].tar.gz` in `directory`, sorted
    /// (temporary files, hidden, are left out).
    static func bundles(of argument: String, in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("\(argument)-before-migrate-") && $0.hasSuffix(".tar.gz") }.sorted()
    }

    /// A bundle name's time stamp and its `-N` suffix ("" for the first of a second).
    static func stamp(of bundle: String, argument: String) -> (time: String, suffix: String)? {
        let middle = bundle.dropFirst("\(argument)-before-migrate-".count).dropLast(".tar.gz".count)
        let time = String(middle.prefix(18)), suffix = String(middle.dropFirst(18))
        let counted = suffix.hasPrefix("-") && (Int(suffix.dropFirst()) ?? 0) >= 2
        guard time.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{6}Z/) != nil, suffix.isEmpty || counted else { return nil }
        return (time, suffix)
    }

    /// The entries of a bundle, in order, as tar lists them.
    static func entries(of bundle: URL) throws -> [String] {
        let listed = try Processes.run(["tar", "-tzf", bundle.path])
        #expect(listed.status == 0, "\(bundle.lastPathComponent): \(listed.errors)")
        return listed.outputText.split(separator: "\n").map(String.init)
    }

    /// ``entries(of:)`` but the folders (`files/a/`: the folders on the way to the files kept).
    static func fileEntries(of bundle: URL) throws -> [String] {
        try entries(of: bundle).filter { !$0.hasSuffix("/") }
    }

    /// The files a bundle holds under `files/`, by relative path, extracted with tar in `scratch`.
    static func files(of bundle: URL, scratch: URL) throws -> [String: Data] {
        let directory = scratch.appendingPathComponent(bundle.lastPathComponent)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let untarred = try Processes.run(["tar", "-xzf", bundle.path, "-C", directory.path])
        #expect(untarred.status == 0, "\(bundle.lastPathComponent) is not a whole bundle: \(untarred.errors)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("manifest.json").path), "\(bundle.lastPathComponent) has no manifest")
        return try ImportCrashTests.contents(of: directory.appendingPathComponent("files"))
    }

    /// `2026-11-23T101500Z`: how a bundle name spells a second.
    static func stampText(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    @Test func twoRunsInOneSecondKeepBothSetsOfOriginals() throws {
        let workspace = try Processes.temporaryDirectory("trust-migrate")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let pristine = workspace.appendingPathComponent("pristine")
        try FileManager.default.copyItem(atPath: CLI.sample("kape"), toPath: pristine.path)
        let originals = try ImportCrashTests.contents(of: pristine)
        #expect(originals.count == 8)
        let saves = workspace.appendingPathComponent("kape")
        try FileManager.default.copyItem(at: pristine, to: saves)

        // Start just after a second begins, so that both runs (a fraction of a second each) share it.
        let fraction = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1)
        usleep(UInt32((1 - fraction) * 1_000_000) + 10_000)
        let first = try CLI.run("migrate", saves.path, "--in-place")
        let migrated = try ImportCrashTests.contents(of: saves)
        // The originals back in place, so that the second run has the same work to do.
        try FileManager.default.removeItem(at: saves)
        try FileManager.default.copyItem(at: pristine, to: saves)
        let second = try CLI.run("migrate", saves.path, "--in-place")

        for run in [first, second] {
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.outputText == "6 migrated, 2 unchanged, 0 skipped, 0 failed\n")
        }
        #expect(try ImportCrashTests.contents(of: saves) == migrated)
        let changed = Set(originals.keys.filter { migrated[$0] != originals[$0] })
        #expect(changed.count == 6, "the three version 1 and three version 2 samples")

        let names = try Self.bundles(of: "kape", in: workspace)
        #expect(names.count == 2, "\(names)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.path).sorted() == (["kape", "pristine"] + names).sorted())
        // Each run named its own bundle; the second never replaced the first.
        var named: [String] = []
        for run in [first, second] {
            let prefix = "savetool: originals of 6 files in \(saves.path) saved in "
            #expect(run.errors.hasPrefix(prefix) && run.errors.hasSuffix("\n") && run.errors.filter { $0 == "\n" }.count == 1, "\(run.errors)")
            named.append(URL(fileURLWithPath: String(run.errors.dropFirst(prefix.count).dropLast())).lastPathComponent)
        }
        #expect(Set(named) == Set(names), "\(named) \(names)")
        let stamps = names.compactMap { Self.stamp(of: $0, argument: "kape") }
        #expect(stamps.count == 2, "\(names)")
        if stamps.count == 2 && stamps[0].time == stamps[1].time {
            #expect(Set(stamps.map { $0.suffix }) == ["", "-2"], "\(names)")
            #expect(named.last?.hasSuffix("-2.tar.gz") == true, "the second run's bundle: \(named)")
        }

        // Each bundle holds exactly the files that changed, as they were, and the folders on their way.
        var kept: [[String: Data]] = []
        for name in names {
            let bundle = workspace.appendingPathComponent(name)
            let entries = try Self.fileEntries(of: bundle)
            #expect(entries.first == "manifest.json", "\(name): \(entries)")
            #expect(Set(entries.dropFirst()) == Set(changed.map { "files/" + $0 }), "\(name): \(entries)")
            #expect(entries.count == changed.count + 1)
            let folders = Set(changed.flatMap { path in
                path.split(separator: "/").dropLast().indices.map { "files/" + path.split(separator: "/")[...$0].joined(separator: "/") + "/" }
            })
            #expect(Set(try Self.entries(of: bundle).filter { $0.hasSuffix("/") }) == folders, "\(name)")
            let files = try Self.files(of: bundle, scratch: workspace.appendingPathComponent("scratch"))
            #expect(files == originals.filter { changed.contains($0.key) }, "\(name) does not hold the originals of the changed files")
            kept.append(files)
        }
        // Every original is in the tree or in a bundle.
        for (path, bytes) in originals {
            let inTree = try Data(contentsOf: saves.appendingPathComponent(path)) == bytes
            #expect(inTree || kept.contains { $0[path] == bytes }, "\(path): its original is lost")
        }
    }

    @Test func aBundleNameAlreadyTakenIsNeverOverwritten() throws {
        let workspace = try Processes.temporaryDirectory("trust-migrate-taken")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let saves = workspace.appendingPathComponent("kape")
        try FileManager.default.copyItem(atPath: CLI.sample("kape"), toPath: saves.path)
        // Someone else's files under the names this run could choose, for every second it may start in.
        let now = Date()
        var decoys: [String: Data] = [:]
        for offset in -2...20 {
            decoys["kape-before-migrate-\(Self.stampText(now.addingTimeInterval(Double(offset)))).tar.gz"] = Data("not mine \(offset)\n".utf8)
        }
        for (name, bytes) in decoys { try bytes.write(to: workspace.appendingPathComponent(name)) }
        #expect(decoys.count == 23)
        let result = try CLI.run("migrate", saves.path, "--in-place")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.outputText == "6 migrated, 2 unchanged, 0 skipped, 0 failed\n")
        for (name, bytes) in decoys {
            #expect(try Data(contentsOf: workspace.appendingPathComponent(name)) == bytes, "\(name) was overwritten")
        }
        let written = try Self.bundles(of: "kape", in: workspace).filter { decoys[$0] == nil }
        #expect(written.count == 1, "\(written)")
        if let name = written.first {
            #expect(name.hasSuffix("-2.tar.gz"), "\(name)")
            #expect(decoys["kape-before-migrate-\(Self.stamp(of: name, argument: "kape")?.time ?? "?").tar.gz"] != nil)
            #expect(result.errors.contains("saved in \(workspace.path)/\(name)"), "\(result.errors)")
            #expect(try Self.fileEntries(of: workspace.appendingPathComponent(name)).count == 7)
        }
    }

    @Test func anAlreadyMigratedTreeWritesNoBundle() throws {
        let workspace = try Processes.temporaryDirectory("trust-migrate-again")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let saves = workspace.appendingPathComponent("kape")
        try FileManager.default.copyItem(atPath: CLI.sample("kape"), toPath: saves.path)
        let first = try CLI.run("migrate", saves.path, "--in-place")
        #expect(first.status == 0 && first.outputText == "6 migrated, 2 unchanged, 0 skipped, 0 failed\n", "\(first.errors)")
        #expect(try Self.bundles(of: "kape", in: workspace).count == 1)
        let listing = try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted()
        let contents = try ImportCrashTests.contents(of: workspace)

        let again = try CLI.run("migrate", saves.path, "--in-place")
        #expect(again.status == 0)
        #expect(again.outputText == "0 migrated, 8 unchanged, 0 skipped, 0 failed\n")
        #expect(again.errors.isEmpty, "\(again.errors)")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: workspace.path).sorted() == listing)
        #expect(try ImportCrashTests.contents(of: workspace) == contents)
        #expect(try CLI.run("migrate", saves.path, "--check").status == 0)
    }

    @Test func aSingleFileIsSavedAloneBesideItself() throws {
        let workspace = try Processes.temporaryDirectory("trust-migrate-file")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let documents = workspace.appendingPathComponent("device/Documents")
        try FileManager.default.createDirectory(at: documents.appendingPathComponent("games"), withIntermediateDirectories: true)
        let file = documents.appendingPathComponent("current_tournament.json")
        try FileManager.default.copyItem(atPath: CLI.sample("kape/history/2024-v1/Documents/current_tournament.json"), toPath: file.path)
        // Neighbours that a migration of the whole folder would change: left alone, and not in the bundle.
        try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v1-fresh.json"), toPath: documents.appendingPathComponent("games/old.json").path)
        try FileManager.default.copyItem(atPath: CLI.sample("kape/history/2025-v2/Documents/current_tournament.json"), toPath: workspace.appendingPathComponent("device/current_tournament.json").path)
        let original = try Data(contentsOf: file)
        let before = try ImportCrashTests.contents(of: workspace)

        let result = try CLI.run("migrate", file.path, "--in-place")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.outputText == "1 migrated, 0 unchanged, 0 skipped, 0 failed\n")
        let names = try Self.bundles(of: "current_tournament.json", in: documents)
        #expect(names.count == 1, "\(names)")
        let name = try #require(names.first)
        #expect(result.errors == "savetool: originals of 1 file in \(file.path) saved in \(documents.path)/\(name)\n")
        // Nothing else written anywhere, and only the file given changed.
        let after = try ImportCrashTests.contents(of: workspace)
        #expect(Set(after.keys).subtracting(before.keys) == ["device/Documents/\(name)"])
        for (path, bytes) in before where path != "device/Documents/current_tournament.json" {
            #expect(after[path] == bytes, "\(path) changed")
        }
        #expect(after["device/Documents/current_tournament.json"] != original)
        #expect(try CLI.run("validate", file.path).outputText.contains("kape.tournament version 3 of 3"))

        let bundle = documents.appendingPathComponent(name)
        #expect(try Self.entries(of: bundle) == ["manifest.json", "files/current_tournament.json"])
        #expect(try Self.files(of: bundle, scratch: workspace.appendingPathComponent("scratch")) == ["current_tournament.json": original])
    }

    /// A name holding one of the private-use characters that carry bytes of names that are not
    /// UTF-8 (U+EF80) is its own name: its original is kept, not a neighbour's whose name is
    /// the byte 0x80 that character stands for.
    @Test func aNameHoldingAnEscapeCharacterKeepsItsOwnOriginal() throws {
        let workspace = try Processes.temporaryDirectory("trust-migrate-pua")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let folder = workspace.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let name = "pua\u{EF80}.json"
        try FileManager.default.copyItem(atPath: CLI.sample("kape/history/2024-v1/Documents/current_tournament.json"), toPath: folder.appendingPathComponent(name).path)
        let original = try Data(contentsOf: folder.appendingPathComponent(name))
        let neighbour = try Processes.run(["python3", "-c", "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2].encode() + b'/pua\\x80.json')",
                                           CLI.sample("kape/history/2024-v1-finished/Documents/current_tournament.json"), folder.path])
        #expect(neighbour.status == 0, "\(neighbour.errors)")
        for (argument, given) in [("saves", folder.path), (name, folder.appendingPathComponent(name).path)] {
            let result = try CLI.run("migrate", given, "--in-place", "--kind", "kape.tournament")
            #expect(result.errors.contains("originals of 1 file"), "\(argument): \(result.errors)")
            let names = try Self.bundles(of: argument, in: argument == "saves" ? workspace : folder)
            let bundle = try #require(names.first.map { (argument == "saves" ? workspace : folder).appendingPathComponent($0) })
            let kept = try Processes.run(["tar", "-xzOf", bundle.path, "files/" + name])
            #expect(kept.status == 0 && Data(kept.output) == original, "\(argument): \(kept.errors)")
            try original.write(to: folder.appendingPathComponent(name))  // back to version 1 for the next case
        }
    }

    /// SIGKILL at 20 moments spread over `migrate --in-place` of 2,000 files, on the same tree
    /// each time: after every kill, each original is in the tree or in a bundle beside it, and
    /// each file is whole (the original or the migrated bytes). A last complete run finishes the job.
    @Test func killedMigrationsNeverLoseAnOriginal() throws {
        let workspace = try Processes.temporaryDirectory("migrate-crash")
        defer { try? FileManager.default.removeItem(at: workspace) }
        // 2,000 devices' tournaments at version 1, written compactly, each a little different.
        var template = try Codecs.value(String(contentsOfFile: CLI.sample("kape/history/2024-v1/Documents/current_tournament.json"), encoding: .utf8))
        var pristine: [String: Data] = [:]
        for index in 0..<2000 {
            try template.setValue(.string("deck-\(index)"), at: JSONPointer(tokens: ["deckId"]))
            try template.setValue(.int(UInt64(index % 9)), at: JSONPointer(tokens: ["roundIndex"]))
            pristine["dev-\(index)/Documents/current_tournament.json"] = Data(try Codecs.compactJSON(template).utf8)
        }
        #expect(pristine.count == 2000)
        #expect(Set(pristine.values).count == 2000)

        // One run, not killed, on a copy: how long a run takes, and what every file becomes.
        let copy = workspace.appendingPathComponent("copy")
        try ImportCrashTests.write(pristine, into: copy)
        var started = Date()
        let measured = try CLI.run("migrate", copy.path, "--in-place")
        let fullRun = Date().timeIntervalSince(started)
        #expect(measured.status == 0, "\(measured.errors)")
        #expect(measured.outputText == "2000 migrated, 0 unchanged, 0 skipped, 0 failed\n")
        let expected = try ImportCrashTests.contents(of: copy)
        #expect(expected.count == 2000)
        #expect(pristine.allSatisfy { expected[$0.key] != nil && expected[$0.key] != $0.value })
        let copyBundles = try Self.bundles(of: "copy", in: workspace)
        #expect(copyBundles.count == 1)
        #expect(try copyBundles.first.map { try Self.fileEntries(of: workspace.appendingPathComponent($0)).count } == 2001)
        // A run with nothing to change: what every run costs however much is left, and no bundle.
        started = Date()
        let idle = try CLI.run("migrate", copy.path, "--in-place")
        let fixedCost = Date().timeIntervalSince(started)
        #expect(idle.outputText == "0 migrated, 2000 unchanged, 0 skipped, 0 failed\n", "\(idle.errors)")
        #expect(try Self.bundles(of: "copy", in: workspace) == copyBundles)
        try FileManager.default.removeItem(at: copy)

        let tree = workspace.appendingPathComponent("saves")
        try ImportCrashTests.write(pristine, into: tree)
        let scratch = workspace.appendingPathComponent("scratch")
        var kept: [String: [String: Data]] = [:]  // bundle name → its files, extracted once

        /// Checks the tree and the bundles beside it; returns the files still at their original bytes.
        func check(_ moment: String, unmigratedBefore: Set<String>) throws -> Set<String> {
            for name in try Self.bundles(of: "saves", in: workspace) where kept[name] == nil {
                let files = try Self.files(of: workspace.appendingPathComponent(name), scratch: scratch)
                // The files that were to change in that run: those not migrated when it started.
                #expect(Set(files.keys) == unmigratedBefore, "\(moment): \(name) holds \(files.count) files, expected the \(unmigratedBefore.count) not yet migrated")
                let altered = files.filter { pristine[$0.key] != $0.value }.keys.sorted()
                #expect(altered.isEmpty, "\(moment): \(name) holds \(altered.count) files that are not originals, e.g. \(altered.prefix(3))")
                kept[name] = files
            }
            var unmigrated = Set<String>(), lost: [String] = [], torn: [String] = []
            for (path, original) in pristine {
                let now = try? Data(contentsOf: tree.appendingPathComponent(path))
                if now == original {
                    unmigrated.insert(path)
                    continue
                }
                if now != expected[path] { torn.append(path) }
                if !kept.values.contains(where: { $0[path] == original }) { lost.append(path) }
            }
            #expect(lost.isEmpty, "\(moment): \(lost.count) originals are neither in the tree nor in a bundle, e.g. \(lost.sorted().prefix(3))")
            #expect(torn.isEmpty, "\(moment): \(torn.count) files are neither the original nor the migrated bytes, e.g. \(torn.sorted().prefix(3))")
            return unmigrated
        }

        var unmigrated = Set(pristine.keys)
        var outcomes = (untouched: 0, partial: 0, finished: 0)
        var killed = 0
        for round in 0..<20 {
            // Kill times spread over the run's expected length, which shrinks as files get done.
            let expectedLength = fixedCost + max(fullRun - fixedCost, 0) * Double(unmigrated.count) / Double(pristine.count)
            let delay = expectedLength * (Double(round) + 0.5) / 20
            if try Processes.runKilled(after: delay, [CLI.executable, "migrate", tree.path, "--in-place", "-q"]) { killed += 1 }
            let before = unmigrated
            unmigrated = try check("round \(round) (killed after \(Int(delay * 1000)) ms)", unmigratedBefore: before)
            if unmigrated == before {
                outcomes.untouched += 1
            } else if unmigrated.isEmpty {
                outcomes.finished += 1
            } else {
                outcomes.partial += 1
            }
        }
        // Kills landed before any file was replaced and in the middle of the replacing.
        #expect(killed > 0)
        #expect(outcomes.untouched > 0 && outcomes.partial > 0, "untouched \(outcomes.untouched), partial \(outcomes.partial), finished \(outcomes.finished)")

        // One complete run migrates the rest, saving exactly those first, and nothing is lost.
        let bundlesBefore = try Self.bundles(of: "saves", in: workspace)
        let final = try CLI.run("migrate", tree.path, "--in-place")
        #expect(final.status == 0, "\(final.errors)")
        #expect(final.outputText == "\(unmigrated.count) migrated, \(2000 - unmigrated.count) unchanged, 0 skipped, 0 failed\n")
        #expect(try Self.bundles(of: "saves", in: workspace).count == bundlesBefore.count + (unmigrated.isEmpty ? 0 : 1))
        let left = try check("after the complete run", unmigratedBefore: unmigrated)
        #expect(left.isEmpty, "\(left.count) files still at their original bytes")
        for (path, bytes) in expected {
            #expect(try Data(contentsOf: tree.appendingPathComponent(path)) == bytes, "\(path) is not migrated")
        }
        // What killed runs left unfinished is gone: no temporary file in the tree or beside it.
        let leftovers = (FileManager.default.enumerator(atPath: workspace.path)?.allObjects as? [String] ?? [])
            .filter { $0.contains(".savetool-") && !$0.hasPrefix("scratch") }
        #expect(leftovers.isEmpty, "\(leftovers.count) temporary files left, e.g. \(leftovers.prefix(3))")
    }
}
