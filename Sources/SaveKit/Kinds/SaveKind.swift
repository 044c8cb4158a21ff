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
    /// How two copies are merged (`merge.json`); `nil` when the kind has none, and every
    /// difference on both sides is then a conflict.
    public var merge: MergeRules? = nil
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

    /// Why a kind was taken for a document: recognition never guesses (formats.md), so every
    /// match has a reason that `inspect` and `validate` can show.
    public enum Evidence: Sendable, Equatable, CustomStringConvertible {
        /// Named by the user (`--kind`).
        case named
        /// Declared by the document holding it (`embedded` in the holder's kind.json).
        case declared(by: String)
        /// The file's path matches one of the kind's `files` patterns.
        case path(pattern: String)
        /// The content matches the fingerprint of this version.
        case fingerprint(version: Int)
        /// The content matches the fingerprint of one version, and its version field names
        /// another (a fingerprint that later versions still match, say).
        case fingerprintAndVersionField(fingerprint: Int, field: JSONPointer)

        public var description: String {
            switch self {
            case .named: "named explicitly"
            case .declared(let holder): "declared by \(holder)"
            case .path(let pattern): "its path matches \(pattern)"
            case .fingerprint(let version): "its content matches the fingerprint of version \(version)"
            case .fingerprintAndVersionField(let version, let field):
                "its content matches the kind's fingerprint of version \(version), and \(field) gives the version"
            }
        }
    }

    /// The version of a document already known to be of this kind (claimed by its path, named,
    /// or declared by its holder): the version field when the kind has one and the document
    /// holds it, else the one fingerprint that matches.
    public func recognise(_ value: SaveValue) -> Recognition {
        if let versionPath, let field = value.value(at: versionPath) { return Self.version(of: field, current: currentVersion) }
        return recognition(ofFingerprints: matchingFingerprints(value))
    }

    /// Whether a document no path or name gives to this kind is surely of it: only a matching
    /// fingerprint claims it (a version field alone never does), and then its version field, if
    /// any, tells the version. `nil` when no fingerprint matches.
    public func recogniseByContent(_ value: SaveValue) -> (Recognition, Evidence)? {
        let matching = matchingFingerprints(value)
        guard let first = matching.first else { return nil }
        if let versionPath, let field = value.value(at: versionPath) {
            let recognition = Self.version(of: field, current: currentVersion)
            switch recognition {
            case .version(let version) where matching.contains(version): return (recognition, .fingerprint(version: version))
            case .version, .future: return (recognition, .fingerprintAndVersionField(fingerprint: first, field: versionPath))
            default: return (recognition, .fingerprint(version: first))  // a field that gives no version
            }
        }
        return (recognition(ofFingerprints: matching), .fingerprint(version: first))
    }

    /// Why no version could be told for `document`, which this kind claims (``Recognition/unrecognized``):
    /// a version field that holds no version, or nothing at all that tells it (a kind just made
    /// by `formats new`, whose files have no version field yet).
    public func versionProblem(in document: SaveValue) -> String {
        if let versionPath, let field = document.value(at: versionPath) {
            let found = field.int64Value.map { "\($0)" } ?? field.typeNameWithArticle
            return "its version field \(versionPath.displayText) holds \(found), expected an integer from 1"
        }
        return "no version field or fingerprint tells its version, expected \(whatTellsTheVersion)"
    }

    /// What tells the version of a document of this kind, for messages.
    public var whatTellsTheVersion: String {
        let fingerprint = "a fingerprint in its kind.json's \"detect\" that matches it"
        return versionPath.map { "a version field at \($0.displayText), or \(fingerprint)" } ?? fingerprint
    }

    /// The `files` pattern that claims `path`, if one does.
    public func pattern(claiming path: String) -> String? {
        files.first { pattern in fnmatch(pattern, path, FNM_PATHNAME) == 0 || fnmatch("*/" + pattern, path, 0) == 0 }
    }

    private func matchingFingerprints(_ value: SaveValue) -> [Int] {
        Array(Set(fingerprints.filter { fingerprint in fingerprint.conditions.allSatisfy { $0.holds(in: value) } }.map(\.version))).sorted()
    }

    private static func version(of field: SaveValue, current: Int) -> Recognition {
        guard case .integer(let version) = field, version >= 1, version <= Int64(Int32.max) else { return .unrecognized }
        return version > Int64(current) ? .future(Int(version)) : .version(Int(version))
    }

    /// A fingerprint of a version after the current one (a kind without a version field
    /// knowing its next version's files) tells a file from the future: reported, never written.
    private func recognition(ofFingerprints matching: [Int]) -> Recognition {
        switch matching.count {
        case 0: .unrecognized
        case 1: matching[0] > currentVersion ? .future(matching[0]) : .version(matching[0])
        default: .ambiguous(matching)
        }
    }

    /// Whether `path` (relative, `/`-separated) is one of the kind's files: a `files` pattern
    /// (shell-style, `*` within one name) matching the whole path or its end.
    public func claims(path: String) -> Bool { pattern(claiming: path) != nil }
}
