import Foundation

extension Array where Element: Sendable {
    /// `map` on up to `jobs` threads, results in the items' order; the first error thrown stops
    /// the remaining items of every thread and is rethrown.
    ///
    /// Batch work (migration, export's checksums, merging folders) is a few hundred independent
    /// files at a time: `DispatchQueue.concurrentPerform` with one loop per thread keeps it
    /// simple, with no task per item. Each thread takes the next item not yet taken, so a thread
    /// that meets the large files does not leave the others idle at the end of a batch.
    public func parallelMap<Result: Sendable>(jobs: Int, _ transform: @Sendable (Element) throws -> Result) throws -> [Result] {
        let results = ParallelResults<Result>(count: count)
        let workers = Swift.max(1, Swift.min(jobs, count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let next = results.lock.withLock { () -> Int? in
                    guard results.failure == nil, results.taken < count else { return nil }
                    defer { results.taken += 1 }
                    return results.taken
                }
                guard let index = next else { return }
                do {
                    let value = try transform(self[index])
                    results.lock.withLock { results.values[index] = value }
                } catch {
                    results.lock.withLock { if results.failure == nil { results.failure = error } }
                    return
                }
            }
        }
        if let failure = results.failure { throw failure }
        return results.values.map { $0! }
    }
}

/// The results of a parallel map, each written once, under the lock, by the thread that computed it.
private final class ParallelResults<Result>: @unchecked Sendable {
    var values: [Result?]
    var failure: (any Error)?
    /// How many items threads have taken so far.
    var taken = 0
    let lock = NSLock()
    init(count: Int) { values = Array(repeating: nil, count: count) }
}
