import Foundation
import TestSupport
import Testing

/// Every name `import` refuses is refused by `export` and `backup create` too, with its path, so
/// that no backup is written that the documented import cannot restore; a long path round-trips.
@Suite("names export refuses, as import would")
struct ExportNameTests {
    /// Makes `saves/` with the one awkward name `make` writes (given as Python), then exports it.
    static func export(_ make: String) throws -> (result: ProcessResult, backup: ProcessResult, directory: URL) {
        let directory = try Processes.temporaryDirectory()
        let saves = directory.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: saves.appendingPathComponent("ok.json"))
        let made = try Processes.run(["python3", "-c", "import os, sys, unicodedata\nos.chdir(sys.argv[1])\n" + make, saves.path])
        #expect(made.status == 0, "\(made.errors)")
        let result = try CLI.run("export", saves.path, "-o", directory.appendingPathComponent("out.tar.gz").path)
        let backup = try CLI.run("backup", "create", saves.path, "--repo", directory.appendingPathComponent("repo").path)
        return (result, backup, directory)
    }

    @Test(arguments: [
        ("NFC and NFD spellings of one name", #"open(unicodedata.normalize("NFC", "café.json"), "w"); open(unicodedata.normalize("NFD", "café.json"), "w")"#, "Unicode-normalised"),
        ("a backslash", #"open("a\\b.json", "w")"#, "a backslash"),
        ("a name that is not UTF-8", #"open(b"caf\xe9.json", "w")"#, "not UTF-8"),
    ])
    func refusedWithItsPath(_ name: String, _ make: String, _ reason: String) throws {
        let (result, backup, directory) = try Self.export(make)
        defer { try? FileManager.default.removeItem(at: directory) }
        for outcome in [result, backup] {
            #expect(outcome.status == 65, "\(name): \(outcome.errors)")
            #expect(outcome.errors.hasPrefix("savetool: \(directory.path)/saves/") && outcome.errors.contains(reason), "\(name): \(outcome.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out.tar.gz").path))
        let repository = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("repo").path)) ?? []
        #expect(repository.filter { !$0.hasPrefix(".") }.isEmpty, "\(repository)")
    }

    /// A path of 4,000 bytes fits the destination, so it fits the staging area too (written
    /// through directory descriptors), and comes back.
    /// A name with a newline or another control character is a name like any other, and
    /// `inspect` shows it on one line, escaped: it cannot pass for two entries.
    @Test func inspectShowsAControlCharacterEscaped() throws {
        let (result, _, directory) = try Self.export("open('new\\nline\\x1b.txt', 'w').write('x')")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(result.status == 0, "\(result.errors)")
        let shown = try CLI.run("inspect", directory.appendingPathComponent("out.tar.gz").path)
        #expect(shown.outputText.contains("\n  new\\nline\\x1B.txt  1 byte\n"), "\(shown.outputText)")
        #expect(!shown.outputText.contains("\nline"), "\(shown.outputText)")
    }

    @Test func aLongPathRoundTrips() throws {
        let (result, _, directory) = try Self.export(#"p = "/".join(["d%02d" % i + "x" * 196 for i in range(19)]) + "/" + "s" * 150 + ".json"; os.makedirs(os.path.dirname(p)); open(p, "w").write("{}")"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(result.status == 0, "\(result.errors)")
        let restored = directory.appendingPathComponent("r").path
        let imported = try CLI.run("import", directory.appendingPathComponent("out.tar.gz").path, "--into", restored)
        #expect(imported.status == 0, "\(imported.errors)")
        let same = try Processes.run(["diff", "-r", directory.appendingPathComponent("saves").path, restored])
        #expect(same.status == 0, "\(same.outputText.prefix(300)) \(same.errors.prefix(300))")
    }
}
