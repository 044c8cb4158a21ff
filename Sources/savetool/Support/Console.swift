import Foundation
import SaveKit

enum Console {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func output(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func output(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// Prints a value as pretty JSON (for `--json` output).
    static func outputJSON(_ value: SaveValue) throws {
        output(try JSONCodec().encode(value))
    }
}
