/// The codecs savetool knows, looked up by id, by file extension or by content.
///
/// A registry is a value: commands start from ``builtIn``, add the plugins they find, and
/// pass it on. Nothing is global, so a server embedding SaveKit can keep one registry per use.
public struct CodecRegistry: Sendable {
    /// How many leading bytes ``SaveCodec/sniff(_:)`` is shown.
    public static let sniffLength = 64

    public private(set) var codecs: [any SaveCodec] = [] {
        didSet { (extensions, sniffingOrder) = (Self.extensions(of: codecs), Self.sniffingOrder(of: codecs)) }
    }
    /// The codecs in the order their magic is asked: plugins, then the built-in codecs, each in
    /// the order they were registered (made once: an export asks for every file).
    private var sniffingOrder: [any SaveCodec] = []
    /// Every codec's extensions, lower-cased with their dot, longest first (so that "tar.gz"
    /// beats "gz"): made when a codec is added, not on every lookup (a server looks one up per push).
    private var extensions: [(suffix: String, ascii: [UInt8]?, codec: any SaveCodec)] = []
    /// Whether a property list that is a keyed archive (`NSKeyedArchiver`) is read as the objects
    /// it holds (``KeyedArchive``) rather than as its flat object table.
    public var seesThroughKeyedArchives = true
    /// How views of keyed archives are written back.
    public var keyedArchiveWriting = KeyedArchive.WritingOptions()

    public init(_ codecs: [any SaveCodec] = []) {
        for codec in codecs where self.codec(id: codec.id) == nil { self.codecs.append(codec) }
        // `didSet` does not run in an initialiser: without this, `.builtIn` knew no extension.
        (extensions, sniffingOrder) = (Self.extensions(of: self.codecs), Self.sniffingOrder(of: self.codecs))
    }

    private static func sniffingOrder(of codecs: [any SaveCodec]) -> [any SaveCodec] {
        codecs.filter { $0.origin != .builtIn } + codecs.filter { $0.origin == .builtIn }
    }

    private static func extensions(of codecs: [any SaveCodec]) -> [(suffix: String, ascii: [UInt8]?, codec: any SaveCodec)] {
        codecs.flatMap { codec in codec.fileExtensions.map { "." + $0.lowercased() }.map { suffix in
            (suffix: suffix, ascii: suffix.utf8.allSatisfy { $0 < 0x80 } ? Array(suffix.utf8) : nil, codec: codec)
        } }
            .enumerated().sorted { ($0.element.suffix.count, -$0.offset) > ($1.element.suffix.count, -$1.offset) }.map(\.element)
    }

    /// Binary plist, XML plist, JSON, and keyed archives' view (picked by content, never by
    /// sniffing). Sniffing tries them in that registration order, the most certain magic number
    /// (`bplist0`) first.
    public static let builtIn = CodecRegistry([BinaryPlistCodec(), XMLPlistCodec(), JSONCodec(), KeyedArchiveCodec()])

    /// Adds a codec. Its id must be new: a plugin cannot silently replace a built-in codec.
    public mutating func register(_ codec: any SaveCodec) throws(RegistryError) {
        if let existing = self.codec(id: codec.id) {
            throw .duplicateID(codec.id, existing: existing.origin, new: codec.origin)
        }
        codecs.append(codec)
    }

    public func codec(id: String) -> (any SaveCodec)? {
        codecs.first { $0.id == id }
    }

    /// The codec with this id, or an error listing the ids there are.
    public func requireCodec(id: String) throws(CodecError) -> any SaveCodec {
        guard let codec = codec(id: id) else { throw .unknownCodec(id, known: codecs.map(\.id)) }
        return codec
    }

    /// The codec whose extension ends the path (`save.plist` → XML plist; the first registered wins).
    public func codec(forPath path: String) -> (any SaveCodec)? {
        var name = path.utf8[...]
        while name.last == UInt8(ascii: "/") { name = name.dropLast() }
        if let slash = name.lastIndex(of: UInt8(ascii: "/")) { name = name[name.index(after: slash)...] }
        // A name in ASCII (nearly every one) against an ASCII extension is compared by bytes,
        // lower-cased as it goes: the path split into segments and lower-cased as Unicode, for
        // every lookup, showed in a server's profile (a lookup per push). The same answers.
        let lowered = name.allSatisfy({ $0 < 0x80 }) ? nil : String(Substring(name)).lowercased()
        return extensions.first { suffix in
            guard lowered == nil, let ascii = suffix.ascii else { return (lowered ?? String(Substring(name)).lowercased()).hasSuffix(suffix.suffix) }
            return name.count >= ascii.count && zip(name.suffix(ascii.count), ascii).allSatisfy { byte, expected in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
            }
        }?.codec
    }

    /// The codec whose magic matches the first bytes of a document. A plugin's magic is asked
    /// first: it was installed to claim its files, even those a built-in codec would also read
    /// (a game's own binary plists, say).
    public func codec(sniffing bytes: [UInt8]) -> (any SaveCodec)? {
        let prefix = bytes.prefix(Self.sniffLength)
        for index in sniffingOrder.indices where sniffingOrder[index].sniff(prefix) { return sniffingOrder[index] }
        return nil
    }

    /// The codec of an input: from its content first, then from its name.
    public func detect(bytes: [UInt8], path: String?) throws(CodecError) -> any SaveCodec {
        if let codec = codec(sniffing: bytes) { return codec }
        if let path, let codec = codec(forPath: path) { return codec }
        throw .undetectable(hint: "one of \(codecs.map(\.id).joined(separator: ", "))")
    }
}

public enum RegistryError: Error, Sendable, CustomStringConvertible {
    case duplicateID(String, existing: CodecOrigin, new: CodecOrigin)

    public var description: String {
        switch self {
        case .duplicateID(let id, let existing, let new):
            "codec id '\(id)' from \(new) is taken by \(existing), expected a plugin with an id of its own"
        }
    }
}

extension CodecRegistry {
    /// What a sync slot is refused for when no codec fits: said alike by the server and by
    /// the client that leaves such a file out of a folder's sync.
    public static let notASaveDocument = "not a save document, expected JSON or a property list"

    /// The codec of a save document: one that knows the bytes, or else the name, and is not an
    /// archive (a slot holds one save, never a bundle); `nil` when none fits. Where the name
    /// says nothing, the first bytes are a guess (`[Graphics]` begins an .ini file, not JSON):
    /// the document must then also decode.
    public func saveDocumentCodec(for bytes: [UInt8], named name: String) -> (any SaveCodec)? {
        let byName = codec(forPath: name)
        guard let codec = codec(sniffing: bytes) ?? byName, !codec.traits.contains(.archive) else { return nil }
        if byName == nil, (try? codec.decode(bytes)) == nil { return nil }
        return codec
    }
}
