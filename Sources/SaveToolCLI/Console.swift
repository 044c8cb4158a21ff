import Foundation
import SaveKit

public enum Console {
    /// Run before a warning is printed: savetool erases its progress bar there.
    nonisolated(unsafe) public static var beforeMessage: (() -> Void)?

    public static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    public static func output(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    public static func output(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
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
