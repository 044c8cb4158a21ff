import Foundation
import SaveKit

public enum Console {
    /// Run before a warning is printed: savetool erases its progress bar there.
    nonisolated(unsafe) public static var beforeMessage: (() -> Void)?

    public static func error(_ line: String) {
        // A standard error that cannot be written has no one to tell.
        _ = Array((line + "\n").utf8).withUnsafeBytes { FileIO.writeAll($0, to: STDERR_FILENO) }
    }

    public static func output(_ text: String) {
        output(Array(text.utf8))
    }

    /// Writes to standard output. One that cannot be written (a full device, a closed
    /// descriptor) ends the command with exit 74 and a message: what it was to print is lost,
    /// and saying nothing would report a success. (`FileHandle.write` would trap instead.)
    public static func output(_ bytes: [UInt8]) {
        let failure = bytes.withUnsafeBytes { FileIO.writeAll($0, to: STDOUT_FILENO) }
        guard failure != 0 else { return }
        error("savetool: <stdout>: writing failed: \(FileError.reason(failure))")
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
