/// Converting between codecs, streaming wherever the codecs allow.
///
/// Streaming goes through ``SaveCodec``, never through a test for a concrete codec: a source
/// that reads as events (``SaveCodec/events(in:options:)``, the binary plist reader) is walked
/// straight into a target that writes them (``SaveCodec/eventWriter(into:options:)``, the JSON
/// and XML plist writers), and the writer's text goes to its output in chunks: no value tree and
/// no whole output in memory. Other pairs decode to a ``SaveValue`` first; their output still
/// streams when the target writes as it goes. A new codec type streams by implementing the same
/// two requirements (an external plugin, which runs as its own process, does not).
///
/// ```swift
/// let output = try AtomicFileOutput(path: "save.json")
/// var sink = output
/// let report = try Conversion.convert(bytes, from: BinaryPlistCodec(), to: JSONCodec(), to: &sink)
/// try output.commit()
/// ```
public enum Conversion {
    /// Inputs from this size on are written by a thread of their own.
    static let writtenInBackground = 8 << 20

    /// Decodes `bytes` with `source` and writes the document with `target` into `output`.
    /// Returns what had to be changed for the target, as ``EncodingOptions`` allowed.
    ///
    /// When `source` can read as events (``SaveCodec/events(in:options:)``) and `target` can
    /// write them (``SaveCodec/eventWriter(into:options:)``), no value tree is built. The input
    /// is released as soon as it has been read when the caller gives it up
    /// (`convert(consume bytes, …)`): for a large save that is a copy of its size less in memory.
    @discardableResult
    public static func convert<Output: ByteOutput>(
        _ bytes: consuming [UInt8], from source: any SaveCodec, to target: any SaveCodec,
        decoding: DecodingOptions = DecodingOptions(), encoding: EncodingOptions = EncodingOptions(),
        to output: inout Output
    ) throws -> ValueLowering.Report {
        var erased: any ByteOutput = output
        defer { output = erased as! Output }
        var input = consume bytes
        if let events = source.events(in: input, options: decoding) {
            // A large input is written on a thread of its own while the next chunks are formatted.
            let background = input.count >= Self.writtenInBackground ? BackgroundOutput(erased) : nil
            if let writer = target.eventWriter(into: background ?? erased, options: encoding) {
                input = []
                let streamed = Result { try stream(events, into: writer, codec: target, options: encoding, output: &erased) }
                guard let background else { return try streamed.get() }
                let (written, failure) = background.finish()
                // As with a small input: on an error the caller's output is left as it was handed
                // in; the error is the writer's, which is the output's own when that failed first.
                let report = try streamed.get()
                erased = written
                if let failure { throw failure }
                return report
            }
            // No writer streams into this target: the thread had nothing to do.
            _ = background?.finish()
        }
        let value = try source.decode(input, options: decoding)
        input = []
        return try write(value, with: target, options: encoding, output: &erased)
    }

    /// Writes `value` with `codec` into `output`.
    @discardableResult
    public static func write<Output: ByteOutput>(
        _ value: SaveValue, with codec: any SaveCodec, options: EncodingOptions = EncodingOptions(), to output: inout Output
    ) throws -> ValueLowering.Report {
        var erased: any ByteOutput = output
        defer { output = erased as! Output }
        return try write(value, with: codec, options: options, output: &erased)
    }

    private static func write(
        _ value: SaveValue, with codec: any SaveCodec, options: EncodingOptions, output: inout any ByteOutput
    ) throws -> ValueLowering.Report {
        if let writer = codec.eventWriter(into: output, options: options) {
            return try stream(TreeEvents(value: value), into: writer, codec: codec, options: options, output: &output)
        }
        var report = ValueLowering.Report()
        try codec.encode(value, options: options, report: &report, into: &output)
        return report
    }

    /// Encodes a tree to bytes with a writer whose type is known where this is called: a codec's
    /// own `encode`, compiled for that writer (every file of a migration goes through here).
    static func bytes<Writer: SaveEventWriter>(
        of value: SaveValue, writer makeWriter: (any ByteOutput) -> Writer, capabilities: ValueCapabilities, codecID: String,
        options: EncodingOptions, report: inout ValueLowering.Report
    ) throws -> [UInt8] {
        let written = try write(value, into: makeWriter(ByteArrayOutput()), capabilities: capabilities, codecID: codecID, options: options)
        report = written.report
        return (written.output as! ByteArrayOutput).bytes
    }

    private static func write<Writer: SaveEventWriter>(
        _ value: SaveValue, into writer: Writer, capabilities: ValueCapabilities, codecID: String, options: EncodingOptions
    ) throws -> (report: ValueLowering.Report, output: any ByteOutput) {
        let capabilities = ValueLowering.effectiveCapabilities(capabilities, options: options)
        var writer = writer
        if capabilities.isSuperset(of: .all) {
            try value.emit(into: &writer)
            return (ValueLowering.Report(), try writer.finish())
        }
        var lowering = LoweringSink(downstream: writer, capabilities: capabilities, codecID: codecID, options: options)
        try value.emit(into: &lowering)
        return (lowering.report, try lowering.downstream.finish())
    }

    /// Sends the events into the writer, through ``LoweringSink`` when the codec cannot hold
    /// every kind of value.
    private static func stream(
        _ events: any SaveEventSource, into writer: any SaveEventWriter, codec: any SaveCodec, options: EncodingOptions,
        output: inout any ByteOutput
    ) throws -> ValueLowering.Report {
        let capabilities = ValueLowering.effectiveCapabilities(codec.capabilities, options: options)
        if capabilities.isSuperset(of: .all) {
            var sink = AnySaveValueSink(writer)
            try events.emit(into: &sink)
            var writer = sink.base as! any SaveEventWriter
            output = try writer.finish()
            return ValueLowering.Report()
        }
        let lowering = LoweringSink(downstream: AnySaveValueSink(writer), capabilities: capabilities, codecID: codec.id, options: options)
        var sink = AnySaveValueSink(ConcreteLowering(lowering: lowering))
        try events.emit(into: &sink)
        let lowered = (sink.base as! ConcreteLowering).lowering
        var finished = lowered.downstream.base as! any SaveEventWriter
        output = try finished.finish()
        return lowered.report
    }
}

/// The lowering sink for one concrete downstream, behind a type that is not generic: called
/// through an existential, a generic sink's methods run unspecialised and look up type metadata
/// on every event (bplist→XML took twice the time that way).
private struct ConcreteLowering: SaveValueSink {
    var lowering: LoweringSink<AnySaveValueSink>
    mutating func beginArray(count: Int) throws { try lowering.beginArray(count: count) }
    mutating func endArray() throws { try lowering.endArray() }
    mutating func beginDictionary(count: Int) throws { try lowering.beginDictionary(count: count) }
    mutating func key(_ key: String) throws { try lowering.key(key) }
    mutating func endDictionary() throws { try lowering.endDictionary() }
    mutating func value(_ scalar: SaveValue) throws { try lowering.value(scalar) }
    mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) throws { try lowering.utf8Key(text) }
    mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) throws { try lowering.utf8String(text) }
}

/// A tree replayed as events, for a writer that streams.
private struct TreeEvents: SaveEventSource {
    var value: SaveValue
    func emit(into sink: inout AnySaveValueSink) throws { try value.emit(into: &sink) }
}
