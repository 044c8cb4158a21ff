import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A kind of save file and its versions, as a `Formats/<kind>/` folder describes it
/// (formats.md): `kind.json`, optionally `migrations.json` and `schema-v<N>.json`.
public struct SaveKind: Sendable {
    public var name: String
    public var title: String
    /// Paths the kind's files have inside a save directory (`Documents/current_tournament.json`).
    public var files: [String]
    public var codec: String?
    /// Where the version is written, when the kind has a version field.
    public var versionPath: JSONPointer?
    public var currentVersion: Int
    /// Versions from before the version field existed, recognised by what they hold.
    public var fingerprints: [Fingerprint]
    /// Values holding a document of their own (a `gameSave` data value holding JSON).
    public var embedded: [JSONPointer: Embedded]
    public var schemas: [Int: Schema]
    public var migrations: MigrationPlan?
    /// The folder the kind was loaded from.
    public var origin: String

    public struct Fingerprint: Sendable {
        public var version: Int
        public var conditions: [Condition]
        public init(version: Int, conditions: [Condition]) {
            self.version = version
            self.conditions = conditions
        }
    }

    public struct Embedded: Sendable {
        public var codec: String
        public var kind: String?
    }

    /// What version a document is, for this kind.
    public enum Recognition: Sendable, Equatable {
        case version(Int)
        /// Above the current version: reported, never written.
        case future(Int)
        /// More than one fingerprint matches.
        case ambiguous([Int])
        case unrecognized
    }

    /// What a recognition means, in words: "kape.tournament version 2 of 3",
    /// "kingdom.state version 3, newer than the 2 savetool knows".
    public func describe(_ recognition: Recognition) -> String {
        switch recognition {
        case .version(let version): "\(name) version \(version) of \(currentVersion)"
        case .future(let version): "\(name) version \(version), newer than the \(currentVersion) savetool knows"
        case .ambiguous(let versions): "\(name), ambiguous between versions \(versions.map(String.init).joined(separator: ", "))"
        case .unrecognized: "not recognised as \(name)"
        }
    }

    /// The version field when there is one, else the one fingerprint that matches.
    public func recognise(_ value: SaveValue) -> Recognition {
        if let versionPath, let field = value.value(at: versionPath) {
            guard case .integer(let version) = field, version >= 1, version <= Int64(Int32.max) else { return .unrecognized }
            return version > Int64(currentVersion) ? .future(Int(version)) : .version(Int(version))
        }
        let matching = fingerprints.filter { fingerprint in fingerprint.conditions.allSatisfy { $0.holds(in: value) } }.map(\.version)
        switch Set(matching).count {
        case 0: return .unrecognized
        case 1: return .version(matching[0])
        default: return .ambiguous(Array(Set(matching)).sorted())
        }
    }

    /// Whether `path` (relative, `/`-separated) is one of the kind's files: a `files` pattern
    /// (shell-style, `*` within one name) matching the whole path or its end.
    public func claims(path: String) -> Bool {
        files.contains { pattern in
            fnmatch(pattern, path, FNM_PATHNAME) == 0 || fnmatch("*/" + pattern, path, 0) == 0
        }
    }
}
