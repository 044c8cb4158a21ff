import CArchive
import Foundation

/// Compresses a stream on a thread of its own, the way `tar --zstd` pipes into a `zstd`
/// process: the tar writer formats and reads files on one core while the filter compresses on
/// another. Blocks go through a small bounded queue, so memory stays flat.
///
/// The tar writer hands over 10 KiB at a time; those are gathered into blocks of 1 MiB before
/// they are queued, as a pipe's buffer gathers them for `zstd`. Queued one by one, each woke
/// the compressor (90,000 `futex` calls in an export of 100,000 small files, none in tar's).
///
/// The compressor is libarchive itself — the "raw" format, which writes one entry's bytes
/// through the filters unchanged — so the output is exactly what the single-threaded writer
/// would produce.
final class CompressionPipeline: @unchecked Sendable {
    private let condition = NSCondition()
    private var blocks: [[UInt8]] = []
    private var finished = false
    private var failure: String?
    private var done = false
    private var abandoned = false
    /// Blocks waiting, at most: with the one being gathered and the one being compressed, at
    /// most 6 MiB.
    private let capacity = 4
    private static let blockSize = 1 << 20
    /// The block being gathered: the writing thread's alone.
    private var gathering: [UInt8] = []
    private let compressor: OpaquePointer
    private let entry: OpaquePointer
    private let output: ArchiveOutput

    /// Opens the compressor on `output`; `configure` adds the filter and its options.
    init(output: ArchiveOutput, name: String, configure: (OpaquePointer) -> Int32) throws(ArchiveError) {
        guard let compressor = archive_write_new(), let entry = archive_entry_new() else {
            throw .cannotCreate(archive: name, message: "libarchive could not allocate a writer")
        }
        self.compressor = compressor
        self.entry = entry
        self.output = output
        var status = archive_write_set_format_raw(compressor)
        if status == ARCHIVE_OK { status = configure(compressor) }
        if status == ARCHIVE_OK { status = archive_write_set_bytes_in_last_block(compressor, 1) }
        if status == ARCHIVE_OK { status = output.open(compressor) }
        if status == ARCHIVE_OK {
            archive_entry_set_pathname(entry, "stream")
            archive_entry_set_filetype(entry, EntryType.regular)
            status = archive_write_header(compressor, entry)
        }
        guard status == ARCHIVE_OK else {
            let message = ArchiveReader.message(compressor)
            archive_write_free(compressor)
            archive_entry_free(entry)
            throw .cannotCreate(archive: name, message: message)
        }
        Thread.detachNewThread { [self] in run() }
    }

    deinit {
        archive_write_free(compressor)
        archive_entry_free(entry)
    }

    /// Adds bytes to the stream, queuing a block when one is full; waits while the queue is
    /// full. `false` once the compressor has failed.
    func push(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // Queued before it would overflow: 1 MiB is no multiple of the writer's 10 KiB, and
        // growing the block would copy it.
        if gathering.count + bytes.count > Self.blockSize, !queueGathered() { return false }
        if gathering.capacity < Self.blockSize { gathering.reserveCapacity(Self.blockSize) }
        gathering.append(contentsOf: bytes)
        return true
    }

    private func queueGathered() -> Bool {
        guard !gathering.isEmpty else { return true }
        let block = gathering
        gathering = []
        condition.lock()
        defer { condition.unlock() }
        while blocks.count >= capacity && failure == nil { condition.wait() }
        guard failure == nil else { return false }
        blocks.append(block)
        condition.broadcast()
        return true
    }

    /// Stops without writing what is queued or the compressor's end, and waits for its thread:
    /// the archive failed, and nothing more of it should reach the output.
    func abandon() {
        gathering = []
        condition.lock()
        abandoned = true
        finished = true
        condition.broadcast()
        while !done { condition.wait() }
        condition.unlock()
    }

    /// Ends the stream and waits for the compressor to write its last bytes.
    func finish() throws(ArchiveError) {
        _ = queueGathered()
        condition.lock()
        finished = true
        condition.broadcast()
        while !done { condition.wait() }
        let failure = self.failure
        condition.unlock()
        if let failure { throw .ioFailure(archive: "", message: failure) }
    }

    var error: String? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    private func run() {
        var message: String?
        while true {
            condition.lock()
            while blocks.isEmpty && !finished { condition.wait() }
            if (blocks.isEmpty && finished) || abandoned {
                condition.unlock()
                break
            }
            let block = blocks.removeFirst()
            condition.broadcast()
            condition.unlock()
            let written = block.withUnsafeBytes { archive_write_data(compressor, $0.baseAddress, $0.count) }
            if written < 0 || written != block.count {
                message = output.failure ?? ArchiveReader.message(compressor)
                break
            }
        }
        condition.lock()
        let abandoned = self.abandoned
        condition.unlock()
        if abandoned || message != nil {
            // Failed: nothing more reaches the output, not even at free (which would close,
            // writing the compressor's buffered bytes and its trailer).
            archive_write_fail(compressor)
        } else if archive_write_close(compressor) != ARCHIVE_OK {
            message = output.failure ?? ArchiveReader.message(compressor)
        }
        condition.lock()
        if let message { failure = message }
        done = true
        blocks.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
