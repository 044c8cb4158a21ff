import SaveSync

/// Pushes to one slot take turns, waiting here without holding a thread. Each push's merge runs
/// on the small blocking pool; a push that waited for the slot's lock inside the pool would keep
/// a thread from every other slot's requests.
actor SlotTurns {
    /// A slot in use, with the pushes waiting for it in order.
    private var waiting: [SlotAddress: [CheckedContinuation<Void, Never>]] = [:]

    /// Runs `body` when no other push to `address` is running in this process.
    nonisolated func inTurn<T: Sendable>(_ address: SlotAddress, _ body: () async throws -> T) async throws -> T {
        await take(address)
        do {
            let result = try await body()
            await give(address)
            return result
        } catch {
            await give(address)
            throw error
        }
    }

    private func take(_ address: SlotAddress) async {
        guard waiting[address] != nil else {
            waiting[address] = []
            return
        }
        await withCheckedContinuation { waiting[address, default: []].append($0) }
    }

    private func give(_ address: SlotAddress) {
        guard let queue = waiting[address], let next = queue.first else {
            waiting[address] = nil
            return
        }
        waiting[address] = Array(queue.dropFirst())
        next.resume()
    }
}
