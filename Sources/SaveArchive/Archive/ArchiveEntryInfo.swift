import Foundation
import OrderedCollections
import SaveKit

/// An archive entry's header: what it is, its name, size, permissions and time.
public struct ArchiveEntryInfo: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case file
        case directory
        case symbolicLink(target: String)
        case hardLink(target: String)
        /// A device, FIFO or socket: never extracted by savetool.
        case special(String)
    }

    /// The name inside the archive, `/`-separated, as UTF-8 (a directory's without the
    /// trailing `/` that tar and zip store).
    public var path: String
    public var kind: Kind
    /// The size the header declares; `nil` when the format leaves it unset.
    public var size: Int64?
    /// The permission bits (`0o644`).
    public var permissions: UInt16
    public var modified: Date?
    /// The modification time to the nanosecond, when known (it wins over ``modified``).
    public var timestamp: Timestamp?
    /// Extended attributes, by name.
    public var xattrs: OrderedDictionary<String, [UInt8]> = [:]
    /// The name's bytes when they are not UTF-8 (`path` then holds them with U+FFFD for each bad byte).
    public var rawPath: [UInt8]?

    /// The name byte for byte, as ``ExactFileName`` carries it: what a bundle's manifest names.
    public var exactPath: String {
        rawPath.map(ExactFileName.string) ?? ExactFileName.carried(path)
    }

    public init(path: String, kind: Kind, size: Int64? = nil, permissions: UInt16 = 0o644, modified: Date? = nil) {
        self.path = path
        self.kind = kind
        self.size = size
        self.permissions = permissions
        self.modified = modified
    }

    public static func file(_ path: String, size: Int64, permissions: UInt16 = 0o644, modified: Date? = nil) -> ArchiveEntryInfo {
        ArchiveEntryInfo(path: path, kind: .file, size: size, permissions: permissions, modified: modified)
    }
}

/// libarchive's `AE_IF*` file types (macros with casts, which Swift does not import).
enum EntryType {
    static let mask: UInt32 = 0o170000
    static let regular: UInt32 = 0o100000
    static let symbolicLink: UInt32 = 0o120000
    static let socket: UInt32 = 0o140000
    static let characterDevice: UInt32 = 0o020000
    static let blockDevice: UInt32 = 0o060000
    static let directory: UInt32 = 0o040000
    static let fifo: UInt32 = 0o010000
}
