import Foundation

/// Byte buffers for the files an import reads whole, used again rather than allocated for each
/// file. Each was allocated on the extracting thread and freed on the landing one, through the
/// one malloc arena that a bundle's threads share (``BundleImporter``'s extraction): `malloc`,
/// `free` and the arena's consolidation were a sixth of the extracting thread's samples.
///
/// The extracting thread takes buffers from a stash of its own, refilled from those handed
/// back when it runs out; the landing thread hands back a batch's buffers at once. So the lock
/// is taken once a batch on each side, not for every file. A buffer that the extracting thread
/// is done with itself (a dry run lands on it; a migrated file lands other bytes) goes straight
/// back to its stash.
final class ContentsBuffers: @unchecked Sendable {
    /// Larger buffers are left to malloc.
    static let largestKept = 64 << 10
    /// At most this many bytes wait in the stash, and as many among those handed back.
    static let keptBytes = 2 << 20
    private let lock = NSLock()
    private var handedBack: [[UInt8]] = []
    private var handedBackBytes = 0
    /// The extracting thread's own.
    private var stash: [[UInt8]] = []
    private var stashBytes = 0

    /// An empty buffer with room for `capacity` bytes (extracting thread).
    func take(capacity: Int) -> [UInt8] {
        if capacity <= Self.largestKept {
            if stash.isEmpty {
                lock.withLock {
                    swap(&stash, &handedBack)
                    (stashBytes, handedBackBytes) = (handedBackBytes, 0)
                }
            }
            if var buffer = stash.popLast() {
                stashBytes -= buffer.capacity
                buffer.removeAll(keepingCapacity: true)
                buffer.reserveCapacity(capacity)
                return buffer
            }
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        return buffer
    }

    /// A buffer the extracting thread is done with, for use again.
    func reuse(_ buffer: [UInt8]) {
        guard buffer.capacity <= Self.largestKept, stashBytes + buffer.capacity <= Self.keptBytes else { return }
        stashBytes += buffer.capacity
        stash.append(buffer)
    }

    /// Buffers done with, for use again (landing thread); `buffers` is left empty.
    func handBack(_ buffers: inout [[UInt8]]) {
        guard !buffers.isEmpty else { return }
        lock.withLock {
            for buffer in buffers where buffer.capacity <= Self.largestKept && handedBackBytes + buffer.capacity <= Self.keptBytes {
                handedBackBytes += buffer.capacity
                handedBack.append(buffer)
            }
        }
        buffers.removeAll(keepingCapacity: true)
    }

    /// The bytes kept for use again, in the stash and handed back (for tests).
    var keptByteCount: Int { stashBytes + lock.withLock { handedBackBytes } }
}

/// A file's bytes on their way to the landing thread, which takes them out to write them and
/// then hands the buffer back (``ContentsBuffers``): taken out, they are no longer shared with
/// the work that carried them.
final class HandedOverContents: @unchecked Sendable {
    private var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes, once (landing thread).
    func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}
