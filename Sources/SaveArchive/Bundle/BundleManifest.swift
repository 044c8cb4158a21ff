import Foundation
import OrderedCollections
import SaveKit

/// The `manifest.json` of a save bundle: what the bundle holds, with a size and a SHA-256 for
/// every file, so that an import can check each byte before anything is written.
public struct BundleManifest: Sendable, Equatable {
    public static let format = "savetool.bundle/1"

    public struct File: Sendable, Equatable {
        /// Relative to the source directory, `/`-separated.
        public var path: String
        public var size: Int64
        /// Lower-case hexadecimal.
        public var sha256: String
        /// Permission bits.
        public var mode: UInt16
        public var modifiedAt: Date
        /// The codec the content was recognised as, when one was.
        public var codec: String?
        public var kind: String?
        public var version: Int?
    }

    public var createdAt: Date
    public var createdBy: String
    public var label: String?
    public var source: String
    /// The absolute path of the source directory, for backups: a repository tells two sources
    /// that share a name apart by it.
    public var sourcePath: String?
    public var files: [File]

    /// The manifest as typed JSON values, keys in the order bundle.md shows them.
    public var value: SaveValue {
        var root: OrderedDictionary<String, SaveValue> = [
            "format": .string(Self.format),
            "createdAt": .string(Self.timestamp(createdAt)),
            "createdBy": .string(createdBy),
        ]
        if let label { root["label"] = .string(label) }
        root["source"] = .string(source)
        if let sourcePath { root["sourcePath"] = .string(sourcePath) }
        root["files"] = .array(files.map { file in
            var entry: OrderedDictionary<String, SaveValue> = [
                "path": .string(file.path), "size": .integer(file.size), "sha256": .string(file.sha256),
                "mode": .string(String(format: "%04o", file.mode)), "modifiedAt": .string(Self.timestamp(file.modifiedAt)),
            ]
            if let codec = file.codec { entry["codec"] = .string(codec) }
            if let kind = file.kind { entry["kind"] = .string(kind) }
            if let version = file.version { entry["version"] = .integer(Int64(version)) }
            return .dictionary(entry)
        })
        return .dictionary(root)
    }

    /// The manifest file's bytes: pretty JSON, plain (every value here is a string or a number).
    public func encoded() throws -> [UInt8] {
        try JSONCodec().encode(value)
    }

    /// Whole seconds, UTC: a manifest says when, not to the nanosecond.
    static func timestamp(_ date: Date) -> String {
        RFC3339.format(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.rounded(.down)))
    }
}
