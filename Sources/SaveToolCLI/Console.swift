import Foundation
import SaveKit

public enum Console {
    /// Run before a warning is printed: savetool erases its progress bar there.
    nonisolated(unsafe) public static var beforeMessage: (() -> Void)?

    /// Writes one line to standard error, on one line whatever names it quotes (control
    /// characters escaped).
    public static func error(_ line: String) {
        // A standard error that cannot be written has no one to tell.
        _ = Array((line.escapingControlCharacters() + "\n").utf8).withUnsafeBytes { FileIO.writeAll($0, to: STDERR_FILENO) }
    }

    public static func output(_ text: String) {
        output(Array(text.utf8))
    }

    /// Writes lines of a command's report to standard output, each on one line whatever the
    /// names in it hold (control characters escaped), as standard error's are.
    public static func outputLines(_ lines: [String]) {
        output(lines.map { $0.escapingControlCharacters() + "\n" }.joined())
    }

    /// Why standard output could not be written, once it could not.
    nonisolated(unsafe) public private(set) static var outputFailure: String?

    /// Writes to standard output. One that cannot be written (a full device, a closed
    /// descriptor) is remembered, and nothing more is sent to it: the command finishes what it
    /// does (its files written and flushed, its temporary files removed), then ends with exit 74
    /// and a message (``finish()``): what it was to print is lost, and saying nothing would
    /// report a success. (`FileHandle.write` would trap instead.)
    public static func output(_ bytes: [UInt8]) {
        guard outputFailure == nil else { return }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll($0, to: STDOUT_FILENO) }
        if failure != 0 { outputFailure = FileError.reason(failure) }
    }

    /// Standard input, output and error that were closed when savetool started are opened on
    /// /dev/null: otherwise the next file or socket opened (libcurl's, say) would take the
    /// number, and output meant for the terminal would go into it. A closed standard output is
    /// still an output failure (exit 74), as a full one is.
    public static func protectStandardDescriptors() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if opened >= 0 && opened != descriptor {
                dup2(opened, descriptor)
                close(opened)
            }
            if descriptor == STDOUT_FILENO { outputFailure = FileError.reason(EBADF) }
        }
    }

    /// After a command that ran: exit 74 if its output could not be written.
    public static func finish() {
        guard let outputFailure else { return }
        error("savetool: <stdout>: writing failed: \(outputFailure)")
        exit(Failure.Code.ioError)
    }

    /// Prints a value as pretty JSON (for `--json` output).
    public static func outputJSON(_ value: SaveValue) throws {
        output(try JSONCodec().encode(value))
    }

    /// A value as one line of compact JSON, newline included: a line of JSON Lines output
    /// (`migrate --json`, its `--report`, `sync --json`).
    public static func jsonLine(_ value: SaveValue) throws -> String {
        var compact = EncodingOptions()
        compact.pretty = false
        return String(decoding: try JSONCodec().encode(value, options: compact), as: UTF8.self)
    }
}
