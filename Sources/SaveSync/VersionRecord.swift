import Foundation
import OrderedCollections
import SaveKit

/// What a sync server knows of one version of a slot, or of a push it parked: the lines of a
/// slot's history, and the header stored with each version's bytes.
///
/// Encoded as a JSON object (``value``) whose keys are the wire's: `version`, `state`, `sha256`,
/// `size`, `codec`, `kind`, `schemaVersion`, `device`, `createdAt`, `how`, `base`, `mergedWith`,
/// `restoredFrom`, `parked`, `pushed`, `decisions`.
public struct VersionRecord: Sendable, Equatable {
    public enum State: String, Sendable {
        /// A version: it was, or is, the head.
        case version
        /// A push that conflicted, kept so that nothing is lost, never served as the head.
        case parked
    }

    /// How the version came to be.
    public enum Origin: String, Sendable {
        /// The slot's first push.
        case first
        /// Pushed on top of the head it was based on.
        case fastForward
        /// Merged three ways with the head, against the version the device last synced.
        case merged
        /// Merged with the head without a base: the device had never synced the slot.
        case mergedWithoutBase
        /// Stored over the head as it was (`?force=true`).
        case forced
        /// A copy of an earlier version.
        case restored
        /// Parked: the push's merge with the head left conflicts.
        case conflicted
    }

    public var state: State
    /// The version number; for a parked push, the head it could not be merged into.
    public var version: Int
    /// A parked push's own name (`p1764000000000-3f2a`), which the history lists it by.
    public var parked: String?
    public var sha256: String
    public var size: Int
    public var codec: String
    public var kind: String?
    public var schemaVersion: Int?
    public var device: String?
    public var createdAt: Date
    public var how: Origin
    /// The version the device had last synced (for merges and parked pushes).
    public var base: Int?
    /// The head a merge was made with.
    public var mergedWith: Int?
    public var restoredFrom: Int?
    /// The SHA-256 of the bytes the device pushed (before a merge or migration changed them):
    /// a push tried again after its answer was lost is found by it, and not merged twice.
    public var pushed: String?
    public var decisions: [MergeDecision]

    public init(
        state: State = .version, version: Int, parked: String? = nil, sha256: String, size: Int, codec: String, kind: String?, schemaVersion: Int?,
        device: String?, createdAt: Date, how: Origin, base: Int? = nil, mergedWith: Int? = nil, restoredFrom: Int? = nil, pushed: String? = nil,
        decisions: [MergeDecision] = []
    ) {
        (self.state, self.version, self.parked, self.sha256, self.size, self.codec) = (state, version, parked, sha256, size, codec)
        (self.kind, self.schemaVersion, self.device, self.createdAt, self.how) = (kind, schemaVersion, device, createdAt, how)
        (self.base, self.mergedWith, self.restoredFrom, self.pushed, self.decisions) = (base, mergedWith, restoredFrom, pushed, decisions)
    }

    public static func == (left: VersionRecord, right: VersionRecord) -> Bool { left.value == right.value }

    public var value: SaveValue {
        var fields: OrderedDictionary<String, SaveValue> = [
            "version": .integer(Int64(version)), "state": .string(state.rawValue),
        ]
        if let parked { fields["parked"] = .string(parked) }
        fields["sha256"] = .string(sha256)
        fields["size"] = .integer(Int64(size))
        fields["codec"] = .string(codec)
        if let kind { fields["kind"] = .string(kind) }
        if let schemaVersion { fields["schemaVersion"] = .integer(Int64(schemaVersion)) }
        if let device { fields["device"] = .string(device) }
        fields["createdAt"] = .string(RFC3339.format(createdAt))
        fields["how"] = .string(how.rawValue)
        if let base { fields["base"] = .integer(Int64(base)) }
        if let mergedWith { fields["mergedWith"] = .integer(Int64(mergedWith)) }
        if let restoredFrom { fields["restoredFrom"] = .integer(Int64(restoredFrom)) }
        if let pushed { fields["pushed"] = .string(pushed) }
        if !decisions.isEmpty { fields["decisions"] = .array(decisions.map(Self.value(of:))) }
        return .dictionary(fields)
    }

    public init(_ value: SaveValue) throws(SaveError) {
        let read = FieldReader(value: value, what: "a version record")
        guard let state = State(rawValue: try read.string("state")) else { throw read.failure("state", expected: "version or parked") }
        guard let how = Origin(rawValue: try read.string("how")) else { throw read.failure("how", expected: "how the version came to be") }
        guard let createdAt = RFC3339.parse(try read.string("createdAt")) else { throw read.failure("createdAt", expected: "an RFC 3339 time") }
        self.init(
            state: state, version: try read.int("version"), parked: try read.optionalString("parked"), sha256: try read.string("sha256"),
            size: try read.int("size"), codec: try read.string("codec"), kind: try read.optionalString("kind"),
            schemaVersion: try read.optionalInt("schemaVersion"), device: try read.optionalString("device"), createdAt: createdAt, how: how,
            base: try read.optionalInt("base"), mergedWith: try read.optionalInt("mergedWith"), restoredFrom: try read.optionalInt("restoredFrom"),
            pushed: try read.optionalString("pushed"), decisions: try (value.dictionaryValue?["decisions"]?.arrayValue ?? []).map { item throws(SaveError) in try Self.decision(item) })
    }

    /// A merge decision on the wire: `{"pointer", "policy", "why", "conflict", "base"?, "local"?, "remote"?, "result"?}`.
    public static func value(of decision: MergeDecision) -> SaveValue {
        var fields: OrderedDictionary<String, SaveValue> = [
            "pointer": .string(decision.path.description), "policy": .string(decision.policy), "why": .string(decision.why),
            "conflict": .bool(decision.isConflict),
        ]
        if let base = decision.base { fields["base"] = base }
        if let local = decision.local { fields["local"] = local }
        if let remote = decision.remote { fields["remote"] = remote }
        // An open conflict has no result (merge.md): the local value only stood in for it.
        if let result = decision.result, !decision.isConflict { fields["result"] = result }
        return .dictionary(fields)
    }

    public static func decision(_ value: SaveValue) throws(SaveError) -> MergeDecision {
        let read = FieldReader(value: value, what: "a merge decision")
        let pointer: JSONPointer
        do { pointer = try JSONPointer(parsing: try read.string("pointer")) } catch { throw read.failure("pointer", expected: "a JSON pointer") }
        let fields = value.dictionaryValue ?? [:]
        return MergeDecision(
            path: pointer, policy: try read.string("policy"), base: fields["base"], local: fields["local"], remote: fields["remote"],
            result: fields["result"], why: try read.string("why"), isConflict: fields["conflict"] == .bool(true))
    }
}

/// Reads the fields of a JSON object, each missing or mistyped one an error naming its key.
struct FieldReader {
    let value: SaveValue
    let what: String

    func failure(_ key: String, expected: String) -> SaveError {
        SaveError(.badData, location: "/" + key, "\(what) whose \(key) is not \(expected)")
    }

    func string(_ key: String) throws(SaveError) -> String {
        guard let text = value.dictionaryValue?[key]?.stringValue else { throw failure(key, expected: "a string") }
        return text
    }

    func optionalString(_ key: String) throws(SaveError) -> String? {
        guard let field = value.dictionaryValue?[key] else { return nil }
        guard let text = field.stringValue else { throw failure(key, expected: "a string") }
        return text
    }

    func int(_ key: String) throws(SaveError) -> Int {
        guard let number = try optionalInt(key) else { throw failure(key, expected: "an integer") }
        return number
    }

    func optionalInt(_ key: String) throws(SaveError) -> Int? {
        switch value.dictionaryValue?[key] {
        case nil: return nil
        case .integer(let number)?: return Int(number)
        case .unsignedInteger(let number)? where number <= UInt64(Int.max): return Int(number)
        default: throw failure(key, expected: "an integer")
        }
    }
}
