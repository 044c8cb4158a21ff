import Foundation

/// A manifest's checked entries, handed to the import that lands them while the rest of the
/// manifest is still being read on a thread of its own.
///
/// Reading a large manifest before landing anything left one core idle for a fifth of an
/// import of many small files (docs/performance.md). The import still promises what it did:
/// an entry lands only once the manifest's reader has checked it, the limits and the free
/// space hold for the whole bundle (entries past the point where their running totals break
/// a limit are never handed over), and every fault of the manifest is reported before any
/// fault found while landing, since nothing is swapped in before the manifest is read whole.
///
/// At most ``batchesInFlight`` batches wait, so memory stays flat however long the manifest.
final class ManifestStream: @unchecked Sendable {
    /// About 16,000 entries: a few MB, and far enough ahead that the reader seldom waits.
    static let batchesInFlight = 64

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var waiting: [[BundleManifest.File]] = []
    private var outcome: Result<CheckedManifest, any Error>?
    private var halted = false
    private var abandoned = false
    // The consumer's alone: the batch being gone through, last entry first (taken without a copy).
    private var current: [BundleManifest.File] = []

    /// Hands over a batch of checked entries, last entry first (reversed in place by the
    /// reader: taken from its end, they are moved out, not copied); waits while
    /// ``batchesInFlight`` are waiting. Nothing is handed over once halted or abandoned.
    func post(reversed batch: [BundleManifest.File]) {
        condition.lock()
        defer { condition.unlock() }
        while waiting.count >= Self.batchesInFlight && !abandoned && !halted { condition.wait() }
        guard !abandoned, !halted else { return }
        waiting.append(batch)
        condition.broadcast()
    }

    /// No entry is handed over any more: a limit is broken by those read so far, and the
    /// manifest's outcome will say which (or what else is wrong with it).
    func halt() {
        condition.lock()
        halted = true
        waiting.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether ``halt()`` was called.
    var isHalted: Bool {
        condition.lock()
        defer { condition.unlock() }
        return halted
    }

    /// The manifest read whole and checked, or what stopped it: the last word of the reader.
    func finish(_ result: Result<CheckedManifest, any Error>) {
        condition.lock()
        outcome = result
        condition.broadcast()
        condition.unlock()
    }

    /// The next entry in the manifest's order; `nil` after the last. Waits for the reader;
    /// throws what stopped it.
    func next() throws -> BundleManifest.File? {
        if let file = current.popLast() { return file }
        condition.lock()
        while waiting.isEmpty && outcome == nil { condition.wait() }
        if case .failure(let error)? = outcome {
            condition.unlock()
            throw error
        }
        guard !waiting.isEmpty else {
            condition.unlock()
            return nil
        }
        current = waiting.removeFirst()
        condition.broadcast()
        condition.unlock()
        return current.popLast()
    }

    /// The landing stopped: entries are no longer wanted, and the reader is not held up.
    func abandon() {
        condition.lock()
        abandoned = true
        waiting.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the reader's last word.
    func result() -> Result<CheckedManifest, any Error> {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return outcome!
    }

    /// The manifest, once read whole and checked, without waiting; `nil` before.
    var manifestIfRead: CheckedManifest? {
        condition.lock()
        defer { condition.unlock() }
        return try? outcome?.get()
    }
}
