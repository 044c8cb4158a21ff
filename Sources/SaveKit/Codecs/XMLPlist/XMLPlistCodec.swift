/// Apple's XML property list format, as written by `plutil -convert xml1` and Xcode.
///
/// It holds no `null`, dates only to the second, and no C0 control characters in strings;
/// ``ValueLowering`` asks the user's choice for each before the writer runs.
public struct XMLPlistCodec: SaveCodec {
    public let id = "plist"
    public let summary = "XML property list (Apple plist 1.0)"
    public let fileExtensions = ["plist", "xml"]
    public let capabilities: ValueCapabilities = [.date, .data, .uid, .nonFiniteReal]

    public init() {}

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        TextPrefix.firstCharacter(of: prefix) == UInt8(ascii: "<")
    }

    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        try XMLPlistReader.parse(bytes, options: options)
    }

    public func eventWriter(into output: any ByteOutput, options: EncodingOptions) -> (any SaveEventWriter)? {
        XMLPlistWriter(output: output, indented: options.pretty)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        var report = ValueLowering.Report()
        return try encode(value, options: options, report: &report)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8] {
        try Conversion.bytes(
            of: value, writer: { XMLPlistWriter(output: $0, indented: options.pretty) }, capabilities: capabilities, codecID: id, options: options,
            report: &report)
    }
}
