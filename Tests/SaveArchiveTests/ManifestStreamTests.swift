import Foundation
@testable import SaveArchive
import Testing

/// The hand-over of checked manifest entries from the thread that reads the manifest to the
/// import that lands them (docs/bundles.md, step 4).
@Suite("manifest stream")
struct ManifestStreamTests {
    struct Fault: Error, Equatable { var name: String }

    static func batch(_ range: Range<Int>) -> [BundleManifest.File] {
        range.map { BundleManifest.File(path: String(format: "f%05d", $0), mode: 0o644, modified: Timestamp(seconds: Int64($0))) }.reversed()
    }

    static func manifest(entries: Int) -> CheckedManifest {
        var summary = BundleSummary(createdAt: Date(timeIntervalSince1970: 0), createdBy: "test", label: nil, source: "x", sourcePath: nil)
        summary.entryCount = entries
        return CheckedManifest(summary: summary, formatTwo: true, entries: ManifestEntries(held: []))
    }

    /// More batches than may wait: the reader waits for the import, and every entry comes once,
    /// in order, then the end.
    @Test func entriesComeOnceInOrderWhateverTheReadersPace() throws {
        let stream = ManifestStream()
        let batches = ManifestStream.batchesInFlight * 3
        Thread.detachNewThread {
            for index in 0..<batches { stream.post(reversed: Self.batch(index * 10..<index * 10 + 10)) }
            stream.finish(.success(Self.manifest(entries: batches * 10)))
        }
        var paths: [String] = []
        while let file = try stream.next() { paths.append(file.path) }
        #expect(paths == (0..<batches * 10).map { String(format: "f%05d", $0) })
        #expect(try stream.result().get().summary.entryCount == batches * 10)
        #expect(stream.manifestIfRead != nil)
    }

    /// Halted (a limit broken by the running totals), nothing more is handed over, and the
    /// import learns what the reader's last word is, not an early end.
    @Test func aHaltedStreamEndsInTheReadersFault() throws {
        let stream = ManifestStream()
        stream.post(reversed: Self.batch(0..<3))
        stream.halt()
        stream.post(reversed: Self.batch(3..<6))
        #expect(stream.isHalted)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            stream.finish(.failure(Fault(name: "limit")))
        }
        #expect(throws: Fault(name: "limit")) { while try stream.next() != nil {} }
    }

    /// A fault of the reader reaches the import at its next entry, even with entries waiting.
    @Test func aFaultIsToldAtTheNextEntry() throws {
        let stream = ManifestStream()
        stream.post(reversed: Self.batch(0..<3))
        #expect(try stream.next()?.path == "f00000")
        stream.post(reversed: Self.batch(3..<6))
        stream.finish(.failure(Fault(name: "entry 9")))
        // The batch taken already is gone through; the one waiting is not.
        #expect(try stream.next()?.path == "f00001")
        #expect(try stream.next()?.path == "f00002")
        #expect(throws: Fault(name: "entry 9")) { _ = try stream.next() }
        #expect(stream.manifestIfRead == nil)
    }

    /// Abandoned (the landing failed), a reader waiting for room goes on, and so does every
    /// later hand-over: the reader is never held up by an import that stopped.
    @Test func anAbandonedStreamNeverHoldsTheReaderUp() throws {
        let stream = ManifestStream()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for index in 0..<(ManifestStream.batchesInFlight * 2) { stream.post(reversed: Self.batch(index..<index + 1)) }
            stream.finish(.success(Self.manifest(entries: 0)))
            done.signal()
        }
        Thread.sleep(forTimeInterval: 0.05)
        #expect(done.wait(timeout: .now()) == .timedOut, "the reader went past a full stream")
        stream.abandon()
        #expect(done.wait(timeout: .now() + 10) == .success, "the reader is still held up")
        #expect(try stream.result().get().summary.entryCount == 0)
    }
}
