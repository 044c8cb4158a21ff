import CArchive
import Foundation

/// One tar entry written as two streams of its own, each compressed on its own: the data,
/// compressed as it comes, and the header, which can only be written once the data's size is
/// known. Put before a tar archive's own stream (header, then data, then the archive), the
/// streams read as one archive, since gzip members, zstd frames and xz streams follow one
/// another. This is how a bundle puts its manifest, known last, first, without holding it
/// or compressing it after everything else.
final class TarEntryStream {
    private let pipeline: CompressionPipeline?
    private let output: ArchiveOutput
    private let name: String
    /// The data's bytes so far.
    private(set) var count: Int64 = 0
    private var finished = false
    /// Uncompressed, bytes are gathered here and written a MiB at a time (the compressor's queue
    /// gathers them otherwise): a manifest comes an entry at a time.
    private var gathered: [UInt8] = []

    /// Starts the data's stream on `output`; `name` is for messages.
    init(into output: ArchiveOutput, name: String, compression: ArchiveFormat.Compression, level: Int? = nil) throws(ArchiveError) {
        (self.output, self.name) = (output, name)
        pipeline = try ArchiveWriter.compressor(compression, level: level).map { configure throws(ArchiveError) in
            try CompressionPipeline(output: output, name: name, configure: configure)
        }
    }

    deinit {
        // Not finished: an error stopped the writing, and nothing more should reach the output.
        if !finished { pipeline?.abandon() }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        try send(bytes)
        count += Int64(bytes.count)
    }

    private func send(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if let pipeline {
            guard pipeline.push(bytes) else { throw .ioFailure(archive: name, message: output.failure ?? pipeline.error ?? "the write failed") }
            return
        }
        gathered.append(contentsOf: bytes)
        if gathered.count >= 1 << 20 { try flushGathered() }
    }

    private func flushGathered() throws(ArchiveError) {
        guard !gathered.isEmpty else { return }
        let written = gathered.withUnsafeBytes { output.write($0) }
        guard written == gathered.count else { throw .ioFailure(archive: name, message: output.failure ?? "the write failed") }
        gathered.removeAll(keepingCapacity: true)
    }

    func write(_ bytes: [UInt8]) throws(ArchiveError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(ArchiveError) in try write(raw) } }
        try result.get()
    }

    /// Pads the data to a whole tar record (512 bytes) and ends its stream.
    func finish() throws(ArchiveError) {
        let padding = Int((512 - count % 512) % 512)
        if padding > 0 {
            try write([UInt8](repeating: 0, count: padding))
            count -= Int64(padding)
        }
        finished = true
        try flushGathered()
        do {
            try pipeline?.finish()
        } catch {
            throw .ioFailure(archive: name, message: output.failure ?? pipeline?.error ?? "\(error)")
        }
    }

    /// Writes the header of `info` into `output` as a stream of its own.
    static func writeHeader(_ info: ArchiveEntryInfo, into output: ArchiveOutput, name: String, compression: ArchiveFormat.Compression) throws(ArchiveError) {
        let header = try ArchiveWriter.tarHeader(for: info, archive: name)
        let stream = try TarEntryStream(into: output, name: name, compression: compression)
        try stream.write(header)
        try stream.finish()  // a header is whole records: no padding
    }
}
