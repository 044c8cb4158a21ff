import Foundation

/// Byte buffers for the files an import reads whole, used again rather than allocated for each
/// file. Each was allocated on the extracting thread and freed on the landing one, through the
/// one malloc arena that a bundle's threads share (``BundleImporter``'s extraction): `malloc`,
/// `free` and the arena's consolidation were a sixth of the extracting thread's samples.
///
/// The extracting thread takes buffers from a stash of its own, refilled from those handed
/// back when it runs out; the landing thread hands back a batch's buffers at once. So the lock
/// is taken once a batch on each side, not for every file.
final class ContentsBuffers: @unchecked Sendable {
    /// Larger buffers are left to malloc, and at most this many bytes are kept for use again.
    static let largestKept = 64 << 10, keptBytes = 4 << 20
    private let lock = NSLock()
    private var handedBack: [[UInt8]] = []
    private var handedBackBytes = 0
    /// The extracting thread's own.
    private var stash: [[UInt8]] = []

    /// An empty buffer with room for `capacity` bytes (extracting thread).
    func take(capacity: Int) -> [UInt8] {
        if capacity <= Self.largestKept {
            if stash.isEmpty {
                lock.withLock {
                    swap(&stash, &handedBack)
                    handedBackBytes = 0
                }
            }
            if var buffer = stash.popLast() {
                buffer.removeAll(keepingCapacity: true)
                buffer.reserveCapacity(capacity)
                return buffer
            }
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        return buffer
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
