/// Apple's binary property list format (`bplist00`), what `UserDefaults` writes to
/// `Library/Preferences/*.plist`.
public struct BinaryPlistCodec: SaveCodec {
    public let id = "bplist"
    public let summary = "binary property list (bplist00, as UserDefaults writes)"
    public let fileExtensions = ["bplist"]
    public var traits: CodecTraits { .conclusiveMagic }
    public let capabilities: ValueCapabilities = [.date, .subsecondDate, .data, .uid, .nonFiniteReal, .controlCharacters, .anyYearDate]

    public init() {}

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        prefix.starts(with: Array("bplist0".utf8))
    }

    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        try BinaryPlistReader.parse(bytes, options: options)
    }

    /// Walked object by object; a plist whose duplicate keys are to be read leniently goes
    /// through a tree, where the last one wins.
    public func events(in bytes: [UInt8], options: DecodingOptions) -> (any SaveEventSource)? {
        options.duplicateKeys == .reject ? BinaryPlistEvents(bytes: bytes, options: options) : nil
    }

    /// The object table needs the whole document, but the bytes go straight to `output`.
    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report, into output: inout any ByteOutput) throws {
        let value = try ValueLowering.lower(value, to: capabilities, codecID: id, options: options, report: &report)
        // One concrete output type, so that the writer is compiled for it rather than run generic.
        var erased = ErasedByteOutput(base: output)
        try BinaryPlistWriter.write(value, maxDepth: DecodingOptions().maxDepth, to: &erased)
        output = erased.base
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        var report = ValueLowering.Report()
        return try encode(value, options: options, report: &report)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8] {
        let value = try ValueLowering.lower(value, to: capabilities, codecID: id, options: options, report: &report)
        return try BinaryPlistWriter.encode(value, maxDepth: DecodingOptions().maxDepth)
    }
}

private struct BinaryPlistEvents: SaveEventSource {
    var bytes: [UInt8]
    var options: DecodingOptions
    func emit(into sink: inout AnySaveValueSink) throws { try BinaryPlistReader.stream(bytes, options: options, into: &sink) }
}
