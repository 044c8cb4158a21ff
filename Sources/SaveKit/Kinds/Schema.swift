/// The JSON Schema subset of `schema-v<N>.json`: `type`, `properties`, `required`, `items`,
/// `enum`, `minimum`, `maximum`, and `additionalProperties` (a schema for every other value of a
/// dictionary, for maps keyed by names such as kingdoms or players). Written by hand: a full JSON Schema validator would also
/// have to learn savetool's dates, data and integers that are not reals.
///
/// Every file of a batch is checked against its schema after migration, so the checks are
/// prepared once here: type names parsed, properties sorted, and a value's pointer built only
/// when something is wrong with it.
public final class Schema: Sendable {
    /// The type names as written, for messages.
    let typeNames: [String]
    let types: ValueTypes
    /// Sorted by key, so that violations come in a stable order.
    let properties: [(key: String, schema: Schema)]
    let propertyKeys: Set<String>
    let required: [String]
    let items: Schema?
    /// A schema for every dictionary value not named in `properties`.
    let otherProperties: Schema?
    let allowed: [SaveValue]?
    /// Bounds as written: an integer bound is compared with an integer exactly, not as a real
    /// (9007199254740993 is above the maximum 9007199254740992).
    let minimum: SaveValue?
    let maximum: SaveValue?

    /// One way a value does not fit its schema.
    public struct Violation: Sendable, Equatable, CustomStringConvertible {
        public var at: JSONPointer
        public var message: String
        /// The schema broken, when it is an embedded document's (`blocks.gamesave version 2`);
        /// `nil` for the document's own.
        public var schema: String?
        public init(at: JSONPointer, message: String, schema: String? = nil) {
            self.at = at
            self.message = message
            self.schema = schema
        }
        public var description: String { "\(at.displayText): \(message)" }

        /// The violation of a value found inside another (an embedded document), placed in the
        /// holder, with the schema broken when it is to be named.
        public func placed(under pointer: JSONPointer, schema: String? = nil) -> Violation {
            Violation(at: pointer.appending(at), message: message, schema: schema ?? self.schema)
        }

        /// The schema broken, by name: the embedded document's, else `kind`'s at `version`.
        public func schemaName(else kind: String, version: Int) -> String { schema ?? "\(kind) version \(version)" }
    }

    /// Parses the schema subset; unknown keywords are ignored, as JSON Schema does.
    public init(parsing value: SaveValue, at path: [String] = []) throws(FormatDefinitionError) {
        guard let entries = value.dictionaryValue else {
            throw FormatDefinitionError(at: JSONPointer(tokens: path), message: "found \(value.typeNameWithArticle), expected a schema object")
        }
        // A misspelt keyword's value would otherwise fail every save, each blamed for the schema's
        // mistake, or pass every save unchecked.
        func mistake(_ keyword: String, _ index: Int? = nil, found: SaveValue, expected: String) -> FormatDefinitionError {
            var shown = found.typeNameWithArticle
            if case .string = found { shown = found.compactText }
            return FormatDefinitionError(at: JSONPointer(tokens: path + [keyword] + (index.map { [String($0)] } ?? [])), message: "found \(shown), expected \(expected)")
        }
        let typeExpected = "a type name (\(ValueTypes.names.joined(separator: ", "))) or a list of them"
        switch entries["type"] {
        case .string(let type)?:
            guard ValueTypes.names.contains(type) else { throw mistake("type", found: .string(type), expected: typeExpected) }
            typeNames = [type]
        case .array(let list)?:
            guard !list.isEmpty else { throw mistake("type", found: .array([]), expected: typeExpected) }
            for (index, name) in list.enumerated() where name.stringValue.map(ValueTypes.names.contains) != true {
                throw mistake("type", index, found: name, expected: typeExpected)
            }
            typeNames = list.compactMap(\.stringValue)
        case nil: typeNames = []
        case let other?: throw mistake("type", found: other, expected: typeExpected)
        }
        types = typeNames.reduce(into: ValueTypes()) { $0.formUnion(ValueTypes(name: $1)) }
        var properties: [(key: String, schema: Schema)] = []
        for (key, schema) in entries["properties"]?.dictionaryValue ?? [:] {
            properties.append((key, try Schema(parsing: schema, at: path + ["properties", key])))
        }
        self.properties = properties.sorted { $0.key < $1.key }
        propertyKeys = Set(properties.map(\.key))
        items = try entries["items"].map { (schema) throws(FormatDefinitionError) in try Schema(parsing: schema, at: path + ["items"]) }
        // `additionalProperties: false` and `true` are JSON Schema too; only a schema is kept (false is not in the subset).
        otherProperties = try entries["additionalProperties"].flatMap { (schema) throws(FormatDefinitionError) -> Schema? in
            if case .bool = schema { return nil }
            return try Schema(parsing: schema, at: path + ["additionalProperties"])
        }
        switch entries["required"] {
        case nil: required = []
        case .array(let list)?:
            for (index, name) in list.enumerated() where name.stringValue == nil {
                throw mistake("required", index, found: name, expected: "a property name")
            }
            required = list.compactMap(\.stringValue)
        case let other?: throw mistake("required", found: other, expected: "a list of property names")
        }
        for keyword in ["properties", "enum"] where entries[keyword] != nil {
            let expectsList = keyword == "enum"
            if expectsList ? entries[keyword]?.arrayValue == nil : entries[keyword]?.dictionaryValue == nil {
                throw mistake(keyword, found: entries[keyword]!, expected: expectsList ? "a list of the values allowed" : "an object of schemas by property name")
            }
        }
        if entries["enum"]?.arrayValue?.isEmpty == true { throw mistake("enum", found: .array([]), expected: "a list of the values allowed, one at least") }
        allowed = entries["enum"]?.arrayValue
        for bound in ["minimum", "maximum"] {
            if let value = entries[bound], value.numberValue == nil {
                throw FormatDefinitionError(at: JSONPointer(tokens: path + [bound]), message: "found \(value.typeNameWithArticle), expected a number")
            }
        }
        minimum = entries["minimum"]
        maximum = entries["maximum"]
        if let minimum, let maximum, let order = Self.compareNumbers(minimum, maximum), order > 0 {
            throw FormatDefinitionError(at: JSONPointer(tokens: path + ["minimum"]), message: "\(minimum.compactText) is above the maximum \(maximum.compactText), expected a minimum no value is kept out by")
        }
    }

    /// Every violation, each with the pointer of its value.
    public func violations(of value: SaveValue, at pointer: JSONPointer = JSONPointer()) -> [Violation] {
        var found: [Violation] = []
        var path = pointer.tokens
        check(value, path: &path, found: &found)
        return found
    }

    /// `path` is the value's place, pushed and popped on the way down: a pointer is only made
    /// for a violation.
    private func check(_ value: SaveValue, path: inout [String], found: inout [Violation]) {
        func report(_ message: String, _ token: String? = nil) {
            found.append(Violation(at: JSONPointer(tokens: token.map { path + [$0] } ?? path), message: message))
        }
        if !typeNames.isEmpty, !types.contains(ValueTypes(of: value)) {
            report("found \(value.typeNameWithArticle), expected \(typeNames.joined(separator: " or "))")
            return
        }
        if let allowed, !allowed.contains(value) {
            let listed = allowed.prefix(10).map(\.compactText).joined(separator: ", ") + (allowed.count > 10 ? ", …" : "")
            report("found \(value.compactText), expected one of \(listed)")
        }
        if let minimum, let order = Self.compareNumbers(value, minimum), order < 0 {
            report("\(value.compactText) is below the minimum \(minimum.compactText)")
        }
        if let maximum, let order = Self.compareNumbers(value, maximum), order > 0 {
            report("\(value.compactText) is above the maximum \(maximum.compactText)")
        }
        switch value {
        case .dictionary(let entries):
            for key in required where entries[key] == nil { report("missing, expected a required field", key) }
            for (key, schema) in properties {
                guard let child = entries[key] else { continue }
                path.append(key)
                schema.check(child, path: &path, found: &found)
                path.removeLast()
            }
            if let otherProperties {
                for (key, child) in entries where !propertyKeys.contains(key) {
                    path.append(key)
                    otherProperties.check(child, path: &path, found: &found)
                    path.removeLast()
                }
            }
        case .array(let elements):
            guard let items else { return }
            for (index, element) in elements.enumerated() {
                path.append(String(index))
                items.check(element, path: &path, found: &found)
                path.removeLast()
            }
        default:
            break
        }
    }

    /// -1, 0 or 1 as the number `a` is below, equal to or above `b`, exactly: integers are
    /// compared as integers, and an integer with a real without rounding either. `nil` when
    /// either is no number, or NaN.
    static func compareNumbers(_ a: SaveValue, _ b: SaveValue) -> Int? {
        func order<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x > y ? 1 : 0) }
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return order(x, y)
        case (.unsignedInteger(let x), .unsignedInteger(let y)): return order(x, y)
        case (.unsignedInteger, .integer): return 1  // past Int64.max
        case (.integer, .unsignedInteger): return -1
        case (.real(let x), .real(let y)): return x.isNaN || y.isNaN ? nil : order(x, y)
        case (.real, .integer), (.real, .unsignedInteger): return compareNumbers(b, a).map { -$0 }
        case (.integer(let x), .real(let y)):
            guard !y.isNaN else { return nil }
            if y >= 0x1p63 { return -1 }
            if y < -0x1p63 { return 1 }
            let whole = y.rounded(.towardZero)  // within Int64 here, so exact
            if x != Int64(whole) { return order(x, Int64(whole)) }
            return order(0, y - whole)
        case (.unsignedInteger(let x), .real(let y)):
            guard !y.isNaN else { return nil }
            if y >= 0x1p64 { return -1 }
            if y < 0x1p63 { return 1 }
            let whole = y.rounded(.towardZero)
            if x != UInt64(whole) { return order(x, UInt64(whole)) }
            return order(0, y - whole)
        default: return nil
        }
    }

    /// JSON Schema's type names, plus savetool's own (`date`, `data`, `uid`).
    static func matches(_ value: SaveValue, type: String) -> Bool {
        ValueTypes(name: type).contains(ValueTypes(of: value))
    }

    /// Whether the schema requires the field at `pointer` (for rename sources, formats.md).
    public func requires(_ pointer: JSONPointer) -> Bool {
        guard let last = pointer.tokens.last else { return false }
        var schema = self
        for token in pointer.tokens.dropLast() {
            guard let next = schema.properties.first(where: { $0.key == token })?.schema
                ?? ((token == "*" || Int(token) != nil) ? schema.items ?? schema.otherProperties : schema.otherProperties)
            else { return false }
            schema = next
        }
        return schema.required.contains(last)
    }
}

/// The value types a schema's `type` names, as bits, so that checking a value is one test.
struct ValueTypes: OptionSet, Sendable {
    let rawValue: UInt16
    static let dictionary = ValueTypes(rawValue: 1 << 0)
    static let array = ValueTypes(rawValue: 1 << 1)
    static let string = ValueTypes(rawValue: 1 << 2)
    static let bool = ValueTypes(rawValue: 1 << 3)
    static let null = ValueTypes(rawValue: 1 << 4)
    static let integer = ValueTypes(rawValue: 1 << 5)
    static let real = ValueTypes(rawValue: 1 << 6)
    static let date = ValueTypes(rawValue: 1 << 7)
    static let data = ValueTypes(rawValue: 1 << 8)
    static let uid = ValueTypes(rawValue: 1 << 9)

    init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Every type name a schema may use (each one ``init(name:)`` knows).
    static let names = ["object", "dictionary", "array", "string", "boolean", "bool", "null", "integer", "number", "real", "date", "data", "uid"]

    /// An unknown name matches nothing.
    init(name: String) {
        switch name {
        case "object", "dictionary": self = .dictionary
        case "array": self = .array
        case "string": self = .string
        case "boolean", "bool": self = .bool
        case "null": self = .null
        case "integer": self = .integer
        case "number": self = [.integer, .real]
        case "real": self = .real
        case "date": self = .date
        case "data": self = .data
        case "uid": self = .uid
        default: self = []
        }
    }

    init(of value: SaveValue) {
        switch value {
        case .dictionary: self = .dictionary
        case .array: self = .array
        case .string: self = .string
        case .bool: self = .bool
        case .null: self = .null
        case .integer, .unsignedInteger: self = .integer
        case .real: self = .real
        case .date: self = .date
        case .data: self = .data
        case .uid: self = .uid
        }
    }
}
