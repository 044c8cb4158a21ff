import CArchive
import Foundation

/// Decompresses an archive file on a thread of its own, the way `tar -xz` reads from a `gzip`
/// process: the tar reader parses entries, and its caller checks and writes them, on one core
/// while the filter inflates on another. Blocks go through a small bounded queue, so memory
/// stays flat.
///
/// The decompressor is libarchive itself — the "raw" format, which reads the whole
/// decompressed stream as one entry — so what the tar reader sees is exactly what a reader
/// with the filter set would have seen.
final class DecompressionPipeline: @unchecked Sendable {
    private let condition = NSCondition()
    private var blocks: [UnsafeMutableRawBufferPointer] = []
    private var finished = false
    private var stopping = false
    private var done = false
    private var failureText: String?
    /// The block the tar reader is reading: libarchive keeps the pointer until its next call.
    private var current: UnsafeMutableRawBufferPointer?
    private let decompressor: OpaquePointer?
    /// At most this many decompressed bytes wait (and at least one block).
    private static let capacity = 4 << 20
    private var queuedBytes = 0

    /// Opens `path` through the compression `layer` (a libarchive filter code). What cannot be
    /// opened or decompressed is told by ``failure`` once the reader has had every block before it.
    init(path: String, layer: Int32) {
        decompressor = archive_read_new()
        guard let decompressor else {
            (failureText, finished, done) = ("libarchive could not allocate a reader", true, true)
            return
        }
        // A filter that libarchive would run as an external program answers with a warning.
        guard archive_read_append_filter(decompressor, layer) == ARCHIVE_OK else {
            let name = ArchiveReader.Compression.name(of: layer)
            refusal = "its \(name) compression cannot be read in-process, expected one savetool reads itself"
            (failureText, finished, done) = (refusal, true, true)
            return
        }
        archive_read_support_format_raw(decompressor)
        var entry: OpaquePointer?
        guard UTF8Locale.run({ archive_read_open_filename(decompressor, path, 1 << 16) }) == ARCHIVE_OK,
            archive_read_next_header(decompressor, &entry) == ARCHIVE_OK
        else {
            (failureText, finished, done) = (ArchiveReader.message(decompressor), true, true)
            return
        }
        Thread.detachNewThread { [self] in run() }
    }

    deinit {
        if let decompressor { archive_read_free(decompressor) }
        current?.deallocate()
        for block in blocks { block.deallocate() }
    }

    /// Why decompressing failed, once the tar reader has been told (it read every block before
    /// the failure); nil before, so that a fault the tar reader met first is the one reported.
    var failure: String? { condition.withLock { told ? failureText : nil } }
    private var told = false
    /// Why the compression is refused outright, before anything is read.
    private(set) var refusal: String?

    /// Opens `archive` to read the decompressed stream (the pipeline must outlive it).
    func open(_ archive: OpaquePointer) -> Int32 {
        archive_read_open(archive, Unmanaged.passUnretained(self).toOpaque(), nil, { _, context, buffer in
            let pipeline = Unmanaged<DecompressionPipeline>.fromOpaque(context!).takeUnretainedValue()
            return pipeline.nextBlock(buffer)
        }, nil)
    }

    /// Hands libarchive the next block: its size, 0 at the end, -1 when decompressing failed.
    private func nextBlock(_ buffer: UnsafeMutablePointer<UnsafeRawPointer?>?) -> Int {
        guard let block = nextBlock() else { return condition.withLock { failureText == nil ? 0 : -1 } }
        buffer?.pointee = block.baseAddress
        return block.count
    }

    /// The next block of the decompressed stream, valid until the next call; `nil` at the end,
    /// or when decompressing failed (``failure`` then says why).
    func nextBlock() -> UnsafeRawBufferPointer? {
        condition.lock()
        defer { condition.unlock() }
        while blocks.isEmpty && !finished { condition.wait() }
        guard !blocks.isEmpty else {
            told = failureText != nil
            return nil
        }
        current?.deallocate()
        let block = blocks.removeFirst()
        queuedBytes -= block.count
        current = block
        condition.broadcast()
        return UnsafeRawBufferPointer(block)
    }

    /// The stream's first `count` bytes (fewer when it is shorter), left to be read. `count`
    /// must be under the queue's 4 MiB, which the decompressor fills before it waits.
    func peek(_ count: Int) -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while queuedBytes < count && !finished { condition.wait() }
        var head: [UInt8] = []
        for block in blocks where head.count < count { head += block.prefix(count - head.count) }
        return head
    }

    /// Stops the thread, when the reader is done before the end, and waits for it.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !done { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queuedBytes >= Self.capacity && !stopping { condition.wait() }
            let stop = stopping
            condition.unlock()
            if stop { break }
            // As the filter gives them: on a failure, every byte before it has been handed on.
            var data: UnsafeRawPointer?
            var size = 0
            var offset: Int64 = 0
            let status = archive_read_data_block(decompressor, &data, &size, &offset)
            var block: UnsafeMutableRawBufferPointer?
            if status == ARCHIVE_OK, size > 0, let data {
                block = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
                block!.copyMemory(from: UnsafeRawBufferPointer(start: data, count: size))
            }
            condition.lock()
            if let block {
                blocks.append(block)
                queuedBytes += block.count
            }
            if status != ARCHIVE_OK {
                if status != ARCHIVE_EOF { failureText = ArchiveReader.message(decompressor!) }
                finished = true
            }
            condition.broadcast()
            condition.unlock()
            if status != ARCHIVE_OK { break }
        }
        condition.lock()
        finished = true
        done = true
        condition.broadcast()
        condition.unlock()
    }
}
