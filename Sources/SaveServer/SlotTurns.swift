import Foundation
import SaveSync

/// Pushes to one slot take turns. A push whose slot is free takes its turn on the thread that
/// checked its body and stores it there at once; one that finds the slot in use waits here
/// without holding a thread: a push that waited for the slot inside the pool would keep a
/// thread from every other slot's requests.
final class SlotTurns: @unchecked Sendable {
    private let lock = NSLock()
    /// A slot in use, with the pushes waiting for it in order.
    private var waiting: [SlotAddress: [CheckedContinuation<Void, Never>]] = [:]

    /// Takes the slot's turn if no other push in this process holds it. The caller gives it
    /// back with ``give(_:)``.
    func tryTake(_ address: SlotAddress) -> Bool {
        lock.withLock {
            guard waiting[address] == nil else { return false }
            waiting[address] = []
            return true
        }
    }

    /// Runs `body` when no other push to `address` is running in this process.
    func inTurn<T: Sendable>(_ address: SlotAddress, _ body: () async throws -> T) async throws -> T {
        await take(address)
        defer { give(address) }
        return try await body()
    }

    /// Hands the turn to the next push waiting for the slot, or frees it.
    func give(_ address: SlotAddress) {
        let next: CheckedContinuation<Void, Never>? = lock.withLock {
            guard var queue = waiting[address], !queue.isEmpty else {
                waiting[address] = nil
                return nil
            }
            let next = queue.removeFirst()
            waiting[address] = queue
            return next
        }
        next?.resume()
    }

    private func take(_ address: SlotAddress) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free: Bool = lock.withLock {
                guard waiting[address] != nil else {
                    waiting[address] = []
                    return true
                }
                waiting[address]!.append(continuation)
                return false
            }
            if free { continuation.resume() }
        }
    }
}
