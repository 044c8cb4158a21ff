import Crypto
import Foundation
import SaveKit
import SaveSync

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may do what: the server's tokens file, a JSON array of
/// `{"name", "sha256", "spaces", "access"}`. Only each token's SHA-256 is kept, so the file
/// gives nobody a token; `spaces` are patterns (`blocks/*`, where `*` matches any characters,
/// `/` included), and `access` is `read`, `write` (pushes) or `admin` (restore, forced pushes).
public struct TokenList: Sendable {
    public enum Access: String, Sendable, Comparable, CaseIterable {
        case read, write, admin

        public static func < (left: Access, right: Access) -> Bool {
            allCases.firstIndex(of: left)! < allCases.firstIndex(of: right)!
        }
    }

    public struct Entry: Sendable {
        public var name: String
        public var sha256: String
        public var spaces: [String]
        public var access: Access

        public init(name: String, sha256: String, spaces: [String], access: Access) {
            (self.name, self.sha256, self.spaces, self.access) = (name, sha256, spaces, access)
        }

        /// Whether the token reaches `space`.
        public func covers(_ space: String) -> Bool {
            spaces.contains { pattern in fnmatch(pattern, space, 0) == 0 }
        }
    }

    public private(set) var entries: [Entry]
    private var byHash: [String: Int] = [:]

    public init(entries: [Entry]) {
        self.entries = entries
        for (index, entry) in entries.enumerated() { byHash[entry.sha256] = index }
    }

    /// Reads a tokens file; a file that is not what it should be is an error naming the place.
    public init(file: String) throws {
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
        let document: SaveValue
        do { document = try JSONCodec().decode(bytes) } catch { throw SaveError(reading: error, file: file) }
        guard let items = document.arrayValue else { throw SaveError(.badData, file: file, location: "/", "\(document.typeNameWithArticle), expected an array of tokens") }
        var entries: [Entry] = []
        for (index, item) in items.enumerated() {
            let fields = item.dictionaryValue ?? [:]
            func text(_ key: String) throws -> String {
                guard let value = fields[key]?.stringValue else {
                    throw SaveError(.badData, file: file, location: "/\(index)/\(key)", "missing or not a string, expected the token's \(key)")
                }
                return value
            }
            let hash = try text("sha256").lowercased()
            guard hash.count == 64, hash.allSatisfy(\.isHexDigit) else {
                throw SaveError(.badData, file: file, location: "/\(index)/sha256", "\"\(hash.prefix(70))\", expected 64 hexadecimal digits (the SHA-256 of the token)")
            }
            guard let access = Access(rawValue: try text("access")) else {
                throw SaveError(.badData, file: file, location: "/\(index)/access", "expected read, write or admin")
            }
            guard let spaces = fields["spaces"]?.arrayValue?.compactMap(\.stringValue), !spaces.isEmpty else {
                throw SaveError(.badData, file: file, location: "/\(index)/spaces", "expected an array of space patterns, such as [\"blocks/*\"]")
            }
            // As `token add` checks them: a pattern no space can match would reach nothing.
            for (place, pattern) in spaces.enumerated() {
                if let problem = Self.problem(ofPattern: pattern) { throw SaveError(.badData, file: file, location: "/\(index)/spaces/\(place)", problem) }
            }
            entries.append(Entry(name: fields["name"]?.stringValue ?? "token \(index + 1)", sha256: hash, spaces: spaces, access: access))
        }
        self.init(entries: entries)
    }

    /// The entry of a presented token, or `nil` for one the file does not list.
    public func entry(for token: String) -> Entry? {
        byHash[Self.hash(token)].map { entries[$0] }
    }

    public static func hash(_ token: String) -> String { Checksum.hex(SHA256.hash(data: Array(token.utf8))) }

    /// Why a space pattern can never match, or `nil`: space names are made of `A-Z a-z 0-9 . _ -`
    /// and `/`, so a pattern with any other character but `*` reaches nothing (a token that
    /// would answer 403 to everything, silently).
    public static func problem(ofPattern pattern: String) -> String? {
        guard let odd = pattern.utf8.first(where: { !(SlotAddress.isNameByte($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "*")) }) else {
            return pattern.isEmpty ? "an empty pattern, expected a space pattern such as blocks/*" : nil
        }
        let shown = odd == UInt8(ascii: " ") ? "a space" : odd < 0x80 ? "the character \(Character(UnicodeScalar(odd)))" : "a character beyond ASCII"
        return "the pattern \"\(pattern)\" has \(shown), which no space name has (A-Z a-z 0-9 . _ - and /, with * for any)"
    }

    /// A new random token (32 bytes, hexadecimal) and its entry.
    public static func make(name: String, spaces: [String], access: Access) -> (token: String, entry: Entry) {
        var generator = SystemRandomNumberGenerator()
        let token = "st_" + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        return (token, Entry(name: name, sha256: hash(token), spaces: spaces, access: access))
    }

    /// The file's text, an entry per line.
    public var json: [UInt8] {
        var options = EncodingOptions()
        options.pretty = true
        let value = SaveValue.array(entries.map { entry in
            .dictionary(["name": .string(entry.name), "sha256": .string(entry.sha256), "spaces": .array(entry.spaces.map(SaveValue.string)), "access": .string(entry.access.rawValue)])
        })
        return (try? JSONCodec().encode(value, options: options)) ?? []
    }
}
