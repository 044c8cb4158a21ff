import Foundation

/// One tar entry written as two streams of its own, each compressed on its own: the data,
/// compressed as it comes, and the header, which can only be written once the data's size is
/// known. Put before a tar archive's own stream (header, then data, then the archive), the
/// streams read as one archive, since gzip members, zstd frames and xz streams follow one
/// another. This is how a bundle puts its manifest, known last, first, without holding it
/// or compressing it after everything else.
final class TarEntryStream {
    /// Where the stream is compressed: on a thread of its own (``CompressionPipeline``), by
    /// libzstd's own worker fed from this thread (``ZstdCompressor``), or not at all.
    private enum Compressor {
        case uncompressed
        case zstdWorker(ZstdCompressor)
        case threaded(CompressionPipeline)
    }

    private let compressor: Compressor
    private let output: ArchiveOutput
    private let name: String
    /// The data's bytes so far.
    private(set) var count: Int64 = 0
    private var finished = false
    /// Uncompressed, or for libzstd's worker, bytes are gathered here and handed on a MiB at
    /// a time (the thread's queue gathers them otherwise): a tar stream comes a header or a
    /// small file at a time, a manifest an entry at a time.
    private var gathered: [UInt8] = []
    private static let gatheredSize = 1 << 20

    /// Starts the data's stream on `output`; `name` is for messages. A zstd stream is
    /// compressed by a worker of libzstd's with `zstdWorker`, else single-threaded on a thread
    /// of its own, as the gzip and xz filters are. The two give different bytes. A bundle's
    /// manifest goes without one: in one pass it is compressed beside the files, where two
    /// workers' buffers would be held at once, and in two passes it must come out the same.
    init(into output: ArchiveOutput, name: String, compression: ArchiveFormat.Compression, level: Int? = nil, zstdWorker: Bool = true) throws(ArchiveError) {
        (self.output, self.name) = (output, name)
        switch compression {
        case .none:
            compressor = .uncompressed
        case .zstd where zstdWorker:
            compressor = .zstdWorker(try ZstdCompressor(output: output, name: name, level: level, worker: true))
        case .zstd:
            compressor = .threaded(CompressionPipeline(compressor: try ZstdCompressor(output: output, name: name, level: level, worker: false)))
        case .gzip:
            compressor = .threaded(CompressionPipeline(compressor: try LibarchiveFilter(output: output, name: name, filter: .gzip, level: level)))
        case .xz:
            compressor = .threaded(CompressionPipeline(compressor: try LibarchiveFilter(output: output, name: name, filter: .xz, level: level)))
        }
    }

    deinit {
        // Not finished: an error stopped the writing, and nothing more should reach the output
        // (a zstd frame not ended is dropped with its compressor).
        if !finished, case .threaded(let pipeline) = compressor { pipeline.abandon() }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        try send(bytes)
        count += Int64(bytes.count)
    }

    private func send(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if case .threaded(let pipeline) = compressor {
            guard pipeline.push(bytes) else { throw .ioFailure(archive: name, message: output.failure ?? pipeline.error ?? "the write failed") }
            return
        }
        gathered.append(contentsOf: bytes)
        if gathered.count >= Self.gatheredSize { try flushGathered(ending: false) }
    }

    /// Hands on what is gathered; `ending` the stream with it. A zstd stream that ends on its
    /// first call with at most 512 KiB (a header, a small tar) is compressed on this thread:
    /// libzstd starts no worker for so little.
    private func flushGathered(ending: Bool) throws(ArchiveError) {
        switch compressor {
        case .zstdWorker(let zstd):
            let result = gathered.withUnsafeBytes { bytes in Result { () throws(ArchiveError) in try zstd.compress(bytes, ending: ending) } }
            try result.get()
        default:
            guard !gathered.isEmpty else { return }
            let written = gathered.withUnsafeBytes { output.write($0) }
            guard written == gathered.count else { throw .ioFailure(archive: name, message: output.failure ?? "the write failed") }
        }
        gathered.removeAll(keepingCapacity: true)
    }

    /// Writes `count` zero bytes (a tar entry's padding, the archive's end): no array made for
    /// each.
    func writeZeros(_ count: Int) throws(ArchiveError) {
        var left = count
        while left > 0 {
            let part = Swift.min(left, Self.zeros.count)
            let result = Self.zeros.withUnsafeBytes { zeros in Result { () throws(ArchiveError) in try write(UnsafeRawBufferPointer(rebasing: zeros[..<part])) } }
            try result.get()
            left -= part
        }
    }

    private static let zeros = [UInt8](repeating: 0, count: 2 * TarHeader.blockSize)

    func write(_ bytes: [UInt8]) throws(ArchiveError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(ArchiveError) in try write(raw) } }
        try result.get()
    }

    /// Pads the data to a whole tar record (512 bytes) and ends its stream; `preceding` bytes
    /// of the same entry's data went in a stream before this one (``writeHeader(_:followedBy:into:name:compression:)``).
    func finish(after preceding: Int = 0) throws(ArchiveError) {
        let padding = Int((512 - (Int64(preceding) + count) % 512) % 512)
        if padding > 0 {
            try writeZeros(padding)
            count -= Int64(padding)
        }
        try end()
    }

    /// Ends the stream as it is, unpadded.
    private func end() throws(ArchiveError) {
        finished = true
        try flushGathered(ending: true)
        if case .threaded(let pipeline) = compressor {
            do {
                try pipeline.finish()
            } catch {
                throw .ioFailure(archive: name, message: output.failure ?? pipeline.error ?? "\(error)")
            }
        }
    }

    /// Writes the header of `info`, and the first bytes of its data, into `output` as a
    /// stream of its own: the rest of the data follows in the next stream, which pads the
    /// whole (``finish(after:)``).
    static func writeHeader(
        _ info: ArchiveEntryInfo, followedBy data: [UInt8] = [], into output: ArchiveOutput, name: String, compression: ArchiveFormat.Compression
    ) throws(ArchiveError) {
        let header = try ArchiveWriter.tarHeader(for: info, archive: name)
        let stream = try TarEntryStream(into: output, name: name, compression: compression)
        try stream.write(header)
        try stream.write(data)
        try stream.end()
    }
}
