/// The steps of `migrations.json`: how a save kind goes from each version to the next.
///
/// ```json
/// {"format": "savetool.migrations/1", "kind": "kape.tournament",
///  "steps": [{"from": 2, "to": 3, "ops": [{"op": "rename", "from": "/roundIndex", "to": "/round"}]}]}
/// ```
public struct MigrationPlan: Sendable, Equatable {
    public struct Step: Sendable, Equatable {
        public var from: Int
        public var to: Int
        public var operations: [MigrationOperation]
        public var name: String { "\(from)→\(to)" }
    }

    public var kind: String
    public var steps: [Step]

    public init(kind: String, steps: [Step]) {
        self.kind = kind
        self.steps = steps
    }

    /// The steps from `version` up to `target`, in order; `nil` when there is no such path.
    /// From each version the first step listed that leads on to the target is taken: a
    /// shortcut listed first, unless its end leads nowhere, then the next step listed.
    public func steps(from version: Int, to target: Int) -> [Step]? {
        guard version < target else { return version == target ? [] : nil }
        for step in steps where step.from == version && step.to <= target {
            if let rest = self.steps(from: step.to, to: target) { return [step] + rest }
        }
        return nil
    }

    public init(parsing value: SaveValue) throws(FormatDefinitionError) {
        func fail(_ path: [String], _ message: String) -> FormatDefinitionError { FormatDefinitionError(at: JSONPointer(tokens: path), message: message) }
        guard value["format"]?.stringValue?.hasPrefix("savetool.migrations/1") == true else {
            throw fail(["format"], "expected \"savetool.migrations/1\"")
        }
        /// What stands where a list was expected, for a message: `missing`, or its type.
        func found(_ value: SaveValue?) -> String { value.map { "found \($0.typeNameWithArticle)" } ?? "missing" }
        // A misspelt key ("stpes", "opz") is named, not read as a plan without steps.
        func refuseUnknownKeys(of object: SaveValue, at path: [String], known: [String], what: String) throws(FormatDefinitionError) {
            guard let unknown = object.dictionaryValue?.keys.first(where: { !known.contains($0) }) else { return }
            throw fail(path + [unknown], "an unknown key for \(what), expected one of \(known.joined(separator: ", "))")
        }
        try refuseUnknownKeys(of: value, at: [], known: ["format", "kind", "steps"], what: "migrations.json")
        guard let kind = value["kind"]?.stringValue else { throw fail(["kind"], "missing, expected the kind's name") }
        guard let steps = value["steps"]?.arrayValue else {
            throw fail(["steps"], "\(found(value["steps"])), expected an array of steps")
        }
        var parsed: [Step] = []
        for (index, step) in steps.enumerated() {
            try refuseUnknownKeys(of: step, at: ["steps", String(index)], known: ["from", "to", "ops"], what: "a step")
            guard case .integer(let from)? = step["from"], case .integer(let to)? = step["to"] else {
                let found = ["from", "to"].map { key in "\"\(key)\" \(step[key].map { $0.compactText } ?? "missing")" }.joined(separator: ", ")
                throw fail(["steps", String(index)], "\(found), expected integer \"from\" and \"to\" versions, \"to\" above \"from\"")
            }
            guard to > from else {
                throw fail(["steps", String(index)], "\"from\" \(from) and \"to\" \(to), expected \"to\" above \"from\" (a step goes to a later version)")
            }
            guard let ops = step["ops"]?.arrayValue else {
                throw fail(["steps", String(index), "ops"], "\(found(step["ops"])), expected an array of operations")
            }
            parsed.append(Step(from: Int(from), to: Int(to), operations: try Self.operations(ops, at: ["steps", String(index), "ops"])))
        }
        self.init(kind: kind, steps: parsed)
        // From each version the first step listed that leads on to the target is taken
        // (``steps(from:to:)``). A step listed after one from the same version whose end leads
        // to its own end would never run: wherever it leads, the earlier one leads too. So a
        // shortcut added below the steps it skips.
        for (index, step) in parsed.enumerated() {
            for (first, earlier) in parsed[..<index].enumerated() where earlier.from == step.from && earlier.to <= step.to {
                guard earlier.to == step.to || self.steps(from: earlier.to, to: step.to) != nil else { continue }
                throw fail(
                    ["steps", String(index)],
                    "a step from version \(step.from) to \(step.to) that never runs: /steps/\(first), from \(step.from) to \(earlier.to), is listed first and leads there too, expected a shortcut listed before the steps it skips")
            }
        }
    }

    /// The keys each operation takes.
    private static let keys: [String: [String]] = [
        "rename": ["op", "from", "to"], "move": ["op", "from", "to"], "copy": ["op", "from", "to"],
        "set": ["op", "path", "value", "mode"], "remove": ["op", "path"], "convert": ["op", "path", "to", "from"],
        "wrap": ["op", "path", "key"], "unwrap": ["op", "path", "key"], "forEach": ["op", "path", "ops"],
        "arrayToMap": ["op", "path", "keyField"], "mapToArray": ["op", "path", "keyField"],
        "assert": ["op", "path", "type", "equals", "keysIn"], "if": ["op", "when", "then", "else"],
    ]

    static func operations(_ values: [SaveValue], at path: [String]) throws(FormatDefinitionError) -> [MigrationOperation] {
        var result: [MigrationOperation] = []
        for (index, value) in values.enumerated() {
            result.append(try operation(value, at: path + [String(index)]))
        }
        return result
    }

    static func operation(_ value: SaveValue, at path: [String]) throws(FormatDefinitionError) -> MigrationOperation {
        func fail(_ message: String) -> FormatDefinitionError { FormatDefinitionError(at: JSONPointer(tokens: path), message: message) }
        func pointer(_ key: String) throws(FormatDefinitionError) -> JSONPointer {
            if let found = value[key], found.stringValue == nil {
                throw FormatDefinitionError(at: JSONPointer(tokens: path + [key]), message: "found \(found.typeNameWithArticle), expected a JSON Pointer")
            }
            guard let text = value[key]?.stringValue else { throw fail("no \"\(key)\", expected a JSON Pointer") }
            do { return try JSONPointer(parsing: text) } catch { throw fail("\"\(key)\": \(error)") }
        }
        func string(_ key: String) throws(FormatDefinitionError) -> String {
            guard let text = value[key]?.stringValue else { throw fail("no \"\(key)\", expected a string") }
            return text
        }
        guard let name = value["op"]?.stringValue else { throw fail("no \"op\", expected the operation's name") }
        // A misspelt key ("too") is named as such, not as the key it was meant to be missing.
        if let known = keys[name], let unknown = value.dictionaryValue?.keys.first(where: { !known.contains($0) }) {
            throw FormatDefinitionError(at: JSONPointer(tokens: path + [unknown]), message: "an unknown key for \(name), expected one of \(known.joined(separator: ", "))")
        }
        switch name {
        case "rename", "move", "copy":
            let (from, to) = (try pointer("from"), try pointer("to"))
            // Each `*` of "to" takes the key or index its `*` of "from" matched, in order.
            let (wildcardsFrom, wildcardsTo) = (from.tokens.filter { $0 == "*" }.count, to.tokens.filter { $0 == "*" }.count)
            guard wildcardsFrom == wildcardsTo else {
                throw FormatDefinitionError(
                    at: JSONPointer(tokens: path + ["to"]),
                    message: "\(to.displayText) with \(wildcardsTo) '*', expected as many as \(from.displayText) has (\(wildcardsFrom)): each takes the key its '*' in \"from\" matched")
            }
            if name == "copy" { return .copy(from: from, to: to) }
            if to.tokens.count > from.tokens.count, Array(to.tokens.prefix(from.tokens.count)) == from.tokens {
                throw FormatDefinitionError(at: JSONPointer(tokens: path + ["to"]), message: "\(to) is inside \(from.displayText), expected a place outside the value it moves")
            }
            return .move(from: from, to: to)
        case "set":
            guard let source = value["value"] else { throw fail("no \"value\", expected the value to set (a literal, or {\"$ref\": \"/pointer\"})") }
            let mode = value["mode"]?.stringValue ?? "always"
            guard mode == "always" || mode == "ifMissing" else {
                throw FormatDefinitionError(at: JSONPointer(tokens: path + ["mode"]), message: "\"\(mode)\", expected always or ifMissing")
            }
            return .set(path: try pointer("path"), value: try valueSource(source, fail: fail), onlyIfMissing: mode == "ifMissing")
        case "remove": return .remove(path: try pointer("path"))
        case "convert":
            guard let type = MigrationOperation.TargetType(rawValue: try string("to")) else {
                throw FormatDefinitionError(
                    at: JSONPointer(tokens: path + ["to"]),
                    message: "\(value["to"]?.compactText ?? "missing"), expected one of \(MigrationOperation.TargetType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var encoding: MigrationOperation.DateEncoding?
            if let text = value["from"]?.stringValue {
                guard let parsed = MigrationOperation.DateEncoding(rawValue: text) else {
                    throw FormatDefinitionError(
                        at: JSONPointer(tokens: path + ["from"]),
                        message: "\(value["from"]?.compactText ?? ""), expected one of \(MigrationOperation.DateEncoding.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                encoding = parsed
            }
            return .convert(path: try pointer("path"), to: type, from: encoding)
        case "wrap": return .wrap(path: try pointer("path"), key: try string("key"))
        case "unwrap": return .unwrap(path: try pointer("path"), key: try string("key"))
        case "forEach":
            guard let ops = value["ops"]?.arrayValue else { throw fail("no \"ops\", expected the operations for each element") }
            return .forEach(path: try pointer("path"), ops: try operations(ops, at: path + ["ops"]))
        case "arrayToMap": return .arrayToMap(path: try pointer("path"), keyField: try string("keyField"))
        case "mapToArray": return .mapToArray(path: try pointer("path"), keyField: try string("keyField"))
        case "assert":
            let type = value["type"]?.stringValue
            if let type, !ValueTypes.names.contains(type) {
                throw FormatDefinitionError(at: JSONPointer(tokens: path + ["type"]), message: "\"\(type)\", expected a type name (\(ValueTypes.names.joined(separator: ", ")))")
            }
            let equals = value["equals"]
            let keysIn = value["keysIn"] == nil ? nil : try pointer("keysIn")
            guard type != nil || equals != nil || keysIn != nil else { throw fail("expected \"equals\", \"type\" or \"keysIn\"") }
            return .assert(path: try pointer("path"), equals: equals, type: type, keysIn: keysIn)
        case "if":
            guard let when = value["when"] else { throw fail("no \"when\", expected the condition") }
            guard let then = value["then"]?.arrayValue else { throw fail("no \"then\", expected the operations to run when the condition holds") }
            let otherwise: [SaveValue]
            switch value["else"] {
            case nil: otherwise = []
            case .array(let items)?: otherwise = items
            case let other?: throw FormatDefinitionError(at: JSONPointer(tokens: path + ["else"]), message: "found \(other.typeNameWithArticle), expected an array of operations")
            }
            return .conditional(
                when: try Condition(parsing: when, at: path + ["when"]),
                then: try operations(then, at: path + ["then"]), otherwise: try operations(otherwise, at: path + ["else"]))
        default:
            throw fail("unknown operation \"\(name)\", expected rename, move, copy, set, remove, convert, wrap, unwrap, forEach, arrayToMap, mapToArray, assert or if")
        }
    }

    static func valueSource(_ value: SaveValue, fail: (String) -> FormatDefinitionError) throws(FormatDefinitionError) -> MigrationOperation.ValueSource {
        guard let entries = value.dictionaryValue, entries.count == 1, let key = entries.keys.first, key.hasPrefix("$") else {
            return .literal(value)
        }
        let payload = entries.values[0]
        func pointer(_ value: SaveValue) throws(FormatDefinitionError) -> JSONPointer {
            guard let text = value.stringValue else { throw fail("\(key) holds \(value.typeNameWithArticle), expected a JSON Pointer") }
            do { return try JSONPointer(parsing: text) } catch { throw fail("\(key): \(error)") }
        }
        switch key {
        case "$ref": return .reference(try pointer(payload))
        case "$rel": return .relative(try pointer(payload))
        case "$lookup":
            guard let parts = payload.arrayValue, parts.count == 2 || parts.count == 3 else {
                throw fail("$lookup holds \(payload.typeNameWithArticle), expected [\"/map\", key] or [\"/map\", key, default]")
            }
            // `Optional(...)`: a bare `nil` here would be read as SaveValue's own `null` literal,
            // and a lookup without a default would give null instead of failing.
            let fallback: SaveValue? = parts.count == 3 ? Optional(parts[2]) : Optional.none
            return .lookup(map: try pointer(parts[0]), key: try valueSource(parts[1], fail: fail), default: fallback)
        default:
            return .literal(value)
        }
    }
}
