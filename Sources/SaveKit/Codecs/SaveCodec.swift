/// A file format that savetool can read into a ``SaveValue`` and write back.
///
/// The built-in JSON and property-list codecs conform to this protocol exactly as a plugin
/// does, and are found through the same ``CodecRegistry``; adding a codec touches no other
/// codec and no command.
///
/// ```swift
/// struct INICodec: SaveCodec {
///     let id = "ini"
///     let summary = "Windows-style INI files"
///     let fileExtensions = ["ini"]
///     let capabilities: ValueCapabilities = [.null]
///     func sniff(_ prefix: ArraySlice<UInt8>) -> Bool { prefix.first == UInt8(ascii: "[") }
///     func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue { … }
///     func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] { … }
/// }
/// var registry = CodecRegistry.builtIn
/// try registry.register(INICodec())
/// ```
public protocol SaveCodec: Sendable {
    /// The short name users type after `--from`/`--to`: `json`, `plist`, `bplist`.
    var id: String { get }
    /// One line for `savetool formats list`.
    var summary: String { get }
    /// File name endings without the dot, most usual first.
    var fileExtensions: [String] { get }
    /// What the format can hold beyond strings, numbers, booleans, arrays and dictionaries.
    /// Values it cannot hold are converted or refused before ``encode(_:options:)`` sees them.
    var capabilities: ValueCapabilities { get }
    /// Where the codec comes from, for `savetool formats list`.
    var origin: CodecOrigin { get }
    /// What sets the codec apart, so that callers never test for a concrete codec type.
    var traits: CodecTraits { get }
    /// The archive of objects a document was read from, when this codec shows a view of one
    /// (``KeyedArchiveCodec``): what `inspect` summarises. `nil` (the default) otherwise.
    var viewedArchive: KeyedArchive? { get }
    /// Whether the first bytes of a file (up to ``CodecRegistry/sniffLength``) look like this format.
    /// Only magic numbers and the like: a cheap, certain test, not a parse.
    func sniff(_ prefix: ArraySlice<UInt8>) -> Bool
    func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue
    func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8]
    /// Encodes after making the value fit this codec as `options` say, and tells what changed.
    ///
    /// Use this rather than ``encode(_:options:)`` when the user should hear about values that
    /// were converted or dropped (the CLI prints `report.warnings` on stderr). The default
    /// implementation runs ``ValueLowering`` and then ``encode(_:options:)``.
    func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8]
    /// `value` written over `original`, a document of this codec that reads as `originalValue`,
    /// with the bytes of what did not change left as they were (a one-field edit stays a
    /// one-line diff); `nil` when the whole document is to be written instead (the default:
    /// the codec writes whole documents only). `options` give the layout of anything written
    /// anew. Call ``encode(_:over:holding:decoding:options:report:)`` instead, which reads the
    /// result back before it trusts it.
    func rewrite(
        _ original: [UInt8], holding originalValue: SaveValue, as value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report
    ) throws -> [UInt8]?

    // Streaming. A codec that can read or write without a whole document in memory says so
    // here, and ``Conversion`` streams through it, whichever codec is on the other side.

    /// The document in `bytes` as events, when this codec can read it without building a tree
    /// under `options`; `nil` (the default) otherwise.
    func events(in bytes: [UInt8], options: DecodingOptions) -> (any SaveEventSource)?
    /// A writer that takes the document as events and writes them into `output` as they come;
    /// `nil` (the default) when this codec writes from a whole tree.
    func eventWriter(into output: any ByteOutput, options: EncodingOptions) -> (any SaveEventWriter)?
    /// Writes `value` into `output`, made to fit ``capabilities`` as `options` say, and tells in
    /// `report` what changed: what ``Conversion`` calls for a codec without an event writer. The
    /// default writes what ``encode(_:options:report:)`` returns; a codec that can write straight
    /// into the output (the binary plist) does that instead.
    func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report, into output: inout any ByteOutput) throws
}

extension SaveCodec {
    public var origin: CodecOrigin { .builtIn }
    public var traits: CodecTraits { [] }
    public var viewedArchive: KeyedArchive? { nil }

    public func decode(_ bytes: [UInt8]) throws -> SaveValue {
        try decode(bytes, options: DecodingOptions())
    }

    public func encode(_ value: SaveValue) throws -> [UInt8] {
        try encode(value, options: EncodingOptions())
    }

    public func rewrite(
        _ original: [UInt8], holding originalValue: SaveValue, as value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report
    ) throws -> [UInt8]? { nil }

    /// `value` written over `original`, a document of this codec that reads as `originalValue`
    /// (an edited file, a merged copy): what did not change keeps its bytes where the codec can
    /// say so (``rewrite(_:holding:as:options:report:)``) and the result reads back as `value`;
    /// otherwise the whole document as ``encode(_:options:report:)`` writes it, in `original`'s
    /// layout (`options`, by default ``EncodingOptions/keepingLayout(of:codec:)``).
    public func encode(
        _ value: SaveValue, over original: [UInt8], holding originalValue: SaveValue, decoding: DecodingOptions = DecodingOptions(),
        options: EncodingOptions? = nil, report: inout ValueLowering.Report
    ) throws -> [UInt8] {
        let options = options ?? .keepingLayout(of: original, codec: self)
        if let rewritten = rewritten(value, over: original, holding: originalValue, decoding: decoding, options: options, report: &report) { return rewritten }
        return try encode(value, options: options, report: &report)
    }

    /// As ``encode(_:over:holding:decoding:options:report:)``, but a whole document is written as
    /// ``encode(_:options:)`` writes it: the value handed to the encoder as it is.
    public func encode(
        _ value: SaveValue, over original: [UInt8], holding originalValue: SaveValue, decoding: DecodingOptions = DecodingOptions(),
        options: EncodingOptions? = nil
    ) throws -> [UInt8] {
        let options = options ?? .keepingLayout(of: original, codec: self)
        var report = ValueLowering.Report()
        if let rewritten = rewritten(value, over: original, holding: originalValue, decoding: decoding, options: options, report: &report) { return rewritten }
        return try encode(value, options: options)
    }

    private func rewritten(
        _ value: SaveValue, over original: [UInt8], holding originalValue: SaveValue, decoding: DecodingOptions, options: EncodingOptions,
        report: inout ValueLowering.Report
    ) -> [UInt8]? {
        var rewriteReport = ValueLowering.Report()
        // Read back because a rewrite splices text: a value whose spelling depends on its
        // neighbours (a lone marker key that must be wrapped) is caught here, and written whole.
        guard let rewritten = try? rewrite(original, holding: originalValue, as: value, options: options, report: &rewriteReport),
            (try? decode(rewritten, options: decoding)) == value
        else { return nil }
        report.add(rewriteReport)
        return rewritten
    }
}

/// Properties of a codec that change how it is used.
public struct CodecTraits: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// A container of files (tar, zip), not a save document: migration and kinds pass it by.
    public static let archive = CodecTraits(rawValue: 1 << 0)
    /// Whether a document is written on one line or many follows its input: a JSON file
    /// without line breaks stays on one line when it is rewritten.
    public static let layoutFollowsInput = CodecTraits(rawValue: 1 << 1)
    /// Its magic bytes are conclusive: a file that has them is of this codec, whatever its
    /// extension says (a binary plist named `.json`).
    public static let conclusiveMagic = CodecTraits(rawValue: 1 << 2)
    /// Its documents are a view of the objects an archive holds (`NSKeyedArchiver`), kept in a
    /// property list that another codec reads: `--from keyed` reads that plist and then the view.
    public static let viewOfArchive = CodecTraits(rawValue: 1 << 3)
}

/// Where a codec was loaded from.
public enum CodecOrigin: Sendable, Equatable, CustomStringConvertible {
    case builtIn
    /// An external `savetool-codec-<id>` executable.
    case plugin(path: String)

    public var description: String {
        switch self {
        case .builtIn: "built-in"
        case .plugin(let path): path
        }
    }
}

/// The kinds of value a codec can hold beyond the ones every codec holds
/// (bool, integer, finite real, string, array, dictionary).
public struct ValueCapabilities: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let null = ValueCapabilities(rawValue: 1 << 0)
    public static let date = ValueCapabilities(rawValue: 1 << 1)
    /// Dates with a fraction of a second (XML plist dates hold whole seconds).
    public static let subsecondDate = ValueCapabilities(rawValue: 1 << 2)
    public static let data = ValueCapabilities(rawValue: 1 << 3)
    public static let uid = ValueCapabilities(rawValue: 1 << 4)
    /// NaN and the infinities.
    public static let nonFiniteReal = ValueCapabilities(rawValue: 1 << 5)
    /// C0 control characters other than tab, line feed and carriage return (XML 1.0 has none).
    public static let controlCharacters = ValueCapabilities(rawValue: 1 << 6)

    /// Dates outside years 1–9999 (an XML plist spells dates in text, and only those years).
    public static let anyYearDate = ValueCapabilities(rawValue: 1 << 7)

    public static let all: ValueCapabilities = [.null, .date, .subsecondDate, .data, .uid, .nonFiniteReal, .controlCharacters, .anyYearDate]
}

/// How a decoder reads.
public struct DecodingOptions: Sendable {
    /// The deepest nesting of arrays and dictionaries accepted. Apple's CoreFoundation and
    /// libplist stop at 512 too; deeper documents are refused with an error, never a crash.
    public var maxDepth: Int = 512
    /// JSON only: read `{"$date": …}`-style markers of typed JSON back into their types.
    /// Off, they stay ordinary dictionaries.
    public var typedJSONMarkers: Bool = true
    /// Binary plists may share one object from many places; a file whose shared objects
    /// expand past this many values is refused (a "billion laughs" defence).
    public var maxExpandedValues: Int = 50_000_000
    /// What to do with a key that appears twice in one dictionary. CoreFoundation, plistlib and
    /// libplist keep the last silently; savetool refuses unless asked, so nothing is lost unseen.
    public var duplicateKeys: DuplicateKeyPolicy = .reject

    public enum DuplicateKeyPolicy: String, Sendable, CaseIterable {
        case reject
        /// The last value wins, as in Apple's and Python's readers.
        case last
    }

    public init() {}
}

/// How an encoder writes, and what to do with values the target cannot hold.
public struct EncodingOptions: Sendable {
    /// Human-readable indentation (JSON, XML plist); `false` writes the smallest text.
    public var pretty: Bool = true
    /// JSON only: plain JSON (dates as strings, data as base64, uids as integers) instead of typed JSON.
    public var plainJSON: Bool = false
    /// What to do with `null` in a format that has none.
    public var nullPolicy: NullPolicy = .error
    /// What to do with a fraction of a second in a format that holds whole seconds.
    public var subsecondDatePolicy: SubsecondDatePolicy = .error
    /// JSON only: lines end in CR LF, as in a file written on Windows.
    public var crlfLineEnds = false
    /// JSON only: the text starts with a UTF-8 byte order mark.
    public var byteOrderMark = false
    /// JSON only, when pretty: one level of indentation, where not two spaces (a tab, four spaces).
    public var indentUnit: [UInt8]?
    /// JSON only: the text ends with a line end, as most editors end a file; `false` rewrites a
    /// file that had none without one, so that a one-field edit stays a one-line diff.
    public var finalNewline = true

    public init() {}

    /// The options that rewrite `original`, a document of `codec`, in its own layout: a codec
    /// whose layout follows its input (JSON) writes a file that spans one line (`jq -c`, most
    /// APIs; a final newline does not count) compactly, and any other prettily; and keeps a
    /// byte order mark, CR LF line ends and the lack of a final newline where the original had them.
    public static func keepingLayout(of original: [UInt8], codec: any SaveCodec) -> EncodingOptions {
        var options = EncodingOptions()
        if codec.traits.contains(.layoutFollowsInput) {
            let end = original.lastIndex { $0 != 0x0A && $0 != 0x0D && $0 != 0x20 && $0 != 0x09 } ?? 0
            options.pretty = original[..<end].contains(0x0A)
            options.byteOrderMark = original.starts(with: [0xEF, 0xBB, 0xBF])
            options.finalNewline = original.isEmpty || original.last == 0x0A
            if let firstLineEnd = original.firstIndex(of: 0x0A) {
                options.crlfLineEnds = firstLineEnd > original.startIndex && original[firstLineEnd - 1] == 0x0D
                // The second line is the first one indented by one level (`{` or `[` opens the first).
                let indent = original[(firstLineEnd + 1)...].prefix { $0 == 0x20 || $0 == 0x09 }
                if options.pretty, !indent.isEmpty, indent.count <= 8, Set(indent).count == 1, Array(indent) != [0x20, 0x20] {
                    options.indentUnit = Array(indent)
                }
            }
        }
        return options
    }

    public enum NullPolicy: String, Sendable, CaseIterable {
        /// Refuse, naming the JSON Pointer of the first `null`.
        case error
        /// Leave out the key or array element, and count it.
        case drop
    }

    public enum SubsecondDatePolicy: String, Sendable, CaseIterable {
        case error
        /// Round down to the whole second, and count it.
        case truncate
    }
}

extension SaveCodec {
    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8] {
        let lowered = try ValueLowering.lower(value, to: capabilities, codecID: id, options: options, report: &report)
        return try encode(lowered, options: options)
    }
}
