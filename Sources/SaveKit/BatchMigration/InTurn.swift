import Foundation

/// Hands the outcomes of files done by several jobs to one consumer, one at a time, in the
/// walk's order, as soon as each file and those before it are done.
///
/// A slow file holds the others back: no job starts a file `jobs` or more files past the first
/// one not yet handed on. So a run that is killed has never done more than one file per job
/// that its consumer (a report, a log) has not seen. The first file not handed on is always in
/// some job's hands, and that job never waits: no deadlock. Once the consumer fails, no file is
/// started any more.
final class InTurn<Item>: @unchecked Sendable {
    private let consumer: (Item) throws -> Void
    private let jobs: Int
    private let turns = NSCondition()
    /// The number of the next item to hand on, and the items done before their turn (`nil`:
    /// not started, after a failure).
    private var next = 0
    private var waiting: [Int: Item?] = [:]
    private var failure: (any Error)?

    init(jobs: Int, consumer: @escaping (Item) throws -> Void) {
        (self.jobs, self.consumer) = (jobs, consumer)
    }

    /// Waits until the `number`th item may be started; `false` once the consumer has failed:
    /// the item is not to be started, and is added as `nil`.
    func waitForTurn(_ number: Int) -> Bool {
        turns.lock()
        defer { turns.unlock() }
        while number >= next + jobs, failure == nil { turns.wait() }
        return failure == nil
    }

    /// The `number`th item, done, or `nil` when it was not started.
    func add(_ item: Item?, at number: Int) {
        turns.lock()
        defer { turns.unlock() }
        waiting[number] = .some(item)
        while let ready = waiting.removeValue(forKey: next) {
            next += 1
            guard failure == nil, let ready else { continue }
            do { try consumer(ready) } catch { failure = error }
        }
        turns.broadcast()
    }

    /// The consumer's first failure, if any.
    func check() throws {
        turns.lock()
        defer { turns.unlock() }
        if let failure { throw failure }
    }
}
