import Foundation
import OrderedCollections

/// Makes a value fit a codec that cannot hold all of it, the way the user chose.
///
/// This is the one place where a conversion may lose something, and it never does so silently:
/// every change is counted in ``Report`` (the CLI prints it on stderr), and anything the options
/// do not allow is refused with the JSON Pointer of the value.
public enum ValueLowering {
    /// What lowering changed.
    public struct Report: Sendable, Equatable {
        public var droppedNulls = 0
        public var truncatedDates = 0
        /// Plain JSON: dates, data and uids written as strings and integers.
        public var retypedValues = 0

        public init() {}

        public var isEmpty: Bool { droppedNulls == 0 && truncatedDates == 0 && retypedValues == 0 }

        /// One sentence per kind of change, for stderr.
        public var warnings: [String] {
            var lines: [String] = []
            if droppedNulls > 0 { lines.append("dropped \(droppedNulls) null value\(droppedNulls == 1 ? "" : "s") (--null drop)") }
            if truncatedDates > 0 {
                lines.append("rounded \(truncatedDates) date\(truncatedDates == 1 ? "" : "s") down to whole seconds (--round-dates)")
            }
            if retypedValues > 0 {
                lines.append(
                    "plain JSON: \(retypedValues) date, data or uid value\(retypedValues == 1 ? "" : "s") written as string or integer; typed JSON (without --plain) keeps them")
            }
            return lines
        }
    }

    /// Returns `value` changed to fit `capabilities`, or throws naming the first value that
    /// cannot be made to fit. Values that already fit are returned without copying.
    public static func lower(
        _ value: SaveValue, to capabilities: ValueCapabilities, codecID: String, options: EncodingOptions,
        report: inout Report
    ) throws(CodecError) -> SaveValue {
        var effective = capabilities
        if options.plainJSON { effective.subtract([.date, .data, .uid, .nonFiniteReal]) }
        if effective.isSuperset(of: .all) { return value }
        var lowering = Lowering(capabilities: effective, codecID: codecID, options: options, report: report)
        var path: [String] = []
        let result = try lowering.visit(value, path: &path) ?? value
        report = lowering.report
        return result
    }

    private struct Lowering {
        let capabilities: ValueCapabilities
        let codecID: String
        let options: EncodingOptions
        var report: Report

        /// `nil` means "unchanged"; `.some(nil)` is not used — a dropped value is signalled by `dropped`.
        mutating func visit(_ value: SaveValue, path: inout [String]) throws(CodecError) -> SaveValue? {
            switch value {
            case .null:
                guard capabilities.contains(.null) else {
                    if options.nullPolicy == .drop { return nil }  // caller drops it
                    throw unrepresentable(path, "null", "a value (plist has no null; --null drop leaves such keys out)")
                }
                return nil
            case .real(let number) where !number.isFinite && !capabilities.contains(.nonFiniteReal):
                throw unrepresentable(path, "the real \(number)", "a finite number (typed JSON keeps NaN and infinities)")
            case .date(let date):
                if !capabilities.contains(.date) {
                    report.retypedValues += 1
                    return .string(RFC3339.format(date))
                }
                let seconds = date.timeIntervalSinceReferenceDate
                if !capabilities.contains(.subsecondDate), seconds.rounded(.down) != seconds {
                    guard options.subsecondDatePolicy == .truncate else {
                        throw unrepresentable(
                            path, "the date \(RFC3339.format(date)) with a fraction of a second",
                            "whole seconds (XML plist dates hold no fraction; --round-dates rounds down, bplist or typed JSON keep it)")
                    }
                    report.truncatedDates += 1
                    return .date(Date(timeIntervalSinceReferenceDate: seconds.rounded(.down)))
                }
                return nil
            case .data(let bytes) where !capabilities.contains(.data):
                report.retypedValues += 1
                return .string(bytes.base64EncodedString())
            case .uid(let number) where !capabilities.contains(.uid):
                report.retypedValues += 1
                return .int(number)
            case .string(let text) where !capabilities.contains(.controlCharacters):
                if text.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
                    throw unrepresentable(
                        path, "a string with a control character", "text without C0 control characters (XML 1.0 cannot hold them; bplist and JSON can)")
                }
                return nil
            case .array(let items):
                var changed: [SaveValue]? = nil
                for (index, item) in items.enumerated() {
                    path.append(String(index))
                    defer { path.removeLast() }
                    let replacement = try visit(item, path: &path)
                    let dropped = replacement == nil && isDropped(item)
                    if replacement != nil || dropped {
                        if changed == nil { changed = Array(items[..<index]) }
                    }
                    if dropped { report.droppedNulls += 1; continue }
                    changed?.append(replacement ?? item)
                }
                return changed.map(SaveValue.array)
            case .dictionary(let entries):
                var changed: OrderedDictionary<String, SaveValue>? = nil
                for (offset, entry) in entries.enumerated() {
                    path.append(entry.key)
                    defer { path.removeLast() }
                    let replacement = try visit(entry.value, path: &path)
                    let dropped = replacement == nil && isDropped(entry.value)
                    if replacement != nil || dropped, changed == nil {
                        changed = OrderedDictionary(uncheckedUniqueKeys: entries.keys[..<offset], values: entries.values[..<offset])
                    }
                    if dropped { report.droppedNulls += 1; continue }
                    changed?[entry.key] = replacement ?? entry.value
                }
                return changed.map(SaveValue.dictionary)
            default:
                return nil
            }
        }

        private func isDropped(_ value: SaveValue) -> Bool {
            if case .null = value { return !capabilities.contains(.null) && options.nullPolicy == .drop }
            return false
        }

        private func unrepresentable(_ path: [String], _ found: String, _ expected: String) -> CodecError {
            .unrepresentable(codec: codecID, at: JSONPointer(tokens: path), found: found, expected: expected)
        }
    }
}
