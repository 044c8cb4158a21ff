import ArgumentParser
import SaveArchive
import SaveKit
import SaveToolCLI

/// A document read from a file or standard input, with the codec it was read with.
struct LoadedDocument {
    var path: String
    var bytes: [UInt8]
    var codec: any SaveCodec
    var value: SaveValue

    /// Reads and decodes `path`; the codec is `codecID`, else sniffed from the content, else
    /// taken from the extension. Errors name the file.
    /// `forWriting`: the command writes the document back (a keyed archive's graph is then
    /// resolved once for both).
    static func load(_ path: String, codecID: String? = nil, registry: CodecRegistry, reading: ReadingOptions, forWriting: Bool = false) throws -> LoadedDocument {
        let input = try InputBytes.read(path, entry: reading.entry)
        return try Failure.reporting(file: input.displayName) {
            var codec = try (codecID ?? reading.from).map { id throws(CodecError) in try registry.requireCodec(id: id) }
                ?? registry.detect(bytes: input.bytes, path: input.nameForExtension)
            var registry = registry
            if codec.traits.contains(.viewOfArchive) {
                // `--from keyed`: read as the plist it is, so that an edit is written over its own table.
                codec = registry.codec(sniffing: input.bytes) ?? XMLPlistCodec()
                registry.seesThroughKeyedArchives = true
            }
            let value = try codec.decode(input.bytes, options: reading.decoding)
            if let keyed = try registry.keyedView(of: value, decodedBy: codec, options: reading.decoding, forWriting: forWriting) {
                return LoadedDocument(path: path, bytes: input.bytes, codec: keyed.codec, value: keyed.view)
            }
            return LoadedDocument(path: path, bytes: input.bytes, codec: codec, value: value)
        }
    }
}

extension LoadedDocument {
    /// Loads a document that a command will write back over its own file (`set`, `remove`).
    static func loadForEditing(_ path: String, command: String, registry: CodecRegistry, reading: ReadingOptions) throws -> LoadedDocument {
        guard reading.entry == nil else {
            throw ValidationError("--entry reads inside an archive, and \(command) writes the file it reads: import the bundle, edit the file, export again")
        }
        return try load(path, registry: registry, reading: reading, forWriting: true)
    }
}

/// The bytes of an input: a file, standard input, or one entry of an archive (`--entry`).
struct InputBytes {
    var bytes: [UInt8]
    /// How messages name it: `save.json`, or `bundle.tar.gz[files/save.json]`.
    var displayName: String
    /// The name whose extension helps tell the codec, if any.
    var nameForExtension: String?

    static func read(_ path: String, entry: String?) throws -> InputBytes {
        let bytes = try FileIO.read(path)
        guard let entry else { return InputBytes(bytes: bytes, displayName: path, nameForExtension: path == "-" ? nil : path) }
        let reader = try ArchiveReader(bytes: bytes, name: path)
        guard let contents = try reader.contents(of: entry) else {
            // A bundle's files are entries under files/, as inspect lists them by their paths.
            let bundled = "files/" + entry
            if !entry.hasPrefix("files/"), (try? ArchiveReader(bytes: bytes, name: path).contents(of: bundled)) != nil {
                throw LocatedError(file: path, message: " no entry \(entry) in the archive, expected \(bundled): a bundle holds its files under files/", code: Failure.Code.noInput)
            }
            throw LocatedError(file: path, message: " no entry \(entry) in the archive, expected one of its entries (savetool inspect \(path) lists them)", code: Failure.Code.noInput)
        }
        return InputBytes(bytes: contents, displayName: "\(path)[\(entry)]", nameForExtension: entry)
    }
}

extension EncodingOptions.NullPolicy: ExpressibleByArgument {}
