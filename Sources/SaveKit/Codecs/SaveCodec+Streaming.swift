/// A document replayed as events, value by value, with no ``SaveValue`` tree in between.
///
/// A codec whose reader can stream returns one from ``SaveCodec/events(in:options:)``;
/// ``Conversion`` then walks the input straight into the target's writer.
public protocol SaveEventSource {
    /// Sends the whole document into `sink`, in the grammar ``SaveValueSink`` describes.
    ///
    /// One concrete sink type rather than a generic parameter: a reader called through this
    /// protocol is then compiled for that type once, where a generic one would look up type
    /// metadata on every event (bplist→XML took twice the time that way).
    func emit(into sink: inout AnySaveValueSink) throws
}

/// Any sink behind one concrete type; each event costs one dynamic call.
public struct AnySaveValueSink: SaveValueSink {
    public var base: any SaveValueSink
    public init(_ base: any SaveValueSink) { self.base = base }
    public mutating func beginArray(count: Int) throws { try base.beginArray(count: count) }
    public mutating func endArray() throws { try base.endArray() }
    public mutating func beginDictionary(count: Int) throws { try base.beginDictionary(count: count) }
    public mutating func key(_ key: String) throws { try base.key(key) }
    public mutating func endDictionary() throws { try base.endDictionary() }
    public mutating func value(_ scalar: SaveValue) throws { try base.value(scalar) }
    public mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) throws { try base.utf8Key(text) }
    public mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) throws { try base.utf8String(text) }
}

/// A codec's writer that takes a document as events and writes as they come.
///
/// A codec returns one from ``SaveCodec/eventWriter(into:options:)``. Values reach it already
/// made to fit the codec's ``SaveCodec/capabilities`` (``LoweringSink`` runs in front of it).
public protocol SaveEventWriter: SaveValueSink {
    /// Writes what the writer still holds and hands its output back.
    mutating func finish() throws -> any ByteOutput
}

extension SaveCodec {
    /// Codecs read into a tree unless they say otherwise.
    public func events(in bytes: [UInt8], options: DecodingOptions) -> (any SaveEventSource)? { nil }

    /// Codecs write from a tree unless they say otherwise.
    public func eventWriter(into output: any ByteOutput, options: EncodingOptions) -> (any SaveEventWriter)? { nil }

    public func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report, into output: inout any ByteOutput) throws {
        try output.write(try encode(value, options: options, report: &report))
    }
}
