import Foundation
import TestSupport
import Testing

/// The help text is the documentation a user of the binary has: every command's `--help` is
/// kept as a snapshot in `Fixtures/help/` (regenerate them with `scripts/help-snapshots` after
/// changing a help text, and read the diff), and every command shows at least one example.
@Suite("help")
struct HelpTests {
    static let commands = [
        "", "convert", "get", "set", "remove", "diff", "inspect", "validate", "migrate", "merge", "export", "import",
        "formats", "formats list", "formats show", "formats new", "backup", "backup create", "backup list", "backup verify", "backup prune",
        "serve", "serve run", "serve token", "sync",
    ]

    static func help(_ command: String) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "100"
        let arguments = command.split(separator: " ").map(String.init) + ["--help"]
        let result = try Processes.run([CLI.executable] + arguments, environment: environment)
        #expect(result.status == 0, "\(command): \(result.errors)")
        return result.outputText
    }

    static func snapshot(_ command: String) -> URL {
        Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/help")
            .appendingPathComponent((command.isEmpty ? "savetool" : "savetool " + command).replacingOccurrences(of: " ", with: "-") + ".txt")
    }

    @Test func everyCommandIsListedHere() throws {
        // A new command must join the list above (and so get a snapshot).
        let top = try Self.help("")
        for command in Self.commands where !command.isEmpty && !command.contains(" ") {
            #expect(top.contains("  \(command) "), "\(command)")
        }
        let snapshots = try FileManager.default.contentsOfDirectory(atPath: Self.snapshot("").deletingLastPathComponent().path)
        #expect(snapshots.count == Self.commands.count)
    }

    @Test(arguments: commands)
    func helpMatchesItsSnapshot(_ command: String) throws {
        let text = try Self.help(command)
        let expected = try String(contentsOf: Self.snapshot(command), encoding: .utf8)
        #expect(text == expected, "savetool \(command) --help changed: run scripts/help-snapshots and review the diff")
    }

    @Test(arguments: commands.filter { !$0.isEmpty })
    func everyCommandShowsAnExample(_ command: String) throws {
        let text = try Self.help(command)
        #expect(text.contains("Example"), "\(command)")
        #expect(text.contains("  savetool \(command.split(separator: " ").last ?? "")") || text.contains("  savetool \(command)"), "\(command)")
    }
}
