import Foundation
import OrderedCollections

/// The markers of typed JSON (`{"$date": …}`, `{"$data": …}`, …) that let JSON carry every
/// value of the model, so that plist → JSON → plist gives back the same document.
enum TypedJSON {
    static let markerKeys: Set<String> = ["$date", "$data", "$uid", "$real", "$dict"]

    /// ``markerKeys`` membership for UTF-8 bytes.
    static func isMarkerKey(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        // `$uid` is four bytes, the others five.
        (key.count == 4 || key.count == 5) && key[0] == UInt8(ascii: "$") && markerKeys.contains(String(decoding: key, as: UTF8.self))
    }

    struct MarkerError: Error {
        var found: String
        var expected: String
    }

    /// Whether a dictionary must be wrapped in `{"$dict": …}` so that a reader does not take it for a marker.
    static func needsWrapping(_ entries: OrderedDictionary<String, SaveValue>) -> Bool {
        entries.count == 1 && markerKeys.contains(entries.keys[0])
    }

    /// The value a dictionary stands for: the typed value of a marker, or the dictionary itself.
    static func value(ofMarkedDictionary entries: OrderedDictionary<String, SaveValue>) throws(MarkerError) -> SaveValue {
        guard entries.count == 1, let key = entries.keys.first, markerKeys.contains(key) else {
            return .dictionary(entries)
        }
        let payload = entries.values[0]
        switch (key, payload) {
        case ("$date", .string(let text)):
            guard let date = RFC3339.parse(text) else {
                throw MarkerError(found: "the $date \"\(text)\"", expected: "an RFC 3339 timestamp such as 2026-11-21T08:00:00Z")
            }
            return .date(date)
        case ("$date", .real(let seconds)):
            // Dates beyond years 1–9999 are written as seconds since 2001-01-01T00:00:00Z. A
            // `{"$real": "nan"}` there is no time: no plist reader takes it, savetool's included.
            guard seconds.isFinite else {
                throw MarkerError(found: "a $date of \(seconds) seconds", expected: "a finite number of seconds since 2001-01-01T00:00:00Z, or an RFC 3339 timestamp")
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case ("$date", .integer(let seconds)):
            return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        case ("$data", .string(let text)):
            guard let data = Data(base64Encoded: text) else {
                throw MarkerError(found: "a $data value that is not base64", expected: "standard base64 with padding, such as \"3q2+7w==\"")
            }
            return .data(data)
        case ("$uid", .integer(let number)) where number >= 0:
            return .uid(UInt64(number))
        case ("$uid", .unsignedInteger(let number)):
            return .uid(number)
        case ("$real", .string(let text)):
            switch text.lowercased() {
            case "nan": return .real(.nan)
            case "inf", "+inf", "infinity": return .real(.infinity)
            case "-inf", "-infinity": return .real(-.infinity)
            default:
                if let number = XMLPlistReader.parseReal(text), number.isFinite { return .real(number) }
            }
        case ("$real", .real(let number)):
            return .real(number)
        case ("$real", .integer(let number)):
            return .real(Double(number))
        case ("$dict", .dictionary(let inner)):
            return .dictionary(inner)
        default:
            break
        }
        // The marker's own value when it is a scalar (`"1e999"`, `-1`): what was wrong is then plain.
        let held: String = switch payload {
        case .string, .integer, .unsignedInteger, .real, .bool: payload.compactText
        default: payload.typeNameWithArticle
        }
        throw MarkerError(found: "a \(key) marker holding \(held)", expected: expectation(for: key))
    }

    private static func expectation(for key: String) -> String {
        switch key {
        case "$date": "{\"$date\": \"2026-11-21T08:00:00Z\"}"
        case "$data": "{\"$data\": \"<base64>\"}"
        case "$uid": "{\"$uid\": <integer ≥ 0>}"
        case "$real": "{\"$real\": \"nan\" | \"inf\" | \"-inf\"} or a finite number"
        default: "{\"$dict\": {…}} around a dictionary"
        }
    }
}
