import Foundation

/// How many pushes decode, check and merge at once. Pushes run on a pool with a thread for each
/// push in flight, so that their flushes wait on the disk together; decoding is work for the
/// CPU and for memory (a 16 MiB body decodes to several times that), so it takes turns, a few
/// per core, and only the flushes overlap without bound.
final class DecodingTurns: @unchecked Sendable {
    private let semaphore: DispatchSemaphore

    init(_ count: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        semaphore = DispatchSemaphore(value: count)
    }

    /// Runs `body` once fewer than the count are running; the thread waits, holding nothing.
    func inTurn<T>(_ body: () throws -> T) rethrows -> T {
        semaphore.wait()
        defer { semaphore.signal() }
        return try body()
    }
}
