import Foundation
import SaveKit
import SaveStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock of a ``RemoteRepository``: one object per run, `.savetool-lock-<nonce>`, as restic
/// keeps its locks.
///
/// One shared lock name cannot be taken over safely on an object store: two runs that find the
/// same stale lock would both delete it, and the second would delete the first's new lock (S3
/// has no delete-if-unchanged). With a name per run, a stale lock is deleted by its own name,
/// which no live run has. A run writes its lock, then lists the locks: if any other live one is
/// there, it withdraws its own and tries again a little later. Of two runs that start together,
/// each sees the other and neither goes on; of two that do not, the later sees the earlier (S3
/// lists what it has written, strongly consistent since 2020). So at most one run goes on.
///
/// A live run **renews** its lock (rewrites it) every ``renewal`` seconds; a lock the store has
/// not seen renewed for ``staleAfter`` seconds (the store's own clock, from the listing) is from
/// a run that died, as is one whose run, on this machine, is gone: either is deleted, with a
/// warning. A run that finds its own lock gone (taken over while it was stalled) stops at the
/// next ``checkHeld()``, before it writes anything that counts.
final class RemoteLock: @unchecked Sendable {
    static let prefix = ".savetool-lock"

    let storage: any SaveStorage
    let name: String
    private let nonce: String
    private let warn: @Sendable (String) -> Void
    let staleAfter: TimeInterval
    let renewal: TimeInterval

    private let condition = NSCondition()
    private var released = false
    private var lost: String?

    /// Whether an object is a lock: a run's, or the one shared lock of earlier versions.
    static func isLock(_ object: String) -> Bool { object == prefix || object.hasPrefix(prefix + "-") }

    /// Takes the lock, waiting up to `wait` seconds for other runs' locks to go; then `busy`.
    init(storage: any SaveStorage, wait: TimeInterval, staleAfter: TimeInterval, renewal: TimeInterval, warn: @escaping @Sendable (String) -> Void) throws {
        (self.storage, self.warn, self.staleAfter, self.renewal) = (storage, warn, staleAfter, renewal)
        nonce = UUID().uuidString.lowercased()
        name = Self.prefix + "-" + nonce
        let deadline = Date().addingTimeInterval(wait)
        while true {
            try write(exclusively: true)
            let others = try storage.list().filter { Self.isLock($0.name) && $0.name != name }
            var live: [StoredObject] = []
            for other in others {
                if let reason = staleness(of: other) {
                    warn("\(storage.location)/\(other.name): \(reason), taken over")
                    try storage.delete(other.name)
                } else {
                    live.append(other)
                }
            }
            if live.isEmpty { break }
            try storage.delete(name)
            guard Date() < deadline else {
                throw SaveError(.busy, file: storage.location, "another savetool holds the repository's lock (\(live[0].name)), expected it free within \(Int(wait)) s")
            }
            // Apart, so that two runs that keep meeting stop meeting.
            Thread.sleep(forTimeInterval: Double.random(in: 0.2...0.8))
        }
        Thread.detachNewThread { [self] in renewUntilReleased() }
    }

    /// Throws `busy` when this run no longer holds the lock (another run took it over while
    /// this one was stalled past ``staleAfter``): nothing may be marked or deleted then.
    func checkHeld() throws {
        condition.lock()
        let lost = self.lost
        condition.unlock()
        if let lost { throw SaveError(.busy, file: storage.location + "/" + name, "this run lost the repository's lock (\(lost)); nothing more was written, run it again") }
        let held: Bool
        do { held = try holder(storage.read(name))?["nonce"]?.stringValue == nonce } catch let error as SaveError where error.category == .notFound { held = false }
        guard held else {
            throw SaveError(.busy, file: storage.location + "/" + name, "this run lost the repository's lock (another run took it over as stale); nothing more was written, run it again")
        }
    }

    /// Stops renewing and deletes the lock, if it is still this run's.
    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        condition.unlock()
        guard (try? holder(storage.read(name)))??["nonce"]?.stringValue == nonce else { return }
        do { try storage.delete(name) } catch { warn("\(storage.location)/\(name): cannot release the lock: \(error)") }
    }

    // MARK: -

    private func write(exclusively: Bool) throws {
        let holder: SaveValue = [
            "host": .string(ProcessInfo.processInfo.hostName), "pid": .integer(Int64(getpid())), "renewed": .string(RFC3339.format(Date())),
            "nonce": .string(nonce),
        ]
        do {
            try storage.write(try JSONCodec().encode(holder), to: name, ifAbsent: exclusively)
        } catch let error as SaveError where error.category == .conflict {
            // A retried write whose first try went through (its answer lost) finds its own lock.
            guard (try? self.holder(storage.read(name)))??["nonce"]?.stringValue == nonce else { throw error }
        }
    }

    private func holder(_ bytes: [UInt8]) throws -> SaveValue? { try JSONCodec().decode(bytes) }

    /// Why another run's lock is stale, or nil while it is live.
    private func staleness(of lock: StoredObject) -> String? {
        if let modified = lock.modified, Date().timeIntervalSince(modified) > staleAfter {
            return "a lock last renewed at \(RFC3339.format(modified)), more than \(Int(staleAfter)) s ago"
        }
        guard let content = try? holder(storage.read(lock.name)) else { return nil }
        if content["host"]?.stringValue == ProcessInfo.processInfo.hostName, let pid = content["pid"]?.int64Value, pid != Int64(getpid()),
            kill(pid_t(pid), 0) != 0 && errno == ESRCH
        {
            return "the lock of process \(pid) on this machine, which is gone"
        }
        return nil
    }

    /// Rewrites the lock every ``renewal`` seconds while it is held; a lock found gone is not
    /// written again (that would hand it back to a run that lost it) but marks this run as lost.
    private func renewUntilReleased() {
        condition.lock()
        defer { condition.unlock() }
        while !released {
            _ = condition.wait(until: Date().addingTimeInterval(renewal))
            if released || lost != nil { continue }
            condition.unlock()
            var problem: String?
            do {
                if try holder(storage.read(name))?["nonce"]?.stringValue == nonce { try write(exclusively: false) } else { problem = "its lock object changed" }
            } catch let error as SaveError where error.category == .notFound {
                problem = "another run took it over as stale"
            } catch {
                // A store that does not answer now may answer at the next renewal.
            }
            condition.lock()
            if let problem, !released { lost = problem }
        }
    }
}
