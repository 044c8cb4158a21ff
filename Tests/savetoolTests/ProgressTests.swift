import Foundation
import TestSupport
import Testing

/// Export, import, backup create and verify draw one line of progress on stderr when it is a
/// terminal (run here under a pseudo-terminal with `script`), and nothing into a pipe, with
/// `--json` or with `-q`.
@Suite("progress")
struct ProgressTests {
    /// Runs `arguments` under a pseudo-terminal; everything it wrote, stdout and stderr together.
    static func onATerminal(_ arguments: [String], in directory: URL) throws -> (status: Int32, text: String) {
        let command = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let result = try Processes.run(["script", "-qefc", command, "/dev/null"], directory: directory)
        return (result.status, result.outputText)
    }

    @Test func aTerminalSeesProgressAndAPipeDoesNot() throws {
        let directory = try Processes.temporaryDirectory("progress")
        defer { try? FileManager.default.removeItem(at: directory) }
        let samples = CLI.sample("")
        let cases: [(arguments: [String], label: String)] = [
            (["export", samples, "-o", "s.tar.gz"], "exporting: "),
            (["import", "s.tar.gz", "--into", "restored"], "importing: "),
            (["backup", "create", samples, "--repo", "repo", "--name", "samples"], "backing up: "),
            (["backup", "verify", "--repo", "repo"], "verifying: "),
        ]
        for (arguments, label) in cases {
            let terminal = try Self.onATerminal([CLI.executable] + arguments, in: directory)
            #expect(terminal.status == 0, "\(arguments): \(terminal.text)")
            #expect(terminal.text.contains("\r" + label), "\(arguments): \(terminal.text)")
            #expect(terminal.text.contains(" entries, "), "\(arguments)")
            // Erased at the end: what stays is the command's own output.
            #expect(terminal.text.contains("\r\u{1B}[K"), "\(arguments)")
            let quiet = try Self.onATerminal([CLI.executable] + arguments + ["-q"], in: directory)
            #expect(!quiet.text.contains(label), "\(arguments) -q")
            let json = try Self.onATerminal([CLI.executable, "--json"] + arguments, in: directory)
            #expect(!json.text.contains(label), "--json \(arguments)")
        }
        let piped = try Processes.run([CLI.executable, "export", samples, "-o", "p.tar.gz"], directory: directory)
        #expect(piped.status == 0 && !piped.errors.contains("exporting: ") && !piped.outputText.contains("exporting: "))
    }
}
