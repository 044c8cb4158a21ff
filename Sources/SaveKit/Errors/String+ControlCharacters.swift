extension String {
    /// The text on one line, as a terminal should show it: control characters escaped (`\n`,
    /// `\t`, `\x1B`, `\u0085`), and backslashes too when `backslashes` (so that the escapes
    /// cannot be told from the text). A name or a key quoted in a message cannot then fake a
    /// line of output of its own, or send the terminal an escape sequence.
    public func escapingControlCharacters(backslashes: Bool = false) -> String {
        func control(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) }
        guard unicodeScalars.contains(where: { control($0) || (backslashes && $0 == "\\") }) else { return self }
        var result = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\\" where backslashes: result += "\\\\"
            case _ where control(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += scalar.value < 0x80 ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex : "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
