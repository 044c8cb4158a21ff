import Foundation
import TestSupport
import Testing

/// A backup repository that tells the truth: made on first use, missing means an error, a
/// failing backup fails the listing, one name is one source, and a repository inside its source
/// does not back itself up.
@Suite("backup repositories tell the truth")
struct RepositoryTruthTests {
    @Test func missingRepositoriesFailAndCreateMakesOne() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let repository = directory.appendingPathComponent("nested/backups").path
        for command in [["list"], ["verify"], ["prune"]] {
            let result = try Processes.run([CLI.executable, "backup"] + command + ["--repo", repository])
            #expect(result.status == 66, "\(command): \(result.errors)")
            #expect(result.errors.hasPrefix("savetool: \(repository): no such backup repository"), "\(result.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: repository))
        let created = try CLI.run("backup", "create", CLI.sample("kape"), "--repo", repository, "--date", "2026-11-20")
        #expect(created.status == 0, "\(created.errors)")
        #expect(created.outputText.hasPrefix("created repository \(repository)\ncreated: \(repository)/kape-2026-11-20.tar.gz"), "\(created.outputText)")
        let again = try CLI.run("backup", "create", CLI.sample("kape"), "--repo", repository, "--date", "2026-11-20")
        #expect(again.outputText.hasPrefix("unchanged: "), "\(again.outputText)")
        // A damaged backup makes the listing fail. The byte flipped is three quarters in, in the
        // compressed files: a byte elsewhere may be a gzip member's time, which no reader checks.
        let backup = repository + "/kape-2026-11-20.tar.gz"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: backup))
        bytes[bytes.count * 3 / 4] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: backup))
        let listed = try CLI.run("backup", "list", "--repo", repository)
        #expect(listed.status == 65 && listed.outputText.contains("FAILS"), "\(listed.outputText) \(listed.errors)")
    }

    @Test func oneNameIsOneSource() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let repository = directory.appendingPathComponent("backups").path
        for app in ["first", "second"] {
            let documents = directory.appendingPathComponent("\(app)/Documents")
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            try Data("{\"app\": \"\(app)\"}".utf8).write(to: documents.appendingPathComponent("state.json"))
        }
        let first = try CLI.run("backup", "create", directory.appendingPathComponent("first/Documents").path, "--repo", repository, "--date", "2026-11-20")
        #expect(first.status == 0, "\(first.errors)")
        let second = try CLI.run("backup", "create", directory.appendingPathComponent("second/Documents").path, "--repo", repository, "--date", "2026-11-20")
        #expect(second.status == 64, "\(second.outputText) \(second.errors)")
        #expect(second.errors.contains("a backup of \(directory.appendingPathComponent("first/Documents").path) under the name Documents"), "\(second.errors)")
        #expect(second.errors.contains("--name"), "\(second.errors)")
        let named = try CLI.run("backup", "create", directory.appendingPathComponent("second/Documents").path, "--repo", repository, "--date", "2026-11-20", "--name", "second")
        #expect(named.status == 0, "\(named.errors)")
        // The first app's backup is untouched and still restores its own file.
        let restored = directory.appendingPathComponent("restored").path
        #expect(try CLI.run("import", repository + "/Documents-2026-11-20.tar.gz", "--into", restored).status == 0)
        #expect(try String(contentsOfFile: restored + "/state.json", encoding: .utf8) == "{\"app\": \"first\"}")
    }

    /// A repository inside the folder it backs up is left out of its backups, and stays in
    /// place through a restore of one of them (docs/backups.md).
    @Test func aRepositoryInsideItsSourceIsLeftOutAndKeptThroughARestore() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: source.appendingPathComponent("save.json"))
        let repository = source.appendingPathComponent("backups").path
        for day in ["2026-11-20", "2026-11-21"] {
            let result = try CLI.run("backup", "create", source.path, "--repo", repository, "--date", day)
            #expect(result.status == 0 && result.outputText.contains("(1 file)"), "\(result.outputText) \(result.errors)")
        }
        let listing = try Processes.run(["tar", "-tzf", repository + "/Documents-2026-11-21.tar.gz"])
        #expect(listing.outputText == "manifest.json\nfiles/save.json\n", "\(listing.outputText)")
        // So a restore of one of them leaves the repository where it was, every day's backup
        // with it: the import swapped it out with the rest of the folder's old contents.
        try Data(#"{"today": true}"#.utf8).write(to: source.appendingPathComponent("save.json"))
        let before = try FileManager.default.contentsOfDirectory(atPath: repository).sorted()
        let restored = try CLI.run("import", repository + "/Documents-2026-11-21.tar.gz", "--into", source.path, "--no-migrate")
        #expect(restored.status == 0, "\(restored.errors)")
        #expect(restored.errors.contains("the backup repository backups inside the folder, which its backups leave out, is kept in place"), "\(restored.errors)")
        #expect(try String(contentsOf: source.appendingPathComponent("save.json"), encoding: .utf8) == "{}")
        #expect(try FileManager.default.contentsOfDirectory(atPath: repository).sorted() == before)
        #expect(try CLI.run("backup", "list", "--repo", repository).outputText.components(separatedBy: "verified").count == 3)
    }
}
