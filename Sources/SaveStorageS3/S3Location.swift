import SaveKit

/// `s3://bucket/prefix`: where a repository lives in an object store.
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    public var bucket: String
    /// Empty, or ending without a slash: objects are `<prefix>/<name>`.
    public var prefix: String

    /// Whether `text` names an object store rather than a local folder.
    public static func isRemote(_ text: String) -> Bool { text.hasPrefix("s3://") }

    public init(parsing text: String) throws {
        guard Self.isRemote(text) else { throw SaveError(.usage, file: text, "not an s3:// location, expected s3://bucket/prefix") }
        let rest = text.dropFirst("s3://".count)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bucket = String(parts[0])
        // Bucket names: 3 to 63 lower-case letters, digits, dots and hyphens (path-style addressing).
        guard (3...63).contains(bucket.count), bucket.allSatisfy({ $0.isLowercase && $0.isASCII || $0.isNumber && $0.isASCII || $0 == "-" || $0 == "." }) else {
            throw SaveError(.usage, file: text, "the bucket \"\(bucket)\", expected 3 to 63 lower-case letters, digits, dots or hyphens")
        }
        self.bucket = bucket
        var prefix = parts.count > 1 ? String(parts[1]) : ""
        if prefix.hasSuffix("/") { prefix.removeLast() }  // `s3://bucket/saves/` is `saves`
        // An object store keeps `.`, `..` and empty names as they are, but the HTTP paths that
        // reach them do not: a repository at `saves/p7/..` would write into `saves` and list
        // `saves/p7/..`, out of sight of its own lock and of its other backups.
        if !prefix.isEmpty, let odd = prefix.split(separator: "/", omittingEmptySubsequences: false).first(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            throw SaveError(
                .usage, file: text,
                odd.isEmpty ? "an empty segment (//) in the prefix, expected names separated by single slashes" : "the segment \"\(odd)\" in the prefix, expected names (not . or ..)")
        }
        self.prefix = prefix
    }

    /// The key of an object named `name` in this repository.
    public func key(_ name: String) -> String { prefix.isEmpty ? name : prefix + "/" + name }

    public var description: String { "s3://\(bucket)" + (prefix.isEmpty ? "" : "/" + prefix) }
}
