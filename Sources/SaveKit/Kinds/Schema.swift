/// The JSON Schema subset of `schema-v<N>.json`: `type`, `properties`, `required`, `items`,
/// `enum`, `minimum`, `maximum`, and `additionalProperties` (a schema for every other value of a
/// dictionary, for maps keyed by names such as kingdoms or players). Written by hand: a full JSON Schema validator would also
/// have to learn savetool's dates, data and integers that are not reals.
public indirect enum Schema: Sendable {
    case rules(
        type: [String], properties: [String: Schema], required: [String], items: Schema?, otherProperties: Schema?,
        allowed: [SaveValue]?, minimum: Double?, maximum: Double?)

    /// One way a value does not fit its schema.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        public var at: JSONPointer
        public var message: String
        public init(at: JSONPointer, message: String) {
            self.at = at
            self.message = message
        }
        public var description: String { "\(at.displayText): \(message)" }
    }

    /// Parses the schema subset; unknown keywords are ignored, as JSON Schema does.
    public init(parsing value: SaveValue, at path: [String] = []) throws(FormatDefinitionError) {
        guard let entries = value.dictionaryValue else {
            throw FormatDefinitionError(at: JSONPointer(tokens: path), message: "found \(value.typeNameWithArticle), expected a schema object")
        }
        var types: [String] = []
        switch entries["type"] {
        case .string(let type)?: types = [type]
        case .array(let list)?: types = list.compactMap(\.stringValue)
        default: break
        }
        var properties: [String: Schema] = [:]
        for (key, schema) in entries["properties"]?.dictionaryValue ?? [:] {
            properties[key] = try Schema(parsing: schema, at: path + ["properties", key])
        }
        let items = try entries["items"].map { (schema) throws(FormatDefinitionError) in try Schema(parsing: schema, at: path + ["items"]) }
        // `additionalProperties: false` and `true` are JSON Schema too; only a schema is kept (false is not in the subset).
        let otherProperties = try entries["additionalProperties"].flatMap { (schema) throws(FormatDefinitionError) -> Schema? in
            if case .bool = schema { return nil }
            return try Schema(parsing: schema, at: path + ["additionalProperties"])
        }
        self = .rules(
            type: types, properties: properties, required: entries["required"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            items: items, otherProperties: otherProperties, allowed: entries["enum"]?.arrayValue, minimum: entries["minimum"]?.numberValue, maximum: entries["maximum"]?.numberValue)
    }

    /// Every violation, each with the pointer of its value.
    public func violations(of value: SaveValue, at pointer: JSONPointer = JSONPointer()) -> [Violation] {
        guard case .rules(let types, let properties, let required, let items, let otherProperties, let allowed, let minimum, let maximum) = self else { return [] }
        var found: [Violation] = []
        if !types.isEmpty, !types.contains(where: { Self.matches(value, type: $0) }) {
            found.append(Violation(at: pointer, message: "found \(value.typeNameWithArticle), expected \(types.joined(separator: " or "))"))
            return found
        }
        if let allowed, !allowed.contains(value) {
            found.append(Violation(at: pointer, message: "a value outside the allowed ones"))
        }
        let numeric = value.numberValue
        if let numeric, let minimum, numeric < minimum { found.append(Violation(at: pointer, message: "\(numeric) is below the minimum \(minimum)")) }
        if let numeric, let maximum, numeric > maximum { found.append(Violation(at: pointer, message: "\(numeric) is above the maximum \(maximum)")) }
        if let entries = value.dictionaryValue {
            for key in required where entries[key] == nil {
                found.append(Violation(at: pointer.appending(key), message: "missing, expected a required field"))
            }
            for (key, schema) in properties.sorted(by: { $0.key < $1.key }) {
                if let child = entries[key] { found += schema.violations(of: child, at: pointer.appending(key)) }
            }
            if let otherProperties {
                for (key, child) in entries where properties[key] == nil { found += otherProperties.violations(of: child, at: pointer.appending(key)) }
            }
        }
        if let items, let elements = value.arrayValue {
            for (index, element) in elements.enumerated() { found += items.violations(of: element, at: pointer.appending(index)) }
        }
        return found
    }

    /// JSON Schema's type names, plus savetool's own (`date`, `data`, `uid`).
    static func matches(_ value: SaveValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .dictionary), ("dictionary", .dictionary), ("array", .array), ("string", .string), ("boolean", .bool), ("bool", .bool),
            ("null", .null), ("integer", .integer), ("integer", .unsignedInteger), ("number", .integer), ("number", .unsignedInteger),
            ("number", .real), ("real", .real), ("date", .date), ("data", .data), ("uid", .uid):
            true
        default:
            false
        }
    }

    /// Whether the schema requires the field at `pointer` (for rename sources, formats.md).
    public func requires(_ pointer: JSONPointer) -> Bool {
        guard let last = pointer.tokens.last else { return false }
        var schema = self
        for token in pointer.tokens.dropLast() {
            guard case .rules(_, let properties, _, let items, let otherProperties, _, _, _) = schema,
                let next = properties[token] ?? ((token == "*" || Int(token) != nil) ? items ?? otherProperties : otherProperties)
            else { return false }
            schema = next
        }
        guard case .rules(_, _, let required, _, _, _, _, _) = schema else { return false }
        return required.contains(last)
    }
}
