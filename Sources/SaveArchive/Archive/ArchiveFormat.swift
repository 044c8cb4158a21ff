/// The archive formats savetool reads and writes: tar (pax) with a compression filter, or zip.
public enum ArchiveFormat: Sendable, Equatable, CustomStringConvertible {
    case tar(Compression)
    case zip

    public enum Compression: String, Sendable, CaseIterable {
        case gzip, zstd, xz, none
    }

    /// `.tar.gz`, `.tgz`, `.tar.zst`, `.tar.xz`, `.tar`, `.zip`.
    public init?(path: String) {
        let name = path.lowercased()
        if name.hasSuffix(".tar.gz") || name.hasSuffix(".tgz") { self = .tar(.gzip) }
        else if name.hasSuffix(".tar.zst") || name.hasSuffix(".tzst") { self = .tar(.zstd) }
        else if name.hasSuffix(".tar.xz") || name.hasSuffix(".txz") { self = .tar(.xz) }
        else if name.hasSuffix(".tar") { self = .tar(.none) }
        else if name.hasSuffix(".zip") { self = .zip }
        else { return nil }
    }

    /// The usual extension, without the dot.
    public var fileExtension: String {
        switch self {
        case .tar(.gzip): "tar.gz"
        case .tar(.zstd): "tar.zst"
        case .tar(.xz): "tar.xz"
        case .tar(.none): "tar"
        case .zip: "zip"
        }
    }

    public var description: String { fileExtension }
}
