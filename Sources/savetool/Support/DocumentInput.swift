import ArgumentParser
import SaveKit

/// A document read from a file or standard input, with the codec it was read with.
struct LoadedDocument {
    var path: String
    var bytes: [UInt8]
    var codec: any SaveCodec
    var value: SaveValue

    /// Reads and decodes `path`; the codec is `codecID`, else sniffed from the content, else
    /// taken from the extension. Errors name the file.
    static func load(_ path: String, codecID: String? = nil, registry: CodecRegistry, options: DecodingOptions = DecodingOptions()) throws -> LoadedDocument {
        let bytes = try FileIO.read(path)
        return try Failure.reporting(file: path) {
            let codec = try codecID.map { id throws(CodecError) in try registry.requireCodec(id: id) }
                ?? registry.detect(bytes: bytes, path: path == "-" ? nil : path)
            let value = try codec.decode(bytes, options: options)
            return LoadedDocument(path: path, bytes: bytes, codec: codec, value: value)
        }
    }
}

extension EncodingOptions.NullPolicy: ExpressibleByArgument {}
