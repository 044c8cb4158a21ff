import Foundation
import OrderedCollections
import SaveKit

/// An archive format as a codec: decoding lists the entries (and, for a bundle, its
/// manifest), so that `savetool inspect bundle.tar.gz` and `convert bundle.zip` work like on
/// any document. Archives are written with `savetool export`, not encoded from values.
public struct ArchiveCodec: SaveCodec {
    public let format: ArchiveFormat
    public var id: String { format.fileExtension }
    public var summary: String {
        switch format {
        case .zip: "zip archive (read as a list of entries; a bundle's manifest shown)"
        case .tar(let compression): "tar archive\(compression == .none ? "" : ", \(compression.rawValue)") (read as a list of entries; a bundle's manifest shown)"
        }
    }
    public var fileExtensions: [String] {
        switch format {
        case .tar(.gzip): ["tar.gz", "tgz"]
        case .tar(.zstd): ["tar.zst", "tzst"]
        case .tar(.xz): ["tar.xz", "txz"]
        case .tar(.none): ["tar"]
        case .zip: ["zip"]
        }
    }
    public let capabilities = ValueCapabilities.all

    public init(_ format: ArchiveFormat) { self.format = format }

    /// Every archive codec, for a registry: `CodecRegistry.builtIn.adding(ArchiveCodec.all)`.
    public static let all: [ArchiveCodec] = [.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none), .zip].map(ArchiveCodec.init)

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        switch format {
        case .tar(.gzip): prefix.starts(with: [0x1F, 0x8B])
        case .tar(.zstd): prefix.starts(with: [0x28, 0xB5, 0x2F, 0xFD])
        case .tar(.xz): prefix.starts(with: [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])
        case .zip: prefix.starts(with: [0x50, 0x4B, 0x03, 0x04])
        case .tar(.none): false  // "ustar" sits at byte 257, past what sniffing sees: known by extension
        }
    }

    /// `{"format", "entries": [{"path", "type", "size", "mode", "modifiedAt"}], "manifest"?}`.
    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        let reader = try ArchiveReader(bytes: bytes, name: id)
        var entries: [SaveValue] = []
        var manifest: SaveValue?
        while let info = try reader.next() {
            var entry: OrderedDictionary<String, SaveValue> = ["path": .string(info.path), "type": .string(Self.typeName(info.kind))]
            if let size = info.size { entry["size"] = .integer(size) }
            entry["mode"] = .string(String(format: "%04o", info.permissions))
            if let modified = info.modified { entry["modifiedAt"] = .date(modified) }
            if case .symbolicLink(let target) = info.kind { entry["target"] = .string(target) }
            if case .hardLink(let target) = info.kind { entry["target"] = .string(target) }
            entries.append(.dictionary(entry))
            if entries.count == 1, info.path == "manifest.json", info.kind == .file, (info.size ?? 0) <= 64 << 20 {
                if let data = try reader.readEntry(limit: 64 << 20) { manifest = try? JSONCodec().decode(data) }
            }
        }
        var value: OrderedDictionary<String, SaveValue> = ["format": .string(id)]
        if let manifest { value["manifest"] = manifest }
        value["entries"] = .array(entries)
        return .dictionary(value)
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        throw CodecError.unrepresentable(
            codec: id, at: JSONPointer(), found: "a document", expected: "a save directory: archives are written with savetool export")
    }

    static func typeName(_ kind: ArchiveEntryInfo.Kind) -> String {
        switch kind {
        case .file: "file"
        case .directory: "directory"
        case .symbolicLink: "symlink"
        case .hardLink: "hardlink"
        case .special(let description): description
        }
    }
}
