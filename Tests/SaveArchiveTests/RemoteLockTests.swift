import Foundation
import SaveKit
import SaveStorage
import TestSupport
import Testing

@testable import SaveArchive

#if canImport(Glibc)
import Glibc
#endif

/// The remote repository's lock, on a local folder (where a lock's age can be set): stale and
/// orphaned locks are taken over, live ones are waited for, a held lock is renewed, a lost one
/// stops its run, and of many runs at once one holds it at a time.
@Suite("remote repository lock")
struct RemoteLockTests {
    final class Warnings: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    static func folder() throws -> (storage: LocalFolderStorage, root: URL) {
        let root = try Processes.temporaryDirectory("remote-lock")
        return (LocalFolderStorage(directory: root.path), root)
    }

    static func take(_ storage: any SaveStorage, wait: TimeInterval = 0.5, renewal: TimeInterval = 60, warnings: Warnings = Warnings()) throws -> RemoteLock {
        try RemoteLock(storage: storage, wait: wait, staleAfter: 30 * 60, renewal: renewal, warn: { warnings.add($0) })
    }

    static func holder(host: String, pid: Int32) -> [UInt8] {
        Array(#"{"host": "\#(host)", "pid": \#(pid), "renewed": "2026-11-23T10:00:00Z", "nonce": "other"}"#.utf8)
    }

    @Test func aLockNotRenewedForTheStaleTimeIsTakenOver() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        try storage.write(Self.holder(host: "qa-mac-7", pid: 4242), to: ".savetool-lock-old", ifAbsent: true)
        var times = [timespec(tv_sec: time(nil) - 7_200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7_200, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root.path + "/.savetool-lock-old", &times, 0) == 0)
        let warnings = Warnings()
        let lock = try Self.take(storage, warnings: warnings)
        #expect(try storage.list().map(\.name) == [lock.name])
        #expect(warnings.all.count == 1 && warnings.all[0].contains(".savetool-lock-old: a lock last renewed at"), "\(warnings.all)")
        lock.release()
        #expect(try storage.list().isEmpty)
    }

    @Test func theLockOfARunOnThisMachineThatIsGoneIsTakenOver() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        try storage.write(Self.holder(host: ProcessInfo.processInfo.hostName, pid: gone.processIdentifier), to: ".savetool-lock", ifAbsent: true)
        let warnings = Warnings()
        let lock = try Self.take(storage, warnings: warnings)
        #expect(warnings.all.contains { $0.contains(".savetool-lock: the lock of process \(gone.processIdentifier) on this machine, which is gone") }, "\(warnings.all)")
        lock.release()
    }

    @Test func aLiveLockIsWaitedForThenBusy() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        try storage.write(Self.holder(host: "qa-mac-7", pid: 4242), to: ".savetool-lock-other", ifAbsent: true)
        let started = Date()
        #expect { try Self.take(storage, wait: 0.6) } throws: { error in
            guard let error = error as? SaveError else { return false }
            return error.category == .busy && error.message.contains("another savetool holds the repository's lock (.savetool-lock-other)")
        }
        #expect(Date().timeIntervalSince(started) >= 0.6)
        #expect(try storage.list().map(\.name) == [".savetool-lock-other"], "the waiting run withdrew its own lock")
    }

    @Test func aHeldLockIsRenewedAndALostOneStopsItsRun() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        // Renewed every 2 s: the lock is deleted just after a renewal was seen, far from the next.
        let lock = try Self.take(storage, renewal: 2)
        func exists() -> Bool { access(root.path + "/" + lock.name, F_OK) == 0 }
        try lock.checkHeld()
        // Rewritten while held: its `renewed` time (to the fraction of a second) moves on.
        let first = try storage.read(lock.name)
        let deadline = Date().addingTimeInterval(10)
        while try storage.read(lock.name) == first, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        // Taken over while this run was stalled (deleted just after a renewal, as another run
        // would): the run stops, and the lock is not written back.
        try storage.delete(lock.name)
        #expect(Date() < deadline, "renewed while held")
        #expect { try lock.checkHeld() } throws: { ($0 as? SaveError)?.category == .busy }
        Thread.sleep(forTimeInterval: 2.5)
        #expect(!exists(), "a lost lock is not renewed back into existence")
        #expect { try lock.checkHeld() } throws: { ($0 as? SaveError)?.message.contains("lost the repository's lock") == true }
        lock.release()
    }

    /// A second live lock appearing beside this run's (another run that took this one's over
    /// and went on) stops this run before it writes anything that counts.
    @Test func anotherLiveLockStopsTheRun() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let lock = try Self.take(storage)
        try lock.checkHeld()
        try storage.write(Self.holder(host: "qa-mac-7", pid: 4242), to: ".savetool-lock-intruder", ifAbsent: true)
        #expect { try lock.checkHeld() } throws: { ($0 as? SaveError)?.message.contains(".savetool-lock-intruder is held too") == true }
        lock.release()
        #expect(try storage.list().map(\.name) == [".savetool-lock-intruder"], "only this run's own lock is released")
    }

    /// Six runs at once, each holding the lock for a moment: never two at a time, and all get it.
    @Test func manyRunsAtOnceHoldItOneAtATime() throws {
        let (storage, root) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var holding = 0, most = 0, done = 0
        }
        let tally = Tally()
        let group = DispatchGroup()
        for _ in 0..<6 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                run()
            }
        }
        group.wait()
        @Sendable func run() {
            guard let lock = try? Self.take(storage, wait: 60) else { return }
            tally.lock.withLock {
                tally.holding += 1
                tally.most = max(tally.most, tally.holding)
            }
            Thread.sleep(forTimeInterval: 0.05)
            tally.lock.withLock { tally.holding -= 1; tally.done += 1 }
            lock.release()
        }
        #expect(tally.most == 1)
        #expect(tally.done == 6)
        #expect(try storage.list().isEmpty)
    }
}
