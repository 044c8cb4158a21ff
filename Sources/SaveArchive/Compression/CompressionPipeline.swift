import Foundation

/// Compresses a stream on a thread of its own, the way `tar -z` pipes into a `gzip`
/// process: the tar writer formats and reads files on one core while the compressor works on
/// another. Blocks go through a small bounded queue, so memory stays flat.
///
/// The tar writer hands over 10 KiB at a time; those are gathered into blocks of 1 MiB before
/// they are queued, as a pipe's buffer gathers them for `gzip`. Queued one by one, each woke
/// the compressor (90,000 `futex` calls in an export of 100,000 small files, none in tar's).
///
/// A large zstd stream needs no such thread: libzstd has a worker of its own
/// (``ZstdCompressor``).
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
    private let compressor: any StreamCompressor

    /// Starts `compressor`'s thread.
    init(compressor: any StreamCompressor) {
        self.compressor = compressor
        Thread.detachNewThread { [self] in run() }
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
            let compressed = block.withUnsafeBytes { bytes in Result { () throws(ArchiveError) in try compressor.compress(bytes) } }
            if case .failure(let error) = compressed {
                message = Self.reason(error)
                break
            }
        }
        condition.lock()
        let abandoned = self.abandoned
        condition.unlock()
        if abandoned || message != nil {
            // Failed: nothing more reaches the output, not even the compressor's buffered
            // bytes and its trailer.
            compressor.abandon()
        } else {
            do throws(ArchiveError) { try compressor.finish() } catch { message = Self.reason(error) }
        }
        condition.lock()
        if let message { failure = message }
        done = true
        blocks.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    private static func reason(_ error: ArchiveError) -> String {
        if case .ioFailure(_, let message) = error { return message }
        return error.description
    }
}
