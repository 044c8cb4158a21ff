import Foundation
import OrderedCollections

/// One value of a save file, whatever codec it came from.
///
/// Every codec reads into and writes from this one model, so that a conversion is always
/// `decode` in one codec followed by `encode` in another. It is a superset of what JSON and
/// property lists can hold: where a target cannot hold a value (a date in plain JSON, `null`
/// in a plist) the encoder asks the caller what to do instead of guessing.
///
/// ```swift
/// let save: SaveValue = ["level": 3, "name": "Ana", "lastPlayed": .date(Date())]
/// let json = try JSONCodec().encode(save)
/// ```
public enum SaveValue: Sendable {
    case null
    case bool(Bool)
    /// A signed integer; integers above `Int64.max` are ``unsignedInteger(_:)``.
    case integer(Int64)
    /// An integer above `Int64.max`. Smaller values are always stored as ``integer(_:)``,
    /// so that each number has exactly one representation (use ``SaveValue/int(_:)``).
    case unsignedInteger(UInt64)
    case real(Double)
    case string(String)
    /// A point in time, held exactly as property lists hold it: seconds since 2001-01-01T00:00:00Z.
    case date(Date)
    case data(Data)
    case array([SaveValue])
    /// A dictionary whose key order is the order of the file it came from.
    case dictionary(OrderedDictionary<String, SaveValue>)
    /// The `CF$UID` reference of keyed archives (`NSKeyedArchiver`) in binary plists.
    case uid(UInt64)

    /// An integer in its one canonical representation.
    public static func int(_ value: UInt64) -> SaveValue {
        value <= UInt64(Int64.max) ? .integer(Int64(value)) : .unsignedInteger(value)
    }
}

extension SaveValue {
    /// The name of the value's type as users see it in messages and `inspect`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .integer, .unsignedInteger: "integer"
        case .real: "real"
        case .string: "string"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        case .uid: "uid"
        }
    }

    /// An integer or a real as a `Double`, for comparisons and conversions; `nil` for anything else.
    public var numberValue: Double? {
        switch self {
        case .integer(let n): Double(n)
        case .unsignedInteger(let n): Double(n)
        case .real(let n): n
        default: nil
        }
    }

    /// ``typeName`` with its article, for messages: "an integer", "a string".
    public var typeNameWithArticle: String { Self.withArticle(typeName) }

    /// A type name with "a" or "an" before it ("a uid": the u is said "you").
    public static func withArticle(_ name: String) -> String {
        if name == "data" { return "data" }  // a mass noun: "found data", not "found a data"
        return (name.first.map { "aeio".contains($0) } ?? false ? "an " : "a ") + name
    }

    /// An integer or a real.
    public var isNumber: Bool {
        switch self {
        case .integer, .unsignedInteger, .real: true
        default: false
        }
    }

    /// The value as one line of typed JSON, for messages and reports: `12`, `"Zoë"`, `{"$date": …}`.
    public var compactText: String {
        var options = EncodingOptions()
        options.pretty = false
        guard let bytes = try? JSONCodec().encode(self, options: options) else { return typeName }
        return String(decoding: bytes.last == 0x0A ? bytes.dropLast() : bytes[...], as: UTF8.self)
    }

    public var isContainer: Bool {
        switch self {
        case .array, .dictionary: true
        default: false
        }
    }

    public var arrayValue: [SaveValue]? {
        if case .array(let items) = self { return items } else { return nil }
    }

    public var dictionaryValue: OrderedDictionary<String, SaveValue>? {
        if case .dictionary(let entries) = self { return entries } else { return nil }
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text } else { return nil }
    }

    /// The value as an `Int64` when it is an integer that fits.
    public var int64Value: Int64? {
        if case .integer(let number) = self { return number } else { return nil }
    }

    /// Looks up a key of a dictionary value.
    public subscript(key: String) -> SaveValue? {
        dictionaryValue?[key]
    }
}

// MARK: - Equality

/// Strict equality, the one a lossless round trip must keep: same types (an integer `1` is not
/// the real `1.0`), same key order, strings equal code unit for code unit (not merely
/// canonically equivalent), reals equal bit for bit apart from NaN payloads.
extension SaveValue: Equatable {
    public static func == (lhs: SaveValue, rhs: SaveValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.unsignedInteger(let a), .unsignedInteger(let b)): return a == b
        case (.real(let a), .real(let b)): return sameReal(a, b)
        case (.string(let a), .string(let b)): return sameBytes(a, b)
        case (.date(let a), .date(let b)):
            return sameReal(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
        case (.data(let a), .data(let b)): return a == b
        case (.uid(let a), .uid(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.dictionary(let a), .dictionary(let b)):
            guard a.count == b.count else { return false }
            for (left, right) in zip(a, b) {
                guard sameBytes(left.key, right.key), left.value == right.value else { return false }
            }
            return true
        default: return false
        }
    }

    /// Code unit for code unit, compared as memory where the text is contiguous (a native
    /// string always is): the byte-by-byte walk of `utf8.elementsEqual` was a tenth of a merge's
    /// instructions, every key and string of three documents compared on its way.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let (left, right) = (a.utf8, b.utf8)
        guard left.count == right.count else { return false }
        let compared = left.withContiguousStorageIfAvailable { l in
            right.withContiguousStorageIfAvailable { r in l.isEmpty || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
        }
        if let compared, let same = compared { return same }
        return left.elementsEqual(right)
    }

    private static func sameReal(_ a: Double, _ b: Double) -> Bool {
        if a.isNaN || b.isNaN { return a.isNaN && b.isNaN }
        return a == b && a.sign == b.sign
    }
}

// MARK: - Literals

extension SaveValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: SaveValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, SaveValue)...) {
        self = .dictionary(OrderedDictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
