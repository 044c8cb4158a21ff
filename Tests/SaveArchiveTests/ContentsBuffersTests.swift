@testable import SaveArchive
import Testing

/// Files' byte buffers go round between the extracting and landing threads of an import
/// (``ContentsBuffers``): what comes back is empty and large enough, and what is kept is bounded.
@Suite("contents buffers")
struct ContentsBuffersTests {
    @Test func buffersComeBackEmptyWithRoomAndWhatIsKeptIsBounded() {
        let buffers = ContentsBuffers()
        var first = buffers.take(capacity: 2048)
        #expect(first.isEmpty && first.capacity >= 2048)
        first.append(contentsOf: [UInt8](repeating: 7, count: 2048))
        let storage = first.withUnsafeBufferPointer { $0.baseAddress }
        var done = [first]
        first = []
        buffers.handBack(&done)
        #expect(done.isEmpty)
        // The same storage, emptied, and grown when more is asked.
        let again = buffers.take(capacity: 1000)
        #expect(again.isEmpty && again.withUnsafeBufferPointer { $0.baseAddress } == storage)
        buffers.reuse(again)
        let larger = buffers.take(capacity: 40_000)
        #expect(larger.isEmpty && larger.capacity >= 40_000)

        // Past the largest size kept, and past the bytes kept on either side, buffers are let go.
        var many = (0..<200).map { _ in [UInt8](repeating: 1, count: 32 << 10) }
        many.append([UInt8](repeating: 1, count: ContentsBuffers.largestKept + 1))
        buffers.handBack(&many)
        #expect(buffers.keptByteCount <= ContentsBuffers.keptBytes)
        for _ in 0..<200 { buffers.reuse([UInt8](repeating: 1, count: 32 << 10)) }
        #expect(buffers.keptByteCount <= 2 * ContentsBuffers.keptBytes)
        #expect(buffers.keptByteCount > ContentsBuffers.keptBytes / 2)
        for _ in 0..<300 { #expect(buffers.take(capacity: 100).isEmpty) }
        #expect(buffers.keptByteCount == 0)
    }
}
