/// JSON (RFC 8259), read and written as typed JSON so that no value of a plist is lost.
///
/// Typed JSON spells dates, data, uids and non-finite reals as one-key marker objects
/// (`{"$date": "2026-11-21T08:00:00Z"}`); ``EncodingOptions/plainJSON`` writes them as plain
/// strings and numbers instead, for tools that do not know the markers.
public struct JSONCodec: SaveCodec {
    /// Whether a one-key dictionary with this key is written wrapped, `{"$dict": {…}}`, so that
    /// it is not read back as a typed value (`$date`, `$data`, `$uid`, `$real`, `$dict`): for
    /// writers that produce the codec's output without it.
    public static func isTypedMarkerKey(_ key: String) -> Bool { TypedJSON.markerKeys.contains(key) }

    public let id = "json"
    public let summary = "JSON (RFC 8259); typed JSON keeps dates, data, uids and int/real apart"
    public let fileExtensions = ["json"]
    public var traits: CodecTraits { .layoutFollowsInput }
    public let capabilities = ValueCapabilities.all

    public init() {}

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        guard let first = TextPrefix.firstCharacter(of: prefix) else { return false }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"")
    }

    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        try JSONReader.parse(bytes, options: options)
    }

    public func eventWriter(into output: any ByteOutput, options: EncodingOptions) -> (any SaveEventWriter)? {
        JSONWriter(output: output, pretty: options.pretty, plain: options.plainJSON)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        var report = ValueLowering.Report()
        return try encode(value, options: options, report: &report)
    }

    public func rewrite(
        _ original: [UInt8], holding originalValue: SaveValue, as value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report
    ) throws -> [UInt8]? {
        // A text that this writer writes as it is (its own output, Python's `indent=2`): written
        // whole, the new value changes only what changed too, for less than a rewrite costs
        // with its read-back.
        if let same = try? encode(originalValue, options: options), same == original { return nil }
        return try JSONTextRewriter.rewrite(original, from: originalValue, to: value, codec: self, layout: options, report: &report)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8] {
        var text = try Conversion.bytes(
            of: value, writer: { JSONWriter(output: $0, pretty: options.pretty, plain: options.plainJSON) }, capabilities: capabilities,
            codecID: id, options: options, report: &report)
        if !options.finalNewline, text.last == 0x0A { text.removeLast() }
        let unit = options.pretty ? options.indentUnit : nil
        guard options.crlfLineEnds || options.byteOrderMark || unit != nil else { return text }
        var bytes: [UInt8] = options.byteOrderMark ? [0xEF, 0xBB, 0xBF] : []
        guard options.crlfLineEnds || unit != nil else { return bytes + text }
        // A line feed in JSON text is always a line end (inside strings it is escaped), and the
        // spaces after it are indentation, two per level.
        bytes.reserveCapacity(text.count + text.count / 8)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            index += 1
            guard byte == 0x0A else {
                bytes.append(byte)
                continue
            }
            if options.crlfLineEnds { bytes.append(0x0D) }
            bytes.append(0x0A)
            guard let unit else { continue }
            var spaces = 0
            while index < text.endIndex, text[index] == 0x20 { spaces += 1; index += 1 }
            for _ in 0..<(spaces / 2) { bytes.append(contentsOf: unit) }
            if spaces % 2 == 1 { bytes.append(0x20) }
        }
        return bytes
    }
}
