import Foundation

/// What `savetool inspect` tells about a document: its shape, its size in values, and the
/// documents embedded in it (a `Data` value holding JSON or a plist of its own).
public struct DocumentSummary: Sendable {
    public struct Member: Sendable {
        public var key: String
        public var type: String
        /// Element count of arrays and dictionaries, byte count of data, character count of strings.
        public var count: Int?
    }

    public struct Embedded: Sendable {
        public var pointer: JSONPointer
        /// The document inside, as decoded (so that its kind can be recognised without decoding it again).
        public var value: SaveValue
        public var codec: String
        public var topLevelType: String
        public var count: Int?
        public var byteCount: Int
        /// What the archive is, when the document is a keyed archive (read as its objects).
        public var keyedArchive: KeyedArchive.Summary? = nil
        /// Why a document that is there cannot be read (a keyed archive with a uid that leads
        /// nowhere): `get` and `set` through it fail, and `inspect` says so rather than nothing.
        public var problem: String? = nil
    }

    public var topLevelType: String
    public var topLevelCount: Int?
    /// The keys of a top-level dictionary, in file order.
    public var members: [Member]
    /// How many values of each type the document holds, containers included.
    public var typeCounts: [String: Int]
    public var depth: Int
    public var embedded: [Embedded]

    public init(of value: SaveValue, registry: CodecRegistry = .builtIn) {
        topLevelType = value.typeName
        topLevelCount = Self.count(of: value)
        members = value.dictionaryValue.map { entries in
            entries.map { Member(key: $0.key, type: $0.value.typeName, count: Self.count(of: $0.value)) }
        } ?? []
        typeCounts = [:]
        depth = 0
        embedded = []
        walk(value, at: JSONPointer(), depth: 0, registry: registry)
    }

    static func count(of value: SaveValue) -> Int? {
        switch value {
        case .array(let items): items.count
        case .dictionary(let entries): entries.count
        case .data(let bytes): bytes.count
        case .string(let text): text.count
        default: nil
        }
    }

    private mutating func walk(_ value: SaveValue, at pointer: JSONPointer, depth level: Int, registry: CodecRegistry) {
        typeCounts[value.typeName, default: 0] += 1
        depth = max(depth, level)
        switch value {
        case .array(let items):
            for (index, item) in items.enumerated() { walk(item, at: pointer.appending(index), depth: level + 1, registry: registry) }
        case .dictionary(let entries):
            for (key, item) in entries { walk(item, at: pointer.appending(key), depth: level + 1, registry: registry) }
        case .data(let bytes):
            do {
                if let found = try EmbeddedDocument.decodeReportingArchives(Array(bytes), registry: registry) {
                    embedded.append(Embedded(
                        pointer: pointer, value: found.value, codec: found.codec.id, topLevelType: found.value.typeName, count: Self.count(of: found.value),
                        byteCount: bytes.count, keyedArchive: found.codec.viewedArchive?.summary))
                } else {
                    noteUnreadable(Array(bytes), at: pointer, registry: registry)
                }
            } catch {
                embedded.append(Embedded(
                    pointer: pointer, value: .null, codec: "keyed", topLevelType: "archive", count: nil, byteCount: bytes.count, problem: "\(error)"))
            }
        case .string(let text):
            let bytes = Array(text.utf8)
            if bytes.count >= 2, let found = EmbeddedDocument.decode(bytes, registry: registry), found.codec.id == "json" {
                embedded.append(Embedded(pointer: pointer, value: found.value, codec: "json", topLevelType: found.value.typeName, count: Self.count(of: found.value), byteCount: bytes.count))
            } else if let first = text.first(where: { !$0.isWhitespace }), let last = text.last(where: { !$0.isWhitespace }),
                (first, last) == ("{", "}") || (first, last) == ("[", "]"), registry.codec(sniffing: bytes)?.id == "json"
            {
                // Text that is shaped as a JSON object or array throughout, and does not read.
                noteUnreadable(bytes, at: pointer, registry: registry)
            }
        default:
            break
        }
    }

    /// A value that begins as a document and does not read (the JSON a plist holds, with a key
    /// repeated, say): listed with why, so that `inspect` does not say there is none.
    private mutating func noteUnreadable(_ bytes: [UInt8], at pointer: JSONPointer, registry: CodecRegistry) {
        guard let problem = EmbeddedDocument.unreadable(bytes, registry: registry), let codec = registry.codec(sniffing: bytes) else { return }
        embedded.append(Embedded(pointer: pointer, value: .null, codec: codec.id, topLevelType: "document", count: nil, byteCount: bytes.count, problem: problem))
    }
}

/// A document held inside a value of another document.
public enum EmbeddedDocument {
    /// The bytes a value can hold a document in: data as it is, a string as its UTF-8.
    public static func bytes(of holder: SaveValue) -> [UInt8]? {
        switch holder {
        case .data(let data): Array(data)
        case .string(let text): Array(text.utf8)
        default: nil
        }
    }

    /// What a key found twice in one dictionary of an embedded document does, for the task that
    /// reads it: as for the document that holds it (a command's `--duplicate-keys`), refused
    /// unless told otherwise.
    @TaskLocal public static var duplicateKeys: DecodingOptions.DuplicateKeyPolicy = .reject

    /// How an embedded document is read: as the app wrote it. Its JSON is plain JSON (an app's
    /// own `{"$date": …}` is a dictionary, not a date), and is written back as plain JSON.
    public static var decoding: DecodingOptions {
        var options = DecodingOptions()
        options.typedJSONMarkers = false
        options.duplicateKeys = duplicateKeys
        return options
    }

    /// `value` written back over `original`, the embedded document's old bytes that read as
    /// `originalValue`, as its holder holds it (data, or text): only what changed is written
    /// again where the codec can say so, and the rest in the old bytes' layout (JSON on one line
    /// stays on one line, with or without a line end after it, as it was), JSON as plain JSON.
    public static func replacement(
        for value: SaveValue, over original: [UInt8], holding originalValue: SaveValue, codec: any SaveCodec, asText: Bool
    ) throws -> SaveValue {
        var options = EncodingOptions.keepingLayout(of: original, codec: codec)
        options.plainJSON = codec.id == JSONCodec().id
        let bytes = try codec.encode(value, over: original, holding: originalValue, decoding: decoding, options: options)
        return asText ? .string(String(decoding: bytes, as: UTF8.self)) : .data(Data(bytes))
    }

    /// What is wrong with a document of `codec` that does not read: its decoder's place and words.
    public static func unreadable(_ codec: any SaveCodec, _ error: any Error) -> String {
        "a \(codec.id) document that does not read: \(error)"
    }

    /// What is wrong with `bytes` that begin as a document (they sniff as a codec other than an
    /// archive's) and do not read; `nil` when they read, or are no document at all.
    public static func unreadable(_ bytes: [UInt8], registry: CodecRegistry) -> String? {
        guard let codec = registry.codec(sniffing: bytes), !codec.traits.contains(.archive) else { return nil }
        do { _ = try codec.decode(bytes, options: decoding) } catch { return unreadable(codec, error) }
        return nil
    }

    /// The document inside `bytes` when they sniff as a codec and decode to a dictionary or array.
    public static func decode(_ bytes: [UInt8], registry: CodecRegistry) -> (value: SaveValue, codec: any SaveCodec)? {
        try? decodeReportingArchives(bytes, registry: registry)
    }

    /// As ``decode(_:registry:)``, but a keyed archive that cannot be read as its objects is an
    /// error (with its place in the archive), not a document: what paths into it must report.
    public static func decodeReportingArchives(_ bytes: [UInt8], registry: CodecRegistry) throws -> (value: SaveValue, codec: any SaveCodec)? {
        guard let codec = registry.codec(sniffing: bytes), let value = try? codec.decode(bytes, options: decoding), value.isContainer else { return nil }
        if let keyed = try registry.keyedView(of: value, decodedBy: codec) { return (keyed.view, keyed.codec) }
        return (value, codec)
    }
}
