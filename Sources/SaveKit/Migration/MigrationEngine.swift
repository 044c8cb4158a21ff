import Foundation
import OrderedCollections

/// Runs migration operations on a document, each on the previous one's output.
///
/// Operations work on a copy: a step either completes or throws, and the caller's document
/// (and so the file) is left as it was. Unknown fields are never touched.
public struct MigrationEngine: Sendable {
    /// Whether a field is required by the version being migrated from: a `rename` whose source
    /// is missing is then an error instead of a no-op (formats.md).
    public var isRequired: @Sendable (JSONPointer) -> Bool

    public init(isRequired: @escaping @Sendable (JSONPointer) -> Bool = { _ in false }) {
        self.isRequired = isRequired
    }

    /// Applies `operations` to `document`; `step` (such as `"1→2"`) names it in errors.
    public func apply(_ operations: [MigrationOperation], to document: inout SaveValue, step: String) throws(MigrationError) {
        var working = document
        var context = Context(step: step, root: .null)
        for operation in operations {
            // A snapshot shares the document's storage, so the operation's first change copies
            // what it changes: only taken for the operations that read it.
            context.root = Self.readsDocument(operation) ? working : .null
            try run(operation, on: &working, context: &context, inElement: false)
        }
        document = working
    }

    /// Whether the operation may read the whole document as it stood before it (`$ref`,
    /// `$lookup`, or a condition, whose values may be either).
    static func readsDocument(_ operation: MigrationOperation) -> Bool {
        func reads(_ source: MigrationOperation.ValueSource) -> Bool {
            switch source {
            case .literal, .relative: false
            case .reference, .lookup: true
            }
        }
        switch operation {
        case .set(_, let source, _): return reads(source)
        case .forEach(_, let operations): return operations.contains(where: readsDocument)
        case .conditional: return true
        case .move, .copy, .remove, .convert, .wrap, .unwrap, .arrayToMap, .mapToArray, .assert: return false
        }
    }

    private struct Context {
        var step: String
        /// The whole document as it stands before the current operation, for `$ref` and `$lookup`.
        var root: SaveValue
    }

    // MARK: - Operations

    /// `inElement`: the operation is one of a `forEach`, and `value` its element, which `$rel`
    /// reads as it stands.
    private func run(_ operation: MigrationOperation, on value: inout SaveValue, context: inout Context, inElement: Bool) throws(MigrationError) {
        func fail(_ path: JSONPointer, _ message: String) -> MigrationError {
            MigrationError(step: context.step, operation: operation.name, path: path, message: message)
        }
        let step = context.step, name = operation.name
        switch operation {
        case .move(let from, let to), .copy(let from, let to):
            let isMove = if case .move = operation { true } else { false }
            for (source, captured) in Self.expand(from, in: value) {
                guard let moved = value.value(at: source) else {
                    if from.tokens.contains("*") { continue }
                    if isRequired(source) { throw fail(source, "the field is missing, and the version migrated from requires it") }
                    continue  // an optional field that is not there: nothing to rename
                }
                let target = Self.substitute(captured, into: to)
                if isMove, Self.renameInPlace(source, to: target, in: &value) { continue }
                if isMove { _ = try? value.removeValue(at: source) }
                do { try value.setValue(moved, at: target) } catch { throw fail(target, "\(error)") }
            }
        case .set(let path, let source, let onlyIfMissing):
            for target in Self.expandParents(of: path, in: value) {
                if onlyIfMissing, value.value(at: target) != nil { continue }
                let newValue = try resolve(source, context: context, element: inElement ? value : .none, at: target, fail: fail)
                do { try value.setValue(newValue, at: target) } catch { throw fail(target, "\(error)") }
            }
        case .remove(let path):
            for (target, _) in Self.expand(path, in: value) { _ = try? value.removeValue(at: target) }
        case .convert(let path, let type, let encoding):
            for (target, _) in Self.expand(path, in: value) {
                guard let current = value.value(at: target) else { continue }
                let converted = try Self.convert(current, to: type, encoding: encoding) { message in fail(target, message) }
                do { try value.setValue(converted, at: target) } catch { throw fail(target, "\(error)") }
            }
        case .wrap(let path, let key):
            for (target, _) in Self.expand(path, in: value) {
                guard let current = value.value(at: target) else { continue }
                do { try value.setValue(.dictionary([key: current]), at: target) } catch { throw fail(target, "\(error)") }
            }
        case .unwrap(let path, let key):
            for (target, _) in Self.expand(path, in: value) {
                guard let current = value.value(at: target) else { continue }
                guard let inner = current.dictionaryValue?[key] else {
                    throw fail(target, "found \(current.typeNameWithArticle), expected a dictionary with the key \"\(key)\"")
                }
                do { try value.setValue(inner, at: target) } catch { throw fail(target, "\(error)") }
            }
        case .forEach(let path, let operations):
            for (target, _) in Self.expand(path, in: value) {
                // Each element is changed where it is: no copy of the container or of an element.
                _ = try value.modify(at: target) { (container: inout SaveValue) throws(MigrationError) in
                    switch container {
                    case .array(var items):
                        container = .null
                        defer { container = .array(items) }
                        for index in items.indices {
                            do throws(MigrationError) {
                                for inner in operations { try run(inner, on: &items[index], context: &context, inElement: true) }
                            } catch {
                                throw error.placed(under: target.appending(String(index)))
                            }
                        }
                    case .dictionary(var entries):
                        container = .null
                        defer { container = .dictionary(entries) }
                        for index in entries.values.indices {
                            do throws(MigrationError) {
                                for inner in operations { try run(inner, on: &entries.values[index], context: &context, inElement: true) }
                            } catch {
                                throw error.placed(under: target.appending(entries.keys[index]))
                            }
                        }
                    default:
                        throw MigrationError(
                            step: step, operation: name, path: target,
                            message: "found \(container.typeNameWithArticle), expected an array or a dictionary to go through")
                    }
                }
            }
        case .arrayToMap(let path, let keyField):
            for (target, _) in Self.expand(path, in: value) {
                guard let current = value.value(at: target) else { continue }
                guard let items = current.arrayValue else { throw fail(target, "found \(current.typeNameWithArticle), expected an array") }
                var map = OrderedDictionary<String, SaveValue>()
                for (index, item) in items.enumerated() {
                    guard var entries = item.dictionaryValue, let keyValue = entries.removeValue(forKey: keyField) else {
                        throw fail(target.appending(index), "an element without \"\(keyField)\", expected a dictionary holding it")
                    }
                    let key: String
                    switch keyValue {
                    case .string(let text): key = text
                    case .integer(let number): key = String(number)
                    default: throw fail(target.appending(index).appending(keyField), "found \(keyValue.typeNameWithArticle), expected a string or an integer key")
                    }
                    guard map.updateValue(.dictionary(entries), forKey: key) == nil else {
                        throw fail(target.appending(index).appending(keyField), "the key \"\(key)\" a second time, expected each key once")
                    }
                }
                do { try value.setValue(.dictionary(map), at: target) } catch { throw fail(target, "\(error)") }
            }
        case .mapToArray(let path, let keyField):
            for (target, _) in Self.expand(path, in: value) {
                guard let current = value.value(at: target) else { continue }
                guard let map = current.dictionaryValue else { throw fail(target, "found \(current.typeNameWithArticle), expected a dictionary") }
                var items: [SaveValue] = []
                for (key, item) in map {
                    guard let entries = item.dictionaryValue, entries[keyField] == nil else {
                        throw fail(target.appending(key), "found \(item.typeNameWithArticle), expected a dictionary without \"\(keyField)\"")
                    }
                    var element: OrderedDictionary<String, SaveValue> = [keyField: .string(key)]
                    for (field, fieldValue) in entries { element[field] = fieldValue }
                    items.append(.dictionary(element))
                }
                do { try value.setValue(.array(items), at: target) } catch { throw fail(target, "\(error)") }
            }
        case .assert(let path, let expected, let type, let keysIn):
            let matches = Self.expand(path, in: value)
            if matches.isEmpty { throw fail(path, "no value, expected \(expected.map { "\($0)" } ?? type ?? "one")") }
            // The keys allowed, read once for every target (an assert changes nothing); a dozen
            // players are compared, and a set is made only for many.
            let allowed = keysIn.map { Self.values(matching: $0, in: value).compactMap(\.stringValue) } ?? []
            let large = allowed.count < 16 ? nil : Set(allowed)
            let isAllowed = { (key: String) in large?.contains(key) ?? allowed.contains(key) }
            for (target, _) in matches {
                guard let current = value.value(at: target) else { throw fail(target, "no value, expected one") }
                if let expected, current != expected {
                    throw fail(target, "found \(Self.text(current)), expected \(Self.text(expected))")
                }
                if let type, !Schema.matches(current, type: type) {
                    throw fail(target, "found \(current.typeNameWithArticle), expected \(SaveValue.withArticle(type))")
                }
                if let keysIn {
                    guard let entries = current.dictionaryValue else { throw fail(target, "found \(current.typeNameWithArticle), expected a dictionary") }
                    if let stray = entries.keys.first(where: { !isAllowed($0) }) {
                        throw fail(target.appending(stray), "\"\(stray)\" is not among the values at \(keysIn.displayText), expected only those keys")
                    }
                }
            }
        case .conditional(let condition, let then, let otherwise):
            // `.none`, not `nil`: SaveValue is ExpressibleByNilLiteral, and `nil` here would be `.null`.
            let element: SaveValue? = inElement ? value : .none
            let holds = condition.holds(in: value) { source in self.value(of: source, context: context, element: element) }
            for inner in holds ? then : otherwise { try run(inner, on: &value, context: &context, inElement: inElement) }
        }
    }

    /// The value `source` names, or `nil` where there is none: a condition's missing value,
    /// found without making the message ``resolve(_:context:element:at:fail:)`` would (half of
    /// a batch's files may lack the field a condition reads).
    private func value(of source: MigrationOperation.ValueSource, context: Context, element: SaveValue?) -> SaveValue? {
        switch source {
        case .literal(let value): return value
        case .reference(let pointer): return context.root.value(at: pointer)
        case .relative(let pointer): return element?.value(at: pointer)
        case .lookup(let map, let keySource, let fallback):
            guard let key = value(of: keySource, context: context, element: element).flatMap(Self.lookupKey),
                let dictionary = context.root.value(at: map)?.dictionaryValue
            else { return nil }
            return dictionary[key] ?? fallback
        }
    }

    /// A `$lookup` key: a string, or an integer as its digits.
    private static func lookupKey(_ value: SaveValue) -> String? {
        switch value {
        case .string(let text): text
        case .integer(let number): String(number)
        default: nil
        }
    }

    /// The value `source` names, or an error saying which step of ``value(of:context:element:)``
    /// found nothing.
    private func resolve(
        _ source: MigrationOperation.ValueSource, context: Context, element: SaveValue?, at target: JSONPointer,
        fail: (JSONPointer, String) -> MigrationError
    ) throws(MigrationError) -> SaveValue {
        if let found = value(of: source, context: context, element: element) { return found }
        switch source {
        case .literal(let value):
            return value  // never missing
        case .reference(let pointer):
            // Placed at the operation's target (a forEach places it in its element): the pointer
            // of a $ref is the document's own, and is named in the message.
            throw fail(target, "no value at \(pointer.displayText) for $ref, expected one")
        case .relative(let pointer):
            throw fail(pointer, element == nil ? "$rel outside forEach, expected it only inside one" : "no value for $rel in this element, expected one")
        case .lookup(let map, let keySource, _):
            let keyValue = try resolve(keySource, context: context, element: element, at: target, fail: fail)
            guard let key = Self.lookupKey(keyValue) else {
                throw fail(target, "a $lookup key that is \(keyValue.typeNameWithArticle), expected a string")
            }
            guard context.root.value(at: map)?.dictionaryValue != nil else {
                throw fail(target, "no dictionary at \(map.displayText) for $lookup, expected one")
            }
            throw fail(target, "no entry \"\(key)\" in \(map.displayText) for $lookup, expected one (or a default as its third element)")
        }
    }

    // MARK: - Conversions

    static func convert(
        _ value: SaveValue, to type: MigrationOperation.TargetType, encoding: MigrationOperation.DateEncoding?,
        fail: (String) -> MigrationError
    ) throws(MigrationError) -> SaveValue {
        switch (type, value) {
        case (.integer, .integer), (.integer, .unsignedInteger), (.real, .real), (.string, .string), (.bool, .bool), (.date, .date), (.data, .data):
            return value
        case (.integer, .real(let n)):
            guard n.rounded() == n, let whole = Int64(exactly: n) else { throw fail("the real \(n) has a fraction, expected a whole number") }
            return .integer(whole)
        case (.integer, .string(let text)):
            guard let whole = Int64(text.trimmingCharacters(in: .whitespaces)) else { throw fail("\"\(text)\" is not an integer") }
            return .integer(whole)
        case (.integer, .bool(let flag)):
            return .integer(flag ? 1 : 0)
        case (.real, .integer), (.real, .unsignedInteger):
            return .real(value.numberValue!)
        case (.real, .string(let text)):
            guard let real = Double(text.trimmingCharacters(in: .whitespaces)) else { throw fail("\"\(text)\" is not a number") }
            return .real(real)
        case (.string, .integer), (.string, .unsignedInteger), (.string, .real):
            return .string(text(value))
        case (.string, .bool(let flag)):
            return .string(flag ? "true" : "false")
        case (.string, .date(let date)):
            return .string(RFC3339.format(date))
        case (.string, .data(let bytes)):
            return .string(bytes.base64EncodedString())
        case (.bool, .integer(let n)) where n == 0 || n == 1:
            return .bool(n == 1)
        case (.bool, .string(let text)) where text == "true" || text == "false":
            return .bool(text == "true")
        case (.date, .string(let text)):
            guard encoding == nil || encoding == .iso8601, let date = RFC3339.parse(text) else {
                throw fail("\"\(text)\" is not an ISO 8601 date, expected one such as 2026-11-21T08:00:00Z")
            }
            return .date(date)
        case (.date, _) where value.numberValue != nil:
            let seconds = value.numberValue!
            switch encoding {
            case .appleReference: return .date(Date(timeIntervalSinceReferenceDate: seconds))
            case .unixSeconds: return .date(Date(timeIntervalSince1970: seconds))
            case .unixMillis: return .date(Date(timeIntervalSince1970: seconds / 1000))
            case .iso8601, nil: throw fail("a number, expected \"from\": appleReference, unixSeconds or unixMillis to read it as a date")
            }
        case (.data, .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw fail("the string is not base64, expected base64 to make data") }
            return .data(data)
        default:
            throw fail("\(value.typeNameWithArticle) cannot become \(SaveValue.withArticle(type.rawValue))")
        }
    }

    static func text(_ value: SaveValue) -> String {
        switch value {
        case .integer(let n): String(n)
        case .unsignedInteger(let n): String(n)
        case .real(let n): n.description
        case .string(let s): "\"\(s)\""
        default: value.typeName
        }
    }

    /// A key renamed within its own dictionary keeps its place, so a migrated file reads (and
    /// diffs) like the original; `false` when the move is anything else.
    static func renameInPlace(_ source: JSONPointer, to target: JSONPointer, in value: inout SaveValue) -> Bool {
        guard let parent = source.parent, target.parent == parent, let oldKey = source.tokens.last, let newKey = target.tokens.last,
            case .dictionary(let entries)? = value.value(at: parent), entries[newKey] == nil, let index = entries.index(forKey: oldKey)
        else { return false }
        var renamed = OrderedDictionary<String, SaveValue>(minimumCapacity: entries.count)
        for (offset, (key, item)) in entries.enumerated() { renamed[offset == index ? newKey : key] = item }
        return (try? value.setValue(.dictionary(renamed), at: parent)) != nil
    }

    // MARK: - Wildcards

    /// What a pattern matched: most often the pointer itself, held without an array (operations
    /// inside a `forEach` run for every element, and an array for each was a batch's allocation).
    struct Matches: Sequence {
        fileprivate enum Storage {
            case one(JSONPointer)
            case many([(JSONPointer, [String])])
        }
        fileprivate let storage: Storage

        var isEmpty: Bool {
            if case .many(let matches) = storage { return matches.isEmpty }
            return false
        }

        struct Iterator: IteratorProtocol {
            fileprivate var storage: Storage
            fileprivate var index = 0

            mutating func next() -> (JSONPointer, [String])? {
                defer { index += 1 }
                switch storage {
                case .one(let pointer): return index == 0 ? (pointer, []) : nil
                case .many(let matches): return index < matches.count ? matches[index] : nil
                }
            }
        }

        func makeIterator() -> Iterator { Iterator(storage: storage) }
    }

    /// The concrete pointers an (optionally `*`-bearing) pointer matches in `value`, each with the
    /// tokens its wildcards took. Without wildcards: the pointer itself, whether it exists or not.
    static func expand(_ pattern: JSONPointer, in value: SaveValue) -> Matches {
        if !pattern.tokens.contains("*") { return Matches(storage: .one(pattern)) }
        var results: [(JSONPointer, [String])] = [(JSONPointer(), [])]
        for token in pattern.tokens {
            var next: [(JSONPointer, [String])] = []
            for (prefix, captured) in results {
                guard token == "*" else { next.append((prefix.appending(token), captured)); continue }
                switch value.value(at: prefix) {
                case .array(let items)?: next += items.indices.map { (prefix.appending($0), captured + [String($0)]) }
                case .dictionary(let entries)?: next += entries.keys.map { (prefix.appending($0), captured + [$0]) }
                default: break
                }
            }
            results = next
        }
        return Matches(storage: .many(results))
    }

    /// The values an (optionally `*`-bearing) pointer matches in `value`, as ``expand(_:in:)``
    /// and ``SaveValue/value(at:)`` find them, but by walking the value once, without a pointer
    /// made for each (`assert`'s `keysIn` reads every player's name of every file so).
    static func values(matching pattern: JSONPointer, in value: SaveValue) -> [SaveValue] {
        var found: [SaveValue] = []
        func walk(_ current: SaveValue, _ depth: Int) {
            guard depth < pattern.tokens.count else { return found.append(current) }
            let token = pattern.tokens[depth]
            switch current {
            case .dictionary(let entries):
                if token == "*" {
                    for child in entries.values { walk(child, depth + 1) }
                } else if let child = entries[token] {
                    walk(child, depth + 1)
                }
            case .array(let items):
                if token == "*" {
                    for child in items { walk(child, depth + 1) }
                } else if let index = SaveValue.arrayIndex(token), index < items.count {
                    walk(items[index], depth + 1)
                }
            default:
                break
            }
        }
        walk(value, 0)
        return found
    }

    /// The targets of `set`: the pointer with its parent's wildcards expanded (the last token names the field to set).
    static func expandParents(of pattern: JSONPointer, in value: SaveValue) -> [JSONPointer] {
        guard let last = pattern.tokens.last, let parent = pattern.parent, parent.tokens.contains("*") else { return [pattern] }
        return expand(parent, in: value).map { $0.0.appending(last) }
    }

    /// `to` with its `*` segments replaced, in order, by the tokens `from`'s wildcards matched.
    static func substitute(_ captured: [String], into pattern: JSONPointer) -> JSONPointer {
        var remaining = captured[...]
        return JSONPointer(tokens: pattern.tokens.map { token in
            token == "*" ? (remaining.popFirst() ?? token) : token
        })
    }
}
