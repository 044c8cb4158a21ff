import Foundation
import SaveKit
import TestSupport
import Testing

/// The built-in kinds' fingerprints are specific enough to recognise every sample away from
/// its usual path (a save copied elsewhere), and to claim none of the ordinary files.
@Suite("built-in fingerprints")
struct FingerprintTests {
    @Test func everyStandaloneSampleIsRecognisedByItsContentAlone() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let samples = Corpus.packageRoot.appendingPathComponent("samples").path
        let files = Files.regularFiles(under: samples)
        #expect(files.count == CLI.sampleFileCount)
        var compared = 0
        for file in files {
            let atPath = try CLI.run("--json", "validate", samples + "/" + file)
            let byPath = try Codecs.value(atPath.outputText)
            #expect(atPath.status == 0 && byPath["kind"] != nil, "\(file): \(atPath.outputText) \(atPath.errors)")
            // The same bytes under a name no kind claims.
            let copy = directory.appendingPathComponent(file.replacingOccurrences(of: "/", with: "_")).path
            try FileManager.default.copyItem(atPath: samples + "/" + file, toPath: copy)
            let byContent = try Codecs.value(try CLI.run("--json", "validate", copy).outputText)
            #expect(byContent["kind"] == byPath["kind"] && byContent["version"] == byPath["version"], "\(file): \(byContent)")
            #expect(byContent["why"]?.stringValue?.hasPrefix("its content matches the") == true, "\(file)")
            #expect(byContent["why"]?.stringValue?.contains("fingerprint of version") == true, "\(file)")
            compared += 1
        }
        #expect(compared == files.count)
    }

    /// Near misses: a key or a type short of a fingerprint claims nothing.
    /// Two kinds whose fingerprints both match a file: validate names them, rather than
    /// saying that no kind recognises it.
    @Test func aFileTwoKindsRecogniseIsSaidToBeSo() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let formats = directory.appendingPathComponent("formats/other.sudoku")
        try FileManager.default.createDirectory(at: formats.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Corpus.packageRoot.appendingPathComponent("Formats/sudoku.game"), to: formats)
        for name in try FileManager.default.contentsOfDirectory(atPath: formats.path) {
            let definition = formats.appendingPathComponent(name)
            let renamed = try String(contentsOf: definition, encoding: .utf8)
                .replacingOccurrences(of: #""kind": "sudoku.game""#, with: #""kind": "other.sudoku""#)
                .replacingOccurrences(of: #""files": ["Documents/games/*.json"]"#, with: #""files": ["Other/*.json"]"#)
            try Data(renamed.utf8).write(to: definition)
        }
        let file = directory.appendingPathComponent("game.json").path
        try FileManager.default.copyItem(atPath: Corpus.packageRoot.appendingPathComponent("samples/sudoku/Documents/games/v2-paused.json").path, toPath: file)
        let result = try CLI.run("--formats", formats.deletingLastPathComponent().path, "validate", file)
        #expect(result.status == 65)
        #expect(result.errors == "savetool: \(file): recognised by the fingerprints of 2 kinds (other.sudoku, sudoku.game), expected one (name it with --kind)\n", "\(result.errors)")
        #expect(try CLI.run("--formats", formats.deletingLastPathComponent().path, "validate", file, "--kind", "sudoku.game").status == 0)
    }

    @Test func nearMissesAreNobodysSave() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let nearMisses = [
            #"{"scores": {"a": 1}, "roundIndex": 2, "players": ["a"]}"#,  // no deckId
            #"{"roundIndex": 2, "players": "a", "deckId": "x"}"#,  // players not a list
            #"{"round": 2, "activePlayerIndex": 0, "players": [], "deckId": "x"}"#,  // no status
            #"{"board": "1", "seconds": 3, "puzzleId": "p"}"#,  // no completed
            #"{"board": "1", "timer": 3, "puzzleId": "p", "completed": false}"#,  // timer not an object
            #"{"version": 2, "name": "x"}"#, #"{"schemaVersion": 3}"#, #"{"saveVersion": 1, "playerLevel": 3}"#,
        ]
        for (index, text) in nearMisses.enumerated() {
            let file = directory.appendingPathComponent("miss-\(index).json")
            try Data(text.utf8).write(to: file)
            let inspected = try CLI.run("--json", "inspect", file.path)
            let value = try Codecs.value(inspected.outputText)
            #expect(inspected.status == 0 && value["kind"] == nil, "\(text): \(inspected.outputText)")
        }
    }
}
