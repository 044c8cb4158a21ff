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
/// not seen renewed for ``staleAfter`` seconds is from a run that died, as is one whose run, on
/// this machine, is gone: either is deleted, with a warning. Ages are read on the store's clock:
/// another lock's last modification against this run's own, just written, in the same listing.
/// Before anything it writes counts, a run calls ``checkHeld()``: its own lock must be there and
/// no other live one, or it stops (a run stalled past ``staleAfter`` and taken over).
final class RemoteLock: @unchecked Sendable {
    static let prefix = ".savetool-lock"

    let storage: any SaveStorage
    let name: String
    private let nonce: String
    private let warn: @Sendable (String) -> Void
    let staleAfter: TimeInterval
    let renewal: TimeInterval

    /// Guards `released`, `renewing` and `lost`, which the renewing thread shares.
    private let condition = NSCondition()
    private var released = false
    private var renewing = false
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
            let live: [StoredObject]
            do {
                live = try otherLiveLocks(takingOverStale: true)
                if !live.isEmpty { try storage.delete(name) }
            } catch {
                try? storage.delete(name)  // never left behind to block others for the stale time
                throw error
            }
            if live.isEmpty { break }
            guard Date() < deadline else {
                throw SaveError(.busy, file: storage.location, "another savetool holds the repository's lock (\(live[0].name)), expected it free within \(Int(wait)) s")
            }
            // Apart, so that two runs that keep meeting stop meeting.
            Thread.sleep(forTimeInterval: Double.random(in: 0.2...0.8))
        }
        Thread.detachNewThread { [self] in renewUntilReleased() }
    }

    /// Throws `busy` unless this run still holds the lock: its own lock object is there, and no
    /// other live one (another run took over while this one was stalled past ``staleAfter``).
    /// Nothing may be marked or deleted then.
    func checkHeld() throws {
        condition.lock()
        let lost = self.lost
        condition.unlock()
        let problem: String?
        if let lost {
            problem = lost
        } else if try !isMine() {
            problem = "another run took it over as stale"
        } else if let other = try otherLiveLocks(takingOverStale: false).first {
            problem = "\(other.name) is held too"
        } else {
            problem = nil
        }
        if let problem {
            throw SaveError(.busy, file: storage.location + "/" + name, "this run lost the repository's lock (\(problem)); nothing more was written, run it again")
        }
    }

    /// Stops renewing (waiting for a renewal under way) and deletes the lock, if still this run's.
    func release() {
        condition.lock()
        released = true
        condition.broadcast()
        while renewing { condition.wait() }
        condition.unlock()
        guard (try? isMine()) == true else { return }
        do { try storage.delete(name) } catch { warn("\(storage.location)/\(name): cannot release the lock: \(error)") }
    }

    // MARK: -

    private func write(exclusively: Bool) throws {
        let holder: SaveValue = [
            "host": .string(ProcessInfo.processInfo.hostName), "pid": .integer(Int64(getpid())), "renewed": .string(RFC3339.format(Date())),
            "nonce": .string(nonce),
        ]
        try storage.write(try JSONCodec().encode(holder), to: name, ifAbsent: exclusively)
    }

    /// Whether the lock object holds this run's nonce; false when it is gone.
    private func isMine() throws -> Bool {
        do { return try Self.holder(storage.read(name))["nonce"]?.stringValue == nonce } catch let error as SaveError where error.category == .notFound { return false }
    }

    private static func holder(_ bytes: [UInt8]) throws -> SaveValue { try JSONCodec().decode(bytes) }

    /// The other runs' locks that are live; stale ones are deleted, with a warning, when asked.
    private func otherLiveLocks(takingOverStale: Bool) throws -> [StoredObject] {
        let locks = try storage.list().filter { Self.isLock($0.name) }
        // The store's clock: this run's lock was written a moment ago.
        let now = locks.first { $0.name == name }?.modified ?? Date()
        var live: [StoredObject] = []
        for other in locks where other.name != name {
            guard let reason = staleness(of: other, now: now) else {
                live.append(other)
                continue
            }
            guard takingOverStale else { continue }
            warn("\(storage.location)/\(other.name): \(reason), taken over")
            try storage.delete(other.name)
        }
        return live
    }

    /// Why another run's lock is stale, or nil while it is live.
    private func staleness(of lock: StoredObject, now: Date) -> String? {
        let content: SaveValue? = try? Self.holder(storage.read(lock.name))
        // A store that gives no time: the lock's own word for when it was last renewed.
        let renewed = lock.modified ?? content?["renewed"]?.stringValue.flatMap(RFC3339.parse)
        if let renewed, now.timeIntervalSince(renewed) > staleAfter {
            return "a lock last renewed at \(RFC3339.format(renewed)), more than \(Int(staleAfter)) s before this run's"
        }
        if let content, content["host"]?.stringValue == ProcessInfo.processInfo.hostName, let pid = content["pid"]?.int64Value, pid != Int64(getpid()),
            kill(pid_t(pid), 0) != 0 && errno == ESRCH
        {
            return "the lock of process \(pid) on this machine, which is gone"
        }
        return nil
    }

    /// Rewrites the lock every ``renewal`` seconds while it is held; a lock found gone (or
    /// another run's) is not written again — that would hand it back to a run that lost it —
    /// and marks this run as lost.
    private func renewUntilReleased() {
        condition.lock()
        defer { condition.unlock() }
        while !released {
            _ = condition.wait(until: Date().addingTimeInterval(renewal))
            if released || lost != nil { continue }
            renewing = true
            condition.unlock()
            var problem: String?
            do {
                if try isMine() { try write(exclusively: false) } else { problem = "another run took it over as stale" }
            } catch {
                // A store that does not answer now may answer at the next renewal.
            }
            condition.lock()
            renewing = false
            condition.broadcast()
            if let problem, !released { lost = problem }
        }
    }
}
