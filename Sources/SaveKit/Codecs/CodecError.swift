/// Where in a document something was found.
public enum DocumentLocation: Sendable, Equatable, CustomStringConvertible {
    /// In a text format, 1-based, columns counted in Unicode scalars.
    case lineColumn(line: Int, column: Int)
    /// In a binary format, 0-based from the start of the file.
    case byte(Int)
    /// A value of the document, whatever its codec.
    case pointer(JSONPointer)
    /// The document as a whole.
    case document

    public var description: String {
        switch self {
        case .lineColumn(let line, let column): "\(line):\(column)"
        case .byte(let offset): "byte \(offset)"
        case .pointer(let pointer): pointer.displayText
        case .document: "document"
        }
    }

    /// The line and column of a byte offset in UTF-8 text.
    public static func lineColumn(of offset: Int, in bytes: [UInt8]) -> DocumentLocation {
        var line = 1
        var column = 1
        let end = min(offset, bytes.count)
        var index = 0
        while index < end {
            let byte = bytes[index]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {  // count scalars, not UTF-8 continuation bytes
                column += 1
            }
            index += 1
        }
        return .lineColumn(line: line, column: column)
    }
}

/// Why a document could not be read or written.
///
/// Every case carries what was found and what was expected, so that a message reads
/// `savetool: save.plist:byte 412: object reference 90 past the last object (57), expected …`.
public enum CodecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a valid document in this codec.
    case malformed(codec: String, at: DocumentLocation, found: String, expected: String)
    /// A value that the target codec cannot hold, and the options did not say to convert it.
    case unrepresentable(codec: String, at: JSONPointer, found: String, expected: String)
    /// A safety limit (nesting depth, size) was reached.
    case limitExceeded(codec: String, at: DocumentLocation, found: String, expected: String)
    /// No codec has this id.
    case unknownCodec(String, known: [String])
    /// Neither the content nor the name of the file tells its codec.
    case undetectable(hint: String)
    /// A plugin failed or misbehaved.
    case plugin(id: String, message: String)

    public var location: DocumentLocation? {
        switch self {
        case .malformed(_, let at, _, _), .limitExceeded(_, let at, _, _): at
        case .unrepresentable(_, let pointer, _, _): .pointer(pointer)
        default: nil
        }
    }

    /// What was found and what was expected, without ``location``: for an error that names its
    /// place in a field of its own (``SaveError/location``), so that the place is said once.
    public var problem: String {
        switch self {
        case .malformed(_, _, let found, let expected), .limitExceeded(_, _, let found, let expected): "\(found), expected \(expected)"
        case .unrepresentable(let codec, _, let found, let expected): "\(found) cannot be written as \(codec), expected \(expected)"
        default: description
        }
    }

    public var description: String {
        switch self {
        case .malformed(_, let at, let found, let expected), .limitExceeded(_, let at, let found, let expected):
            "\(at): \(found), expected \(expected)"
        case .unrepresentable(let codec, let at, let found, let expected):
            "\(at.displayText): \(found) cannot be written as \(codec), expected \(expected)"
        case .unknownCodec(let id, let known):
            // The names people try first for the plist codecs, from other tools.
            "no codec '\(id)', expected one of: \(known.joined(separator: ", "))"
                + (["xml", "xml1", "xmlplist"].contains(id.lowercased()) && known.contains("plist") ? " (an XML plist is plist)"
                    : ["binary", "binary1", "binaryplist"].contains(id.lowercased()) && known.contains("bplist") ? " (a binary plist is bplist)" : "")
        case .undetectable(let hint):
            "cannot tell the format from the content or the file name, expected \(hint)"
        case .plugin(let id, let message):
            "plugin savetool-codec-\(id): \(message)"
        }
    }
}
