/// A test on a document, as `kind.json` fingerprints (`detect`) and the `if` operation of
/// `migrations.json` spell it: one key naming the test.
///
/// ```json
/// {"has": "/roundIndex"}                                   // the value exists
/// {"missing": "/scores"}
/// {"type": ["/scores", "object"]}
/// {"equals": ["/status", "finished"]}
/// {"compare": ["/round", ">=", {"$ref": "/totalRounds"}]}  // false when either side is not a number
/// {"class": ["/root", "GKPlayer"]}                       // an object of a keyed archive's view, of that class
/// {"all": [ … ]}  {"any": [ … ]}  {"not": { … }}
/// ```
///
/// One type for both, so that a fingerprint and a migration read the same words the same way.
public indirect enum Condition: Sendable, Equatable {
    case has(JSONPointer)
    case missing(JSONPointer)
    /// `typeName` as ``SaveValue/typeName``, or `object` for a dictionary (JSON Schema's word).
    case type(JSONPointer, String)
    case equals(JSONPointer, SaveValue)
    /// An object of a keyed archive's view (``KeyedArchive``) whose class is named so.
    case isClass(JSONPointer, String)
    /// Numbers only: a side that is missing or not a number makes the test false, so an optional
    /// field that is absent (`totalRounds`) never matches.
    case compare(JSONPointer, Comparison, MigrationOperation.ValueSource)
    case all([Condition])
    case any([Condition])
    case not(Condition)

    public enum Comparison: String, Sendable, CaseIterable {
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">=", equal = "==", notEqual = "!="
    }

    /// Whether the test holds for `value`; `resolve` gives the value of the right side of a
    /// `compare` (a literal, `$ref` to the whole document, `$rel` within the element).
    func holds(in value: SaveValue, resolve: (MigrationOperation.ValueSource) -> SaveValue?) -> Bool {
        switch self {
        case .has(let pointer): return value.value(at: pointer) != nil
        case .missing(let pointer): return value.value(at: pointer) == nil
        case .type(let pointer, let type): return value.value(at: pointer).map { Schema.matches($0, type: type) } ?? false
        case .equals(let pointer, let expected): return value.value(at: pointer) == expected
        case .isClass(let pointer, let name):
            switch value.value(at: pointer)?["$class"] {
            case .string(let found)?: return found == name
            case .dictionary(let info)?: return info["$classname"] == .string(name)
            default: return false
            }
        case .compare(let pointer, let comparison, let source):
            guard let left = value.value(at: pointer)?.numberValue, let right = resolve(source)?.numberValue else { return false }
            switch comparison {
            case .less: return left < right
            case .lessOrEqual: return left <= right
            case .greater: return left > right
            case .greaterOrEqual: return left >= right
            case .equal: return left == right
            case .notEqual: return left != right
            }
        case .all(let conditions): return conditions.allSatisfy { $0.holds(in: value, resolve: resolve) }
        case .any(let conditions): return conditions.contains { $0.holds(in: value, resolve: resolve) }
        case .not(let condition): return !condition.holds(in: value, resolve: resolve)
        }
    }

    /// Whether the test holds for a whole document, its `$ref`s read from that document.
    public func holds(in document: SaveValue) -> Bool {
        holds(in: document) { source in
            switch source {
            case .literal(let value): value
            case .reference(let pointer): document.value(at: pointer)
            case .relative, .lookup: nil
            }
        }
    }

    /// Parses one condition; errors name the place in the file.
    public init(parsing value: SaveValue, at path: [String]) throws(FormatDefinitionError) {
        func fail(_ message: String) -> FormatDefinitionError { FormatDefinitionError(at: JSONPointer(tokens: path), message: message) }
        let expected = "expected one of {\"has\": p}, {\"missing\": p}, {\"type\": [p, t]}, {\"equals\": [p, v]}, {\"compare\": [p, \">=\", v]}, {\"class\": [p, c]}, {\"all\": […]}, {\"any\": […]}, {\"not\": {…}}"
        guard let entries = value.dictionaryValue, entries.count == 1, let key = entries.keys.first else { throw fail(expected) }
        let payload = entries.values[0]
        func pointer(_ value: SaveValue?) throws(FormatDefinitionError) -> JSONPointer {
            guard let text = value?.stringValue else { throw fail("expected a JSON Pointer in \"\(key)\"") }
            do { return try JSONPointer(parsing: text) } catch { throw fail("\"\(key)\": \(error)") }
        }
        func list() throws(FormatDefinitionError) -> [Condition] {
            guard let items = payload.arrayValue else { throw fail("\"\(key)\" holds \(payload.typeNameWithArticle), expected an array of conditions") }
            var conditions: [Condition] = []
            for (index, item) in items.enumerated() {
                conditions.append(try Condition(parsing: item, at: path + [key, String(index)]))
            }
            return conditions
        }
        switch key {
        case "has": self = .has(try pointer(payload))
        case "missing": self = .missing(try pointer(payload))
        case "type":
            guard let pair = payload.arrayValue, pair.count == 2, let type = pair[1].stringValue else { throw fail("expected {\"type\": [\"/pointer\", \"object\"]}") }
            self = .type(try pointer(pair[0]), type)
        case "equals":
            guard let pair = payload.arrayValue, pair.count == 2 else { throw fail("found \(payload.compactText), expected {\"equals\": [\"/pointer\", value]}") }
            self = .equals(try pointer(pair[0]), pair[1])
        case "compare":
            guard let triple = payload.arrayValue, triple.count == 3, let comparison = triple[1].stringValue.flatMap(Comparison.init(rawValue:)) else {
                throw fail("found \(payload.compactText), expected {\"compare\": [\"/pointer\", one of \(Comparison.allCases.map(\.rawValue).joined(separator: " ")), value]}")
            }
            self = .compare(try pointer(triple[0]), comparison, try MigrationPlan.valueSource(triple[2], fail: fail))
        case "class":
            guard let pair = payload.arrayValue, pair.count == 2, let name = pair[1].stringValue else { throw fail("found \(payload.compactText), expected {\"class\": [\"/pointer\", \"ClassName\"]}") }
            self = .isClass(try pointer(pair[0]), name)
        case "all": self = .all(try list())
        case "any": self = .any(try list())
        case "not": self = .not(try Condition(parsing: payload, at: path + ["not"]))
        default: throw fail("unknown condition \"\(key)\", \(expected)")
        }
    }
}
