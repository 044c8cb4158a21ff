/// One operation of a migration step, as `migrations.json` spells it (formats.md).
///
/// Paths are JSON Pointers; a `*` segment matches every element or key, so
/// `{"op": "rename", "from": "/players/*/pts", "to": "/players/*/score"}` renames in each player.
public indirect enum MigrationOperation: Sendable, Equatable {
    /// Moves a value (`rename` and `move` are the same operation).
    case move(from: JSONPointer, to: JSONPointer)
    case copy(from: JSONPointer, to: JSONPointer)
    case set(path: JSONPointer, value: ValueSource, onlyIfMissing: Bool)
    case remove(path: JSONPointer)
    case convert(path: JSONPointer, to: TargetType, from: DateEncoding?)
    /// `v` becomes `{key: v}`.
    case wrap(path: JSONPointer, key: String)
    /// `{key: v}` becomes `v`.
    case unwrap(path: JSONPointer, key: String)
    /// `ops` run on each element (or value) of the container at `path`, their paths relative to it.
    case forEach(path: JSONPointer, ops: [MigrationOperation])
    /// An array of dictionaries becomes a dictionary keyed by each element's `keyField`.
    case arrayToMap(path: JSONPointer, keyField: String)
    /// A dictionary becomes an array, each key kept in the element's `keyField`.
    case mapToArray(path: JSONPointer, keyField: String)
    /// Checks a value: equal to `equals`, of `type`, or (a dictionary) with every key among the
    /// values `keysIn` selects, as in "a score for a name not in players is an error".
    case assert(path: JSONPointer, equals: SaveValue?, type: String?, keysIn: JSONPointer?)
    /// Runs `then` when the condition holds, else `otherwise`, as in "`status` is `finished` when
    /// `round` ≥ `totalRounds`": `{"op": "if", "when": {"compare": ["/round", ">=", {"$ref": "/totalRounds"}]}, "then": [ … ]}`.
    /// Inside `forEach` the condition's pointers are relative to the element, like the other operations'.
    case conditional(when: Condition, then: [MigrationOperation], otherwise: [MigrationOperation])

    public enum TargetType: String, Sendable, CaseIterable {
        case integer, real, string, bool, date, data
    }

    /// How a number or string encodes a date, for `convert` to and from `date`.
    public enum DateEncoding: String, Sendable, CaseIterable {
        case iso8601, appleReference, unixSeconds, unixMillis
    }

    /// Where a value comes from.
    public indirect enum ValueSource: Sendable, Equatable {
        case literal(SaveValue)
        /// `{"$ref": "/abs/pointer"}`: a value of the document.
        case reference(JSONPointer)
        /// `{"$rel": "/pointer"}`: a value of the element `forEach` is on.
        case relative(JSONPointer)
        /// `{"$lookup": ["/map", key]}`: the value under `key` in the dictionary at `/map`;
        /// `["/map", key, default]` gives `default` when there is none.
        case lookup(map: JSONPointer, key: ValueSource, default: SaveValue?)
    }

    /// The operation's name, for messages.
    public var name: String {
        switch self {
        case .move: "rename"
        case .copy: "copy"
        case .set: "set"
        case .remove: "remove"
        case .convert: "convert"
        case .wrap: "wrap"
        case .unwrap: "unwrap"
        case .forEach: "forEach"
        case .arrayToMap: "arrayToMap"
        case .mapToArray: "mapToArray"
        case .assert: "assert"
        case .conditional: "if"
        }
    }
}

/// Why a migration step could not run; the file it was running on is left untouched.
public struct MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `"1→2"`.
    public var step: String
    public var operation: String
    public var path: JSONPointer
    public var message: String

    public init(step: String, operation: String, path: JSONPointer, message: String) {
        (self.step, self.operation, self.path, self.message) = (step, operation, path, message)
    }

    public var description: String {
        "step \(step), \(operation) at \(path.displayText): \(message)"
    }

    /// The error of an operation run on a value inside the document (an element `forEach`
    /// goes through), placed in the document.
    func placed(under pointer: JSONPointer) -> MigrationError {
        var placed = self
        placed.path = pointer.appending(path)
        return placed
    }
}
