import Foundation
import TestSupport
import Testing

/// Runs the built `savetool` binary.
enum CLI {
    static let executable: String = {
        // The test runner and the tool are built into the same directory.
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: runner).deletingLastPathComponent()
        while directory.path != "/" && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("savetool").path) {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("savetool").path
    }()

    static func run(_ arguments: String..., input: [UInt8] = [], directory: URL? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
        try Processes.run([executable] + arguments, input: input, directory: directory, environment: environment)
    }

    static func sample(_ path: String) -> String {
        Corpus.packageRoot.appendingPathComponent("samples").appendingPathComponent(path).path
    }

    /// How many files `samples/` holds, so that tests exporting it need no update when a sample is added.
    static let sampleFileCount = Files.regularFiles(under: Corpus.packageRoot.appendingPathComponent("samples").path).count

    static let blocks = sample("blocks/Library/Preferences/com.example.blocks.plist")
    static let kingdoms = sample("kingdom/Library/Preferences/com.example.kingdoms.plist")
    static let tournament = sample("kape/Documents/current_tournament.json")
}

extension ProcessResult {
    /// The error line's `<file>:<where>:` part matches `pattern`.
    func errorMatches(_ pattern: String) -> Bool {
        errors.range(of: pattern, options: .regularExpression) != nil
    }
}
