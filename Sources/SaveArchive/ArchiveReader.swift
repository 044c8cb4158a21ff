import CArchive
import Foundation

/// Reads an archive entry by entry, streaming: only the current block of the current entry
/// is in memory, whatever the size of the archive.
///
/// ```swift
/// let reader = try ArchiveReader(path: "backup.tar.gz")
/// while let entry = try reader.next() {
///     var buffer = [UInt8](repeating: 0, count: 1 << 16)
///     while case let count = try reader.read(into: &buffer), count > 0 { … }
/// }
/// ```
///
/// Tar (any variant, with any compression libarchive knows) and zip are read; other formats
/// are refused. Every libarchive warning is an error: a zip CRC mismatch comes only as one.
public final class ArchiveReader {
    public let path: String
    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private var currentPath: String?

    public init(path: String) throws(ArchiveError) {
        (self.path, archive, entry) = try Self.allocate(name: path)
        let status = UTF8Locale.run { archive_read_open_filename(archive, path, 1 << 16) }
        if status != ARCHIVE_OK {
            // Every stored property is set, so deinit runs and frees both.
            throw .unreadable(archive: path, message: Self.message(archive))
        }
    }

    /// A reader of tar (any variant, any compression libarchive knows) and zip, and nothing else.
    private static func allocate(name: String) throws(ArchiveError) -> (String, OpaquePointer, OpaquePointer) {
        guard let archive = archive_read_new() else {
            throw .unreadable(archive: name, message: "libarchive could not allocate a reader")
        }
        guard let entry = archive_entry_new() else {
            archive_read_free(archive)
            throw .unreadable(archive: name, message: "libarchive could not allocate an entry")
        }
        archive_read_support_filter_all(archive)
        archive_read_support_format_tar(archive)
        archive_read_support_format_gnutar(archive)
        archive_read_support_format_zip(archive)
        return (name, archive, entry)
    }

    /// Reads an archive held in memory; `bytes` must stay alive as long as the reader.
    private var memory: UnsafeMutableRawBufferPointer?

    public init(bytes: [UInt8], name: String) throws(ArchiveError) {
        (self.path, archive, entry) = try Self.allocate(name: name)
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
        memory = copy
        let status = UTF8Locale.run { archive_read_open_memory(archive, copy.baseAddress, bytes.count) }
        if status != ARCHIVE_OK { throw .malformed(archive: name, entry: nil, message: Self.message(archive)) }
    }

    deinit {
        archive_read_free(archive)
        archive_entry_free(entry)
        memory?.deallocate()
    }

    /// The whole data of the entry named `path`, or `nil` when the archive has none.
    public func contents(of path: String, limit: Int = 256 << 20) throws(ArchiveError) -> [UInt8]? {
        while let info = try next() {
            guard info.path == path else { continue }
            guard let data = try readEntry(limit: limit) else {
                throw .malformed(archive: self.path, entry: path, message: "larger than \(limit) bytes, expected a document")
            }
            return data
        }
        return nil
    }

    /// The rest of the current entry's data, or `nil` as soon as it grows past `limit` bytes:
    /// a header's size can be absent or wrong, so the bound is checked on what is read.
    public func readEntry(limit: Int) throws(ArchiveError) -> [UInt8]? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while case let count = try read(into: &buffer), count > 0 {
            data += buffer[..<count]
            if data.count > limit { return nil }
        }
        return data
    }

    /// The next entry's header, or `nil` at the end of the archive.
    public func next() throws(ArchiveError) -> ArchiveEntryInfo? {
        let status = UTF8Locale.run { archive_read_next_header2(archive, entry) }
        if status == ARCHIVE_EOF { return nil }
        guard status == ARCHIVE_OK else { throw malformed(after: currentPath) }
        guard let name = Self.string(archive_entry_pathname_utf8(entry)) ?? Self.string(archive_entry_pathname(entry)) else {
            throw .malformed(archive: path, entry: nil, message: "an entry name that is not UTF-8 text, expected UTF-8 names")
        }
        currentPath = name
        let type = archive_entry_filetype(entry)
        let kind: ArchiveEntryInfo.Kind
        if let target = Self.string(archive_entry_hardlink_utf8(entry)) ?? Self.string(archive_entry_hardlink(entry)) {
            kind = .hardLink(target: target)
        } else {
            switch type & EntryType.mask {
            case EntryType.regular: kind = .file
            case EntryType.directory: kind = .directory
            case EntryType.symbolicLink:
                kind = .symbolicLink(target: Self.string(archive_entry_symlink_utf8(entry)) ?? Self.string(archive_entry_symlink(entry)) ?? "")
            case EntryType.characterDevice: kind = .special("character device")
            case EntryType.blockDevice: kind = .special("block device")
            case EntryType.fifo: kind = .special("FIFO")
            case EntryType.socket: kind = .special("socket")
            default: kind = .special("entry of type 0o\(String(type, radix: 8))")
            }
        }
        var path = name
        if kind == .directory {
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }  // tar and zip store "dir/"
        }
        let size = archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : nil
        let modified = archive_entry_mtime_is_set(entry) != 0
            ? Date(timeIntervalSince1970: Double(archive_entry_mtime(entry)) + Double(archive_entry_mtime_nsec(entry)) / 1e9) : nil
        return ArchiveEntryInfo(path: path, kind: kind, size: size, permissions: UInt16(archive_entry_perm(entry) & 0o7777), modified: modified)
    }

    /// Reads the current entry's data into `buffer`; returns the count, 0 at the end of the entry.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        let count = archive_read_data(archive, buffer.baseAddress, buffer.count)
        guard count >= 0 else { throw malformed(after: currentPath) }
        return count
    }

    public func read(into buffer: inout [UInt8]) throws(ArchiveError) -> Int {
        let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(ArchiveError) -> Int in try read(into: raw) } }
        return try result.get()
    }

    private func malformed(after entry: String?) -> ArchiveError {
        .malformed(archive: path, entry: entry, message: Self.message(archive))
    }

    static func message(_ archive: OpaquePointer) -> String {
        string(archive_error_string(archive)) ?? "libarchive gave no reason (error \(archive_errno(archive)))"
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.flatMap { String(validatingCString: $0) }
    }
}
