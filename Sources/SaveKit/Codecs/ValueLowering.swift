import Foundation

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
        /// Dates, data and uids written as strings and integers because the codec (a plugin's)
        /// holds no such type, whatever the options; and that codec.
        public var retypedForCodec = 0
        public var codecID = ""

        public init() {}

        public var isEmpty: Bool { droppedNulls == 0 && truncatedDates == 0 && retypedValues == 0 && retypedForCodec == 0 }

        /// Counts what `other` counted too (the pieces of one document written apart).
        public mutating func add(_ other: Report) {
            droppedNulls += other.droppedNulls
            truncatedDates += other.truncatedDates
            retypedValues += other.retypedValues
            retypedForCodec += other.retypedForCodec
            if codecID.isEmpty { codecID = other.codecID }
        }

        /// One sentence per kind of change, for stderr, each with the hint of the choice that
        /// made it, if a choice did (a front end names its option).
        public var warnings: [(text: String, hint: ErrorHint?)] {
            var lines: [(String, ErrorHint?)] = []
            if droppedNulls > 0 { lines.append(("dropped \(droppedNulls) null value\(droppedNulls == 1 ? "" : "s")", .dropNulls)) }
            if truncatedDates > 0 {
                lines.append(("rounded \(truncatedDates) date\(truncatedDates == 1 ? "" : "s") down to whole seconds", .roundDates))
            }
            if retypedValues > 0 {
                lines.append(("plain JSON: \(retypedValues) date, data or uid value\(retypedValues == 1 ? "" : "s") written as string or integer", .keepTypes))
            }
            if retypedForCodec > 0 {
                let values = "\(retypedForCodec) date, data or uid value\(retypedForCodec == 1 ? "" : "s")"
                lines.append(("\(values) written as string or integer: \(codecID) holds no such type", nil))
            }
            return lines
        }
    }

    /// What a codec with `capabilities` can hold once `options` are applied (plain JSON holds less).
    public static func effectiveCapabilities(_ capabilities: ValueCapabilities, options: EncodingOptions) -> ValueCapabilities {
        var effective = capabilities
        if options.plainJSON { effective.subtract([.date, .data, .uid, .nonFiniteReal]) }
        return effective
    }

    /// Returns `value` changed to fit `capabilities`, or throws naming the first value that
    /// cannot be made to fit. A value that already fits is returned as it is.
    public static func lower(
        _ value: SaveValue, to capabilities: ValueCapabilities, codecID: String, options: EncodingOptions,
        report: inout Report
    ) throws -> SaveValue {
        let effective = effectiveCapabilities(capabilities, options: options)
        guard needsLowering(value, effective) else { return value }
        var sink = LoweringSink(downstream: TreeBuilder(), capabilities: effective, codecID: codecID, options: options)
        try value.emit(into: &sink)
        report.droppedNulls += sink.report.droppedNulls
        report.truncatedDates += sink.report.truncatedDates
        report.retypedValues += sink.report.retypedValues
        report.retypedForCodec += sink.report.retypedForCodec
        if sink.report.retypedForCodec > 0 { report.codecID = codecID }
        return sink.downstream.result ?? .null
    }

    /// Whether anything in `value` lies outside `capabilities` (a walk without copying).
    static func needsLowering(_ value: SaveValue, _ capabilities: ValueCapabilities) -> Bool {
        if capabilities.isSuperset(of: .all) { return false }
        switch value {
        case .array(let items): return items.contains { needsLowering($0, capabilities) }
        case .dictionary(let entries): return entries.values.contains { needsLowering($0, capabilities) }
        default: return LoweringSink<TreeBuilder>.scalarNeedsLowering(value, capabilities)
        }
    }
}

/// The streaming form of ``ValueLowering``: passes events on to `downstream`, converting or
/// dropping the scalars the target cannot hold, and refusing the rest with their JSON Pointer.
public struct LoweringSink<Downstream: SaveValueSink>: SaveValueSink {
    public var downstream: Downstream
    public private(set) var report = ValueLowering.Report()
    private let capabilities: ValueCapabilities
    private let codecID: String
    private let options: EncodingOptions

    /// Where we are, for the pointers of errors: the current key or index of each open container.
    private enum Position { case key(String), index(Int) }
    private var positions: [Position] = []
    /// A dictionary key is held back until its value is known to be kept.
    private var pendingKey: String?

    public init(downstream: Downstream, capabilities: ValueCapabilities, codecID: String, options: EncodingOptions) {
        self.downstream = downstream
        self.capabilities = capabilities
        self.codecID = codecID
        self.options = options
    }

    public mutating func beginArray(count: Int) throws {
        advance()
        try forwardPendingKey()
        try downstream.beginArray(count: count)
        positions.append(.index(-1))
    }

    public mutating func endArray() throws {
        positions.removeLast()
        try downstream.endArray()
    }

    public mutating func beginDictionary(count: Int) throws {
        advance()
        try forwardPendingKey()
        try downstream.beginDictionary(count: count)
        positions.append(.key(""))
    }

    public mutating func key(_ key: String) throws {
        positions[positions.count - 1] = .key(key)
        if !capabilities.contains(.controlCharacters), Self.holdsWhatXMLCannot(key.utf8) {
            throw unrepresentable(
                "a key with a control character or U+FFFE/U+FFFF",
                "text without C0 control characters, U+FFFE or U+FFFF (\(reason("cannot hold them", plist: "XML 1.0 cannot hold them; bplist and JSON can")))")
        }
        pendingKey = key
    }

    /// What an XML 1.0 document cannot hold in text, however escaped: C0 control characters
    /// but tab, line feed and carriage return, and the noncharacters U+FFFE and U+FFFF (UTF-8
    /// EF BF BE, EF BF BF). Written, they make a file that XML readers refuse.
    static func holdsWhatXMLCannot(_ utf8: some Sequence<UInt8>) -> Bool {
        var (previous, beforeThat): (UInt8, UInt8) = (0, 0)
        for byte in utf8 {
            if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D { return true }
            if beforeThat == 0xEF && previous == 0xBF && (byte == 0xBE || byte == 0xBF) { return true }
            (beforeThat, previous) = (previous, byte)
        }
        return false
    }

    public mutating func endDictionary() throws {
        positions.removeLast()
        try downstream.endDictionary()
    }

    public mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) throws {
        if !capabilities.contains(.controlCharacters), Self.holdsWhatXMLCannot(text) {
            try value(.string(String(decoding: text, as: UTF8.self)))  // refused there, with its pointer
            return
        }
        advance()
        try forwardPendingKey()
        try downstream.utf8String(text)
    }

    public mutating func value(_ scalar: SaveValue) throws {
        advance()
        guard Self.scalarNeedsLowering(scalar, capabilities) else {
            try forwardPendingKey()
            try downstream.value(scalar)
            return
        }
        switch scalar {
        case .null:
            guard options.nullPolicy == .drop, !positions.isEmpty else {
                // Dropping leaves out a key or an element; the whole document cannot be left out.
                if positions.isEmpty && options.nullPolicy == .drop {
                    throw unrepresentable("a null document", "a value (\(codecID) has no null; dropping nulls leaves out keys and elements, never the whole document)")
                }
                throw unrepresentable("null", "a value (\(codecID) has no null)")
            }
            report.droppedNulls += 1
            pendingKey = nil
            return
        case .real(let number):
            throw unrepresentable("the real \(number)", "a finite number (\(reason("holds no NaN or infinity", json: "typed JSON keeps NaN and infinities")))")
        case .date(let date):
            // NaN or infinite seconds are no time: no reader takes them back, savetool's included.
            guard date.timeIntervalSinceReferenceDate.isFinite else {
                throw unrepresentable("a date of \(date.timeIntervalSinceReferenceDate) seconds", "a date that is a time (a finite number of seconds)")
            }
            if !capabilities.contains(.date) {
                retyped()
                try forward(.string(RFC3339.format(date)))
                return
            }
            if !capabilities.contains(.anyYearDate) && !RFC3339.isInRange(date) {
                throw unrepresentable(
                    "a date outside years 1–9999", "a date \(reason("can hold", plist: "an XML plist can spell (bplist and typed JSON keep it)"))")
            }
            guard options.subsecondDatePolicy == .truncate else {
                throw unrepresentable(
                    "the date \(RFC3339.format(date)) with a fraction of a second",
                    "whole seconds (\(reason("dates hold no fraction of a second", plist: "XML plist dates hold no fraction; bplist and typed JSON keep it")))")
            }
            report.truncatedDates += 1
            try forward(.date(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.rounded(.down))))
        case .data(let bytes):
            retyped()
            try forward(.string(bytes.base64EncodedString()))
        case .uid(let number):
            retyped()
            try forward(.int(number))
        case .string:
            throw unrepresentable(
                "a string with a control character or U+FFFE/U+FFFF",
                "text without C0 control characters, U+FFFE or U+FFFF (\(reason("cannot hold them", plist: "XML 1.0 cannot hold them; bplist and JSON can")))")
        default:
            try forward(scalar)
        }
    }

    /// Moves the position on to the next element of an array.
    private mutating func advance() {
        if let last = positions.indices.last, case .index(let index) = positions[last] {
            positions[last] = .index(index + 1)
        }
    }

    private mutating func forward(_ scalar: SaveValue) throws {
        try forwardPendingKey()
        try downstream.value(scalar)
    }

    private mutating func forwardPendingKey() throws {
        if let key = pendingKey {
            pendingKey = nil
            try downstream.key(key)
        }
    }

    static func scalarNeedsLowering(_ value: SaveValue, _ capabilities: ValueCapabilities) -> Bool {
        switch value {
        case .null: return !capabilities.contains(.null)
        case .real(let number): return !number.isFinite && !capabilities.contains(.nonFiniteReal)
        case .date(let date):
            if !capabilities.contains(.date) || !date.timeIntervalSinceReferenceDate.isFinite { return true }
            if !capabilities.contains(.anyYearDate) && !RFC3339.isInRange(date) { return true }
            let seconds = date.timeIntervalSinceReferenceDate
            return !capabilities.contains(.subsecondDate) && seconds.rounded(.down) != seconds
        case .data: return !capabilities.contains(.data)
        case .uid: return !capabilities.contains(.uid)
        case .string(let text):
            return !capabilities.contains(.controlCharacters) && holdsWhatXMLCannot(text.utf8)
        default: return false
        }
    }

    /// A type written as text or a number: for plain JSON, or because the codec holds no such type.
    private mutating func retyped() {
        if options.plainJSON { report.retypedValues += 1 } else { report.retypedForCodec += 1 }
    }

    /// Why a value does not fit: the built-in codec's own reason, or what `codecID` (a plugin)
    /// said of itself.
    private func reason(_ general: String, plist: String? = nil, json: String? = nil) -> String {
        if let plist, codecID == XMLPlistCodec().id { return plist }
        if let json, codecID == JSONCodec().id { return json }
        return "\(codecID) \(general)"
    }

    private func unrepresentable(_ found: String, _ expected: String) -> CodecError {
        let tokens = positions.map { position -> String in
            switch position {
            case .key(let key): key
            case .index(let index): String(index)
            }
        }
        return .unrepresentable(codec: codecID, at: JSONPointer(tokens: tokens), found: found, expected: expected)
    }
}
