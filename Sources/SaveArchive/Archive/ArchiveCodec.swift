import Foundation
import OrderedCollections
import SaveKit

/// An archive format as a codec: decoding lists the entries (and, for a bundle, its
/// manifest), so that `savetool inspect bundle.tar.gz` and `convert bundle.zip` work like on
/// any document. Archives are written with `savetool export`, not encoded from values.
public struct ArchiveCodec: SaveCodec {
    /// The format savetool also writes, or `nil` for the read-only codec of every other archive.
    public let format: ArchiveFormat?
    public var id: String { format?.fileExtension ?? "archive" }
    public var summary: String {
        switch format {
        case nil: "other archives: 7z, rar, cpio, iso, ar, xar, cab, lha, and tar under bzip2, lz4, compress or lzip (read only)"
        case .zip?: "zip archive (read as a list of entries; a bundle's manifest shown)"
        case .tar(let compression)?: "tar archive\(compression == .none ? "" : ", \(compression.rawValue)") (read as a list of entries; a bundle's manifest shown)"
        }
    }
    public var fileExtensions: [String] {
        switch format {
        case .tar(.gzip)?: ["tar.gz", "tgz"]
        case .tar(.zstd)?: ["tar.zst", "tzst"]
        case .tar(.xz)?: ["tar.xz", "txz"]
        case .tar(.none)?: ["tar"]
        case .zip?: ["zip"]
        case nil: Self.readOnlyExtensions
        }
    }

    /// Archives savetool reads but does not write.
    static let readOnlyExtensions = [
        "7z", "rar", "cpio", "iso", "ar", "a", "xar", "cab", "lha", "lzh", "tar.bz2", "tbz2", "tbz", "tar.lz4", "tar.Z", "taz", "tar.lz",
        "bz2", "lz4", "Z", "lz", "tar.lzo", "tar.lrz", "tar.grz", "lzo", "lrz", "grz",
    ]
    public let capabilities = ValueCapabilities.all
    public var traits: CodecTraits { [.archive, .conclusiveMagic] }

    public init(_ format: ArchiveFormat?) { self.format = format }

    /// Every archive codec, for a registry: the formats savetool writes, then the read-only one.
    public static let all: [ArchiveCodec] = [.tar(.gzip), .tar(.zstd), .tar(.xz), .tar(.none), .zip, nil].map(ArchiveCodec.init)

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        switch format {
        case .tar(.gzip)?: prefix.starts(with: [0x1F, 0x8B])
        case .tar(.zstd)?: prefix.starts(with: [0x28, 0xB5, 0x2F, 0xFD])
        case .tar(.xz)?: prefix.starts(with: [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])
        case .zip?: prefix.starts(with: [0x50, 0x4B, 0x03, 0x04]) || prefix.starts(with: [0x50, 0x4B, 0x05, 0x06])
        case .tar(.none)?: false  // "ustar" sits at byte 257, past what sniffing sees: known by extension
        case nil: Self.otherMagic.contains { prefix.starts(with: $0) }
        }
    }

    /// The read-only archive extension `path` ends with, if any (`tar.bz2`, `7z`).
    public static func readOnlyExtension(of path: String) -> String? {
        readOnlyExtensions.sorted { $0.count > $1.count }.first { path.hasSuffix("." + $0) }
    }

    /// The magic numbers of the read-only formats: 7z, rar, ar, cpio (odc, newc, crc, binary),
    /// xar, cab, lha, and the compressions of ``ArchiveReader`` beyond gzip, zstd and xz.
    static let otherMagic: [[UInt8]] = [
        [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C], Array("Rar!\u{1A}\u{07}".utf8), Array("!<arch>\n".utf8),
        Array("070707".utf8), Array("070701".utf8), Array("070702".utf8), [0xC7, 0x71], [0x71, 0xC7],
        Array("xar!".utf8), Array("MSCF".utf8), Array("BZh".utf8), [0x04, 0x22, 0x4D, 0x18], [0x1F, 0x9D], Array("LZIP".utf8),
        [0x89, 0x4C, 0x5A, 0x4F, 0x00, 0x0D, 0x0A, 0x1A], Array("LRZI".utf8), Array("GRZipII".utf8),
    ]

    /// `{"format", "entries": [{"path", "type", "size", "mode", "modifiedAt"}], "manifest"?}`.
    /// Any archive libarchive reads in-process is listed, whatever this codec's own format.
    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        let reader = try ArchiveReader(bytes: bytes, name: id, reading: .anyArchive)
        var entries: [SaveValue] = []
        var manifest: SaveValue?
        while let info = try reader.next() {
            var entry: OrderedDictionary<String, SaveValue> = ["path": .string(info.path), "type": .string(Self.typeName(info.kind))]
            if let raw = info.rawPath {
                // Kept exactly; the text form is only for reading.
                entry["pathBytes"] = .data(Data(raw))
                entry["warning"] = .string("the name is not UTF-8; pathBytes holds it exactly")
            }
            if let size = info.size { entry["size"] = .integer(size) }
            entry["mode"] = .string(BundleManifest.octal(info.permissions))
            if let modified = info.modified { entry["modifiedAt"] = .date(modified) }
            switch info.kind {
            case .symbolicLink(let target), .hardLink(let target):
                // As the path: text to read, and the bytes kept exactly when they are not UTF-8.
                let bytes = ExactFileName.bytes(of: target)
                entry["target"] = .string(String(decoding: bytes, as: UTF8.self))
                if String(validating: bytes, as: UTF8.self) == nil {
                    entry["targetBytes"] = .data(Data(bytes))
                    entry["warning"] = .string(info.rawPath == nil
                        ? "the target is not UTF-8; targetBytes holds it exactly"
                        : "the name and the target are not UTF-8; pathBytes and targetBytes hold them exactly")
                }
            default: break
            }
            entries.append(.dictionary(entry))
            if entries.count == 1, info.path == "manifest.json", info.kind == .file, (info.size ?? 0) <= 64 << 20 {
                if let data = try reader.readEntry(limit: 64 << 20) { manifest = try? JSONCodec().decode(data) }
            }
        }
        // The read-only codec names what libarchive found (`7-Zip`, `ISO9660`); the others their own id.
        var value: OrderedDictionary<String, SaveValue> = ["format": .string(format == nil ? reader.formatName ?? id : id)]
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
