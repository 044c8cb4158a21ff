import CArchive
import Foundation
import SaveKit

/// Writes an archive entry by entry, streaming, into a file descriptor or any ``ArchiveOutput``.
///
/// Output is reproducible: the same entries give the same bytes (owner 0, no user or group
/// names, no timestamp in the gzip header). Tar archives are pax ("restricted": plain ustar
/// headers unless a name or size needs pax records), which every tar reads.
///
/// A tar archive's stream is put together here: each header is ``TarHeader``'s, or
/// libarchive's for an entry that needs pax records, then the data, padded to 512 bytes, and
/// the two empty records that end it, as libarchive's own writer lays them out (a test reads
/// such an archive back record by record). Zip archives are libarchive's throughout.
public final class ArchiveWriter {
    public let name: String
    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private var current: (path: String, declared: Int64, written: Int64)?
    private var closed = false
    /// A tar archive's stream, compressed on a thread of its own when it is compressed.
    private var tar: TarEntryStream?
    /// libarchive's headers for the tar entries that need pax records, made when first needed.
    private var paxHeaders: PaxHeaderWriter?
    /// A tar archive that failed stays failed, as libarchive's writer does: every later call
    /// throws the first error, so that a close tried again never ends a cut archive as whole.
    private var tarFailure: ArchiveError?
    private let output: ArchiveOutput

    /// Writes to `descriptor` (left open); `name` is for messages.
    public convenience init(fileDescriptor descriptor: Int32, name: String, format: ArchiveFormat, level: Int? = nil) throws(ArchiveError) {
        try self.init(output: ArchiveOutput(descriptor: descriptor), name: name, format: format, level: level)
    }

    /// Writes to `output`; `name` is for messages.
    public init(output: ArchiveOutput, name: String, format: ArchiveFormat, level: Int? = nil) throws(ArchiveError) {
        self.name = name
        self.output = output
        guard let archive = archive_write_new(), let entry = archive_entry_new() else {
            throw .cannotCreate(archive: name, message: "libarchive could not allocate a writer")
        }
        self.archive = archive
        self.entry = entry
        if case .tar(let compression) = format {
            do {
                // Compressed off this thread, as `tar --zstd` pipes into `zstd`.
                tar = try TarEntryStream(into: output, name: name, compression: compression, level: level)
            } catch {
                closed = true  // nothing to close; deinit frees the writer
                throw error
            }
            return
        }
        var status = archive_write_set_format_zip(archive)
        if status == ARCHIVE_OK, let level { status = archive_write_set_options(archive, "zip:compression-level=\(level)") }
        if status == ARCHIVE_OK { status = output.open(archive) }
        guard status == ARCHIVE_OK else {
            closed = true  // nothing to close; deinit frees both
            throw .cannotCreate(archive: name, message: ArchiveReader.message(archive))
        }
    }

    deinit {
        // Not closed: an error stopped the writing. Marked failed, libarchive writes no end of
        // archive into the output (an upload under way is aborted, not sent a trailer). A tar
        // stream, not libarchive's, stops its compressor likewise (TarEntryStream's deinit).
        if !closed { archive_write_fail(archive) }
        archive_write_free(archive)
        archive_entry_free(entry)
    }

    /// Starts an entry; a file's data follows with ``write(_:)``.
    public func begin(_ info: ArchiveEntryInfo) throws(ArchiveError) {
        if let tar {
            try tarStep { () throws(ArchiveError) in
                try finishEntry()
                guard !closed else { throw .ioFailure(archive: name, message: "an entry begun after the archive was closed") }
                // libarchive would read before an empty name to add a directory's slash.
                guard !info.path.isEmpty else { throw .malformed(archive: name, entry: "", message: "an empty name, expected a path") }
                let header: [UInt8]
                if let plain = TarHeader.ustar(for: info) {
                    header = plain
                } else {
                    if paxHeaders == nil { paxHeaders = try PaxHeaderWriter(archive: name) }
                    header = try paxHeaders!.header(for: info)
                }
                try tar.write(header)
                let declared = if case .file = info.kind { info.size ?? 0 } else { Int64(0) }
                current = (info.path, declared, 0)
            }
            return
        }
        try finishEntry()
        let (declared, exactBytes) = try Self.describe(info, in: entry, archive: name)
        try Self.writeHeader(archive, entry, exactBytes: exactBytes, archive: name, path: info.path)
        current = (info.path, declared, 0)
    }

    /// Sets `entry` to `info`; returns the size its header declares, and whether a name is
    /// set as bytes that are not UTF-8.
    private static func describe(_ info: ArchiveEntryInfo, in entry: OpaquePointer, archive name: String) throws(ArchiveError) -> (declared: Int64, exactBytes: Bool) {
        archive_entry_clear(entry)
        var exactBytes = setName(info.path, in: entry, archive_entry_set_pathname_utf8, archive_entry_copy_pathname)
        archive_entry_set_perm(entry, mode_t(info.permissions))
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        if let timestamp = info.timestamp {
            archive_entry_set_mtime(entry, time_t(timestamp.seconds), Int(timestamp.nanoseconds))
        } else if let modified = info.modified {
            let seconds = modified.timeIntervalSince1970.rounded(.down)
            archive_entry_set_mtime(entry, time_t(seconds), Int((modified.timeIntervalSince1970 - seconds) * 1e9))
        }
        for (name, value) in info.xattrs {
            value.withUnsafeBytes { archive_entry_xattr_add_entry(entry, name, $0.baseAddress, $0.count) }
        }
        var declared: Int64 = 0
        switch info.kind {
        case .file:
            declared = info.size ?? 0
            archive_entry_set_filetype(entry, EntryType.regular)
            archive_entry_set_size(entry, declared)
        case .directory:
            archive_entry_set_filetype(entry, EntryType.directory)
            archive_entry_set_size(entry, 0)
        case .symbolicLink(let target):
            archive_entry_set_filetype(entry, EntryType.symbolicLink)
            exactBytes = setName(target, in: entry, archive_entry_set_symlink_utf8, archive_entry_copy_symlink) || exactBytes
        case .hardLink(let target):
            archive_entry_set_filetype(entry, EntryType.regular)
            exactBytes = setName(target, in: entry, archive_entry_set_hardlink_utf8, archive_entry_copy_hardlink) || exactBytes
        case .special(let description):
            throw .malformed(archive: name, entry: info.path, message: "a \(description) cannot be written, expected a file, directory or link")
        }
        return (declared, exactBytes)
    }

    /// Writes the header of `entry`: the one warning taken is libarchive's for a name set as
    /// bytes that are not UTF-8 (``setName(_:in:_:_:)``), which it writes as they are.
    private static func writeHeader(_ archive: OpaquePointer, _ entry: OpaquePointer, exactBytes: Bool, archive name: String, path: String) throws(ArchiveError) {
        let status = UTF8Locale.run { archive_write_header(archive, entry) }
        guard status == ARCHIVE_OK || (status == ARCHIVE_WARN && exactBytes) else {
            throw .malformed(archive: name, entry: path, message: ArchiveReader.message(archive))
        }
    }

    /// Sets a name as UTF-8, or, when it holds bytes that are not (``ExactFileName``), as those
    /// bytes: libarchive writes them as they are, with a warning (pax `hdrcharset=BINARY`, as
    /// bsdtar and GNU tar do; a zip name without the UTF-8 flag). Returns whether it did.
    private static func setName(
        _ name: String, in entry: OpaquePointer,
        _ setUTF8: (OpaquePointer?, UnsafePointer<CChar>?) -> Void, _ setBytes: (OpaquePointer?, UnsafePointer<CChar>?) -> Void
    ) -> Bool {
        guard ExactFileName.mayHoldEscapes(name) else {
            setUTF8(entry, name)
            return false
        }
        let bytes = ExactFileName.bytes(of: name)
        if let text = String(validating: bytes, as: UTF8.self) {
            setUTF8(entry, text)  // a name holding U+EF80 itself
            return false
        }
        (bytes + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { setBytes(entry, $0.baseAddress) } }
        return true
    }

    /// The bytes of the tar header that ``begin(_:)`` writes for `info`, alone: the start of
    /// an entry whose data goes in a stream of its own (``TarEntryStream``).
    static func tarHeader(for info: ArchiveEntryInfo, archive name: String) throws(ArchiveError) -> [UInt8] {
        if let plain = TarHeader.ustar(for: info) { return plain }
        return try PaxHeaderWriter(archive: name).header(for: info, describedWithItsSize: true)
    }

    /// libarchive's pax headers, from one writer kept for a whole archive: a writer made for
    /// each entry would cost more than the header (trees of names in Chinese need one for every
    /// entry). Each entry is described to it without data (size 0), so that the next header
    /// writes none for it, and the size is then put in the ustar header that ends the records.
    final class PaxHeaderWriter {
        private final class Captured { var bytes: [UInt8] = [] }
        private let archive: OpaquePointer
        private let entry: OpaquePointer
        private let captured = Captured()
        private let name: String

        init(archive name: String) throws(ArchiveError) {
            guard let archive = archive_write_new(), let entry = archive_entry_new() else {
                throw .cannotCreate(archive: name, message: "libarchive could not allocate a writer")
            }
            (self.archive, self.entry, self.name) = (archive, entry, name)
            var status = archive_write_set_format_pax_restricted(archive)
            // Unblocked: each header record reaches the callback as it is made.
            if status == ARCHIVE_OK { status = archive_write_set_bytes_per_block(archive, 0) }
            if status == ARCHIVE_OK {
                status = archive_write_open2(archive, Unmanaged.passUnretained(captured).toOpaque(), nil, { _, context, buffer, length in
                    guard let buffer else { return -1 }
                    Unmanaged<Captured>.fromOpaque(context!).takeUnretainedValue().bytes.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
                    return length
                }, nil, nil)
            }
            // Freed by deinit, which runs for a class whose properties are all set.
            guard status == ARCHIVE_OK else { throw .cannotCreate(archive: name, message: ArchiveReader.message(archive)) }
        }

        deinit {
            // Failed on purpose: no padding for the last entry's data, no end of archive.
            archive_write_fail(archive)
            archive_write_free(archive)
            archive_entry_free(entry)
        }

        /// The header records of `info`. A size of 8 GiB or more is a pax record of its own:
        /// such an entry is described with its size, to a writer of its own made here for it;
        /// `describedWithItsSize` describes every entry so (a writer used once).
        func header(for info: ArchiveEntryInfo, describedWithItsSize: Bool = false) throws(ArchiveError) -> [UInt8] {
            let size = if case .file = info.kind { info.size ?? 0 } else { Int64(0) }
            if size >= TarHeader.largestSize && !describedWithItsSize {
                return try PaxHeaderWriter(archive: name).header(for: info, describedWithItsSize: true)
            }
            var described = info
            if !describedWithItsSize, case .file = info.kind { described.size = 0 }
            captured.bytes.removeAll(keepingCapacity: true)
            let exactBytes = try describe(described, in: entry, archive: name).exactBytes
            try writeHeader(archive, entry, exactBytes: exactBytes, archive: name, path: info.path)
            var header = captured.bytes
            if described.size != info.size, size > 0 { TarHeader.setSize(size, inLastRecordOf: &header) }
            return header
        }
    }

    /// Appends to the current file entry.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if let tarFailure { throw tarFailure }
        guard var entryState = current else { return }  // after close() too: no entry is open
        if let tar {
            try tarStep { () throws(ArchiveError) in
                // More than the header declared would be read as the next header: refused whole.
                guard entryState.written + Int64(bytes.count) <= entryState.declared else {
                    throw .sizeMismatch(archive: name, entry: entryState.path, declared: entryState.declared, written: entryState.written + Int64(bytes.count))
                }
                try tar.write(bytes)
            }
            entryState.written += Int64(bytes.count)
            current = entryState
            return
        }
        var offset = 0
        while offset < bytes.count {
            let count = archive_write_data(archive, bytes.baseAddress! + offset, bytes.count - offset)
            guard count > 0 else { throw .ioFailure(archive: name, message: failureMessage()) }
            offset += count
        }
        entryState.written += Int64(bytes.count)
        current = entryState
    }

    public func write(_ bytes: [UInt8]) throws(ArchiveError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(ArchiveError) in try write(raw) } }
        try result.get()
    }

    /// Ends the current entry, checking that it got exactly the bytes its header declared.
    public func finishEntry() throws(ArchiveError) {
        if let tarFailure { throw tarFailure }
        guard let entryState = current else { return }
        current = nil
        if let tar {
            try tarStep { () throws(ArchiveError) in
                guard entryState.written == entryState.declared else {
                    throw .sizeMismatch(archive: name, entry: entryState.path, declared: entryState.declared, written: entryState.written)
                }
                let padding = Int((Int64(TarHeader.blockSize) - entryState.declared % Int64(TarHeader.blockSize)) % Int64(TarHeader.blockSize))
                if padding > 0 { try tar.writeZeros(padding) }
            }
            return
        }
        guard entryState.written == entryState.declared else {
            throw .sizeMismatch(archive: name, entry: entryState.path, declared: entryState.declared, written: entryState.written)
        }
        guard archive_write_finish_entry(archive) == ARCHIVE_OK else {
            throw .ioFailure(archive: name, message: failureMessage())
        }
    }

    /// The most precise reason there is: the output's own error, else libarchive's (zip).
    private func failureMessage() -> String {
        output.failure ?? ArchiveReader.message(archive)
    }

    /// Writes the end of the archive and waits for the compressor's last bytes. The descriptor
    /// stays open.
    public func close() throws(ArchiveError) {
        if let tar {
            try tarStep { () throws(ArchiveError) in
                guard !closed else { return }  // its end is written once
                try finishEntry()
                closed = true
                try tar.writeZeros(2 * TarHeader.blockSize)  // the end of the archive
                try tar.finish()
            }
            return
        }
        try finishEntry()
        closed = true
        guard archive_write_close(archive) == ARCHIVE_OK else { throw .ioFailure(archive: name, message: failureMessage()) }
    }

    /// Runs one step of writing a tar archive; the first error it meets is thrown by every
    /// later step too (``tarFailure``).
    private func tarStep(_ body: () throws(ArchiveError) -> Void) throws(ArchiveError) {
        if let tarFailure { throw tarFailure }
        do throws(ArchiveError) {
            try body()
        } catch {
            if tarFailure == nil { tarFailure = error }
            throw error
        }
    }
}
