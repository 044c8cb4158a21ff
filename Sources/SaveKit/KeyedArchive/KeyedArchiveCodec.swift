import Foundation

/// Keyed archives (`NSKeyedArchiver`) read as the objects they hold: the codec `keyed`.
///
/// Reading, it decodes the property list and resolves the graph into ``KeyedArchive``'s view.
/// Writing, it archives the view back into a binary property list: over the archive it was read
/// from when there is one (untouched objects keep their uids), or as a new archive.
///
/// Commands pick it by themselves for a plist that is a keyed archive
/// (``CodecRegistry/keyedView(of:decodedBy:options:)``); `--from keyed` and `--to keyed` name it.
public struct KeyedArchiveCodec: SaveCodec {
    public let id = "keyed"
    public let summary = "NSKeyedArchiver archives, read and written as the objects they hold"
    /// None: an archive's name says only that it is a plist; its content says it is an archive.
    public let fileExtensions: [String] = []
    /// What the container holds, but uids: a view has none. It holds null, as `$null`, and any
    /// date, as an `NSDate` whose `NS.time` is a real (an XML plist's own dates hold whole
    /// seconds, its reals do not).
    public var capabilities: ValueCapabilities { container.capabilities.subtracting(.uid).union([.null, .date, .subsecondDate, .anyYearDate]) }
    /// The archive this codec writes back over, if it was read from one.
    public var original: KeyedArchive?
    public var viewedArchive: KeyedArchive? { original }
    public var traits: CodecTraits { .viewOfArchive }
    /// The property list codec the archive is written in: the one it was read with.
    public var container: any SaveCodec
    public var writing = KeyedArchive.WritingOptions()

    public init(original: KeyedArchive? = nil, container: any SaveCodec = BinaryPlistCodec()) {
        (self.original, self.container) = (original, container)
    }

    /// Never by its first bytes: a keyed archive is a plist until its content is read.
    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool { false }

    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        let reader: any SaveCodec = BinaryPlistCodec().sniff(bytes.prefix(CodecRegistry.sniffLength)) ? BinaryPlistCodec() : XMLPlistCodec()
        return try KeyedArchive(try reader.decode(bytes, options: options)).view(maxDepth: options.maxDepth)
    }

    /// A binary archive's view as events, straight from its object table (``KeyedViewEvents``):
    /// no tree of the property list or of the view. A reading that keeps the last of a repeated
    /// key is left to the tree reader, which is the one that can.
    public func events(in bytes: [UInt8], options: DecodingOptions) -> (any SaveEventSource)? {
        guard options.duplicateKeys == .reject, BinaryPlistCodec().sniff(bytes.prefix(CodecRegistry.sniffLength)) else { return nil }
        return KeyedViewEvents(bytes: bytes, options: options)
    }

    /// The codecs a keyed archive is held in: the property lists.
    public static func canHoldArchives(_ codec: any SaveCodec) -> Bool {
        codec.id == BinaryPlistCodec().id || codec.id == XMLPlistCodec().id
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        let plist = try original.map { archive throws(CodecError) in try archive.archive(replacingViewWith: value, options: writing) }
            ?? KeyedArchive.archive(value, options: writing)
        return try container.encode(plist, options: options)
    }
}

extension CodecRegistry {
    /// The codec that reads `bytes` as a keyed archive's view while converting them, when they
    /// are a binary keyed archive that `codec` would decode with `options` and this registry
    /// sees through archives: ``Conversion`` then streams the view
    /// (``KeyedArchiveCodec/events(in:options:)``). A reading that keeps the last of a repeated
    /// key is left to ``keyedView(of:decodedBy:options:retyping:forWriting:)``, after the tree
    /// reader has decided which `$top` and `$objects` count.
    public func keyedArchiveStreaming(_ bytes: [UInt8], decodedBy codec: any SaveCodec, options: DecodingOptions) -> KeyedArchiveCodec? {
        guard seesThroughKeyedArchives, codec.id == BinaryPlistCodec().id, KeyedArchive.isBinaryKeyedArchive(bytes) else { return nil }
        var keyed = KeyedArchiveCodec(container: codec)
        keyed.writing = keyedArchiveWriting
        // The codec's own rule for when it streams.
        return keyed.events(in: bytes, options: options) == nil ? nil : keyed
    }

    /// When `value`, just decoded by `codec`, is a keyed archive and this registry sees through
    /// them (``seesThroughKeyedArchives``): its view, and the codec that writes the view back
    /// in the same property list format. `retyping` lets the write-back put a value of another
    /// type where one stood, as a migration or a merge may (otherwise ``keyedArchiveWriting`` says).
    /// `forWriting` keeps what writing the view back needs from this reading (a command that
    /// will write, as `set` or a merge): the graph is then resolved once, not twice.
    public func keyedView(
        of value: SaveValue, decodedBy codec: any SaveCodec, options: DecodingOptions = DecodingOptions(), retyping: Bool = false,
        forWriting: Bool = false
    ) throws -> (view: SaveValue, codec: KeyedArchiveCodec)? {
        guard seesThroughKeyedArchives, KeyedArchiveCodec.canHoldArchives(codec), KeyedArchive.isKeyedArchive(value) else { return nil }
        var archive = try KeyedArchive(value)
        let view: SaveValue
        if forWriting {
            let resolved = try archive.resolved(maxDepth: options.maxDepth)
            (view, archive.resolution) = (resolved.view, (resolved.nodes, resolved.ids))
        } else {
            view = try archive.view(maxDepth: options.maxDepth)
        }
        var keyed = KeyedArchiveCodec(original: archive, container: codec)
        keyed.writing = keyedArchiveWriting
        if retyping { keyed.writing.retype = true }
        return (view, keyed)
    }
}
