/// Converting between codecs, streaming wherever the codecs allow.
///
/// A binary plist converted to JSON or to an XML plist is walked straight into the writer,
/// and the writer's text goes to its output in chunks: no value tree and no whole output in
/// memory. Other pairs decode to a ``SaveValue`` first; their output still streams when the
/// target is JSON or XML plist.
///
/// ```swift
/// let output = try AtomicFileOutput(path: "save.json")
/// var sink = output
/// let report = try Conversion.convert(bytes, from: BinaryPlistCodec(), to: JSONCodec(), to: &sink)
/// try output.commit()
/// ```
public enum Conversion {
    /// Decodes `bytes` with `source` and writes the document with `target` into `output`.
    /// Returns what had to be changed for the target, as ``EncodingOptions`` allowed.
    ///
    /// The input is released as soon as it has been read when the caller gives it up
    /// (`convert(consume bytes, …)`): for a large save that is a copy of its size less in memory.
    @discardableResult
    public static func convert<Output: ByteOutput>(
        _ bytes: consuming [UInt8], from source: any SaveCodec, to target: any SaveCodec,
        decoding: DecodingOptions = DecodingOptions(), encoding: EncodingOptions = EncodingOptions(),
        to output: inout Output
    ) throws -> ValueLowering.Report {
        let erased = ErasedOutput(output)
        defer { output = erased.base as! Output }
        if source is BinaryPlistCodec, decoding.duplicateKeys == .reject, target is JSONCodec || target is XMLPlistCodec {
            return try write(BinaryPlistEvents(bytes: bytes, options: decoding), with: target, options: encoding, to: erased)
        }
        var input = consume bytes
        let value = try source.decode(input, options: decoding)
        input = []
        return try write(TreeEvents(value: value), with: target, options: encoding, to: erased)
    }

    /// Writes `value` with `codec` into `output`.
    @discardableResult
    public static func write<Output: ByteOutput>(
        _ value: SaveValue, with codec: any SaveCodec, options: EncodingOptions = EncodingOptions(), to output: inout Output
    ) throws -> ValueLowering.Report {
        let erased = ErasedOutput(output)
        defer { output = erased.base as! Output }
        return try write(TreeEvents(value: value), with: codec, options: options, to: erased)
    }

    /// The writers are specialised for this one output type: a generic output coming from
    /// another module would leave every event going through the runtime's generic metadata.
    private static func write<Source: EventSource>(
        _ source: Source, with codec: any SaveCodec, options: EncodingOptions, to output: ErasedOutput
    ) throws -> ValueLowering.Report {
        var output = output
        let capabilities = ValueLowering.effectiveCapabilities(codec.capabilities, options: options)
        if codec is JSONCodec {
            let writer = JSONWriter(output: output, pretty: options.pretty, plain: options.plainJSON)
            return try run(source, into: writer, capabilities: capabilities, codecID: codec.id, options: options, output: &output) { try $0.finish() }
        }
        if codec is XMLPlistCodec {
            let writer = XMLPlistWriter(output: output)
            return try run(source, into: writer, capabilities: capabilities, codecID: codec.id, options: options, output: &output) { try $0.finish() }
        }
        var report = ValueLowering.Report()
        if codec is BinaryPlistCodec {
            let value = try ValueLowering.lower(try source.tree(), to: codec.capabilities, codecID: codec.id, options: options, report: &report)
            try BinaryPlistWriter.write(value, maxDepth: DecodingOptions().maxDepth, to: &output)
            return report
        }
        try output.write(try codec.encode(try source.tree(), options: options, report: &report))
        return report
    }

    private static func run<Source: EventSource, Writer: SaveValueSink>(
        _ source: Source, into writer: Writer, capabilities: ValueCapabilities, codecID: String, options: EncodingOptions,
        output: inout ErasedOutput, finish: (inout Writer) throws -> ErasedOutput
    ) throws -> ValueLowering.Report {
        var writer = writer
        if capabilities.isSuperset(of: .all) {
            try source.emit(into: &writer)
            output = try finish(&writer)
            return ValueLowering.Report()
        }
        var lowering = LoweringSink(downstream: writer, capabilities: capabilities, codecID: codecID, options: options)
        try source.emit(into: &lowering)
        output = try finish(&lowering.downstream)
        return lowering.report
    }
}

/// Something that can replay a document as events.
private protocol EventSource {
    func emit<Sink: SaveValueSink>(into sink: inout Sink) throws
    func tree() throws -> SaveValue
}

private struct TreeEvents: EventSource {
    var value: SaveValue
    func emit<Sink: SaveValueSink>(into sink: inout Sink) throws { try value.emit(into: &sink) }
    func tree() -> SaveValue { value }
}

private struct BinaryPlistEvents: EventSource {
    var bytes: [UInt8]
    var options: DecodingOptions
    func emit<Sink: SaveValueSink>(into sink: inout Sink) throws { try BinaryPlistReader.stream(bytes, options: options, into: &sink) }
    func tree() throws -> SaveValue { try BinaryPlistReader.parse(bytes, options: options) }
}

/// Any output behind one concrete type; writers hand it 1 MB chunks, so the indirection costs nothing.
private final class ErasedOutput: ByteOutput {
    var base: any ByteOutput
    init(_ base: any ByteOutput) { self.base = base }
    func write(_ bytes: UnsafeRawBufferPointer) throws { try base.write(bytes) }
}
