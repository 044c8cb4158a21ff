/// A path to one value inside a document, as RFC 6901 spells it: `/players/0/name`.
///
/// Keys such as player names may hold `.` or `/`, which is why paths are JSON Pointers and
/// not dotted paths: `~1` stands for `/` and `~0` for `~` inside a key.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The unescaped reference tokens; empty for the whole document.
    public var tokens: [String]

    public init(tokens: [String] = []) { self.tokens = tokens }

    /// Parses the textual form. The empty string is the whole document.
    public init(parsing text: String) throws(PointerError) {
        if text.isEmpty { self.tokens = []; return }
        guard text.hasPrefix("/") else { throw .notAPointer(text) }
        var tokens: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var iterator = raw.makeIterator()
            while let character = iterator.next() {
                guard character == "~" else { token.append(character); continue }
                switch iterator.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default: throw .badEscape(text)
                }
            }
            tokens.append(token)
        }
        self.tokens = tokens
    }

    public static let root = JSONPointer()

    public var isRoot: Bool { tokens.isEmpty }

    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    public func appending(_ index: Int) -> JSONPointer { appending(String(index)) }

    /// `pointer`, which points inside the value here, as a pointer from where this one starts.
    public func appending(_ pointer: JSONPointer) -> JSONPointer {
        JSONPointer(tokens: tokens + pointer.tokens)
    }

    public var parent: JSONPointer? {
        tokens.isEmpty ? nil : JSONPointer(tokens: Array(tokens.dropLast()))
    }

    public var description: String {
        tokens.map { "/" + Self.escape($0) }.joined()
    }

    /// The pointer as shown to people: `''` for the whole document, as the commands take it,
    /// rather than an empty string; `/` is the pointer of the key `""`. (Standard error shows
    /// it on one line; a listing on standard output escapes it itself.)
    public var displayText: String { tokens.isEmpty ? "''" : description }

    public static func escape(_ token: String) -> String {
        // Bytes, not Foundation's `contains`: a pointer is described for every error made.
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return token }
        return token.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

/// Why a JSON Pointer could not be parsed or followed.
public enum PointerError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAPointer(String)
    case badEscape(String)
    case notFound(JSONPointer)
    case notAContainer(JSONPointer, type: String)
    /// `appending`: the pointer was to be written, where the array's length or `-` appends.
    case badIndex(JSONPointer, token: String, count: Int, appending: Bool = false)
    case cannotRemoveRoot

    public var description: String {
        switch self {
        case .notAPointer(let text):
            "'\(text)' is not a JSON Pointer, expected a path starting with '/' such as /players/0/name (or '' for the whole document)"
        case .badEscape(let text):
            "'\(text)' has a '~' not followed by 0 or 1, expected ~0 for '~' and ~1 for '/'"
        case .notFound(let pointer):
            "\(pointer.displayText): no such value, expected an existing key or index"
        case .notAContainer(let pointer, let type):
            "\(pointer.displayText): found \(SaveValue.withArticle(type)), expected a dictionary or an array to look into"
        case .badIndex(let pointer, let token, let count, let appending):
            if appending {
                "\(pointer.displayText): found index '\(token)', expected \(count == 0 ? "0" : "0...\(count)") (\(count) or '-' appends)"
            } else {
                "\(pointer.displayText): found index '\(token)', expected \(count == 0 ? "none: the array is empty" : "0...\(count - 1)")"
            }
        case .cannotRemoveRoot:
            "cannot remove the whole document, expected a pointer to a value inside it"
        }
    }
}
