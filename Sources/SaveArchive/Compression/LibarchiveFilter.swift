import CArchive

/// A stream compressed by a libarchive filter (gzip, xz): its "raw" format, which writes one
/// entry's bytes through the filters unchanged, so the output is exactly what libarchive's
/// own tar writer would produce.
final class LibarchiveFilter: StreamCompressor {
    /// The filters used so: zstd is libzstd's own (``ZstdCompressor``).
    enum Filter {
        case gzip, xz
    }

    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private let output: ArchiveOutput
    private let name: String
    private var ended = false

    /// Opens `filter` at `level` (the filter's default when nil) on `output`; `name` is for
    /// messages. gzip is written without a timestamp, so that the same files give the same bytes.
    init(output: ArchiveOutput, name: String, filter: Filter, level: Int?) throws(ArchiveError) {
        guard let archive = archive_write_new() else {
            throw .cannotCreate(archive: name, message: "libarchive could not allocate a writer")
        }
        guard let entry = archive_entry_new() else {
            archive_write_free(archive)
            throw .cannotCreate(archive: name, message: "libarchive could not allocate a writer")
        }
        (self.archive, self.entry, self.output, self.name) = (archive, entry, output, name)
        var options: [String]
        var status = archive_write_set_format_raw(archive)
        switch filter {
        case .gzip:
            if status == ARCHIVE_OK { status = archive_write_add_filter_gzip(archive) }
            options = ["gzip:!timestamp"] + (level.map { ["gzip:compression-level=\($0)"] } ?? [])
        case .xz:
            if status == ARCHIVE_OK { status = archive_write_add_filter_xz(archive) }
            options = level.map { ["xz:compression-level=\($0)"] } ?? []
        }
        if status == ARCHIVE_OK && !options.isEmpty { status = archive_write_set_options(archive, options.joined(separator: ",")) }
        if status == ARCHIVE_OK { status = archive_write_set_bytes_in_last_block(archive, 1) }
        if status == ARCHIVE_OK { status = output.open(archive) }
        if status == ARCHIVE_OK {
            archive_entry_set_pathname(entry, "stream")
            archive_entry_set_filetype(entry, EntryType.regular)
            status = archive_write_header(archive, entry)
        }
        guard status == ARCHIVE_OK else {
            let message = ArchiveReader.message(archive)
            abandon()  // nothing written yet; deinit frees both
            throw .cannotCreate(archive: name, message: message)
        }
    }

    deinit {
        // Freeing a writer not yet closed would close it, writing the filter's end.
        if !ended { archive_write_fail(archive) }
        archive_write_free(archive)
        archive_entry_free(entry)
    }

    func compress(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        let written = archive_write_data(archive, bytes.baseAddress, bytes.count)
        guard written == bytes.count else { throw .ioFailure(archive: name, message: output.failure ?? ArchiveReader.message(archive)) }
    }

    func finish() throws(ArchiveError) {
        ended = true
        guard archive_write_close(archive) == ARCHIVE_OK else {
            throw .ioFailure(archive: name, message: output.failure ?? ArchiveReader.message(archive))
        }
    }

    func abandon() {
        ended = true
        archive_write_fail(archive)
    }
}
