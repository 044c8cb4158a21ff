import DequeModule
import Foundation
import SaveSync

/// Versions read or written lately, whole. A push reads the slot's head and its own base, and
/// both were usually seen a moment ago; on an object store each read is a request. A version
/// never changes once written, so a copy here is never stale (one thinned away since may still
/// be answered from here, with the bytes it had, until it ages out).
final class RecentVersions: @unchecked Sendable {
    struct Key: Hashable {
        var address: SlotAddress
        var version: Int
    }

    /// The bytes kept at most; the oldest go first.
    let budget: Int
    private let lock = NSLock()
    private var versions: [Key: SlotStore.Stored] = [:]
    private var order: Deque<Key> = []
    private var held = 0

    init(budget: Int) { self.budget = budget }

    subscript(address: SlotAddress, version: Int) -> SlotStore.Stored? {
        lock.withLock { versions[Key(address: address, version: version)] }
    }

    /// Drops versions this process thinned away (another process's thinning is seen when they age out).
    func forget(_ numbers: some Sequence<Int>, of address: SlotAddress) {
        lock.withLock {
            for number in numbers {
                held -= versions.removeValue(forKey: Key(address: address, version: number))?.bytes.count ?? 0
            }
        }
    }

    func keep(_ stored: SlotStore.Stored, of address: SlotAddress) {
        let key = Key(address: address, version: stored.record.version)
        let size = stored.bytes.count
        guard size <= budget / 4 else { return }
        lock.withLock {
            guard versions.updateValue(stored, forKey: key) == nil else { return }
            order.append(key)
            held += size
            // The count is bounded too: forgotten versions leave their keys in `order`.
            while held > budget || order.count > 4096, let oldest = order.popFirst() {
                held -= versions.removeValue(forKey: oldest)?.bytes.count ?? 0
            }
        }
    }
}
