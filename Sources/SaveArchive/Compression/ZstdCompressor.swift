import CZstd

/// A zstd stream compressed by libzstd itself, with or without a worker thread of libzstd's
/// own.
///
/// libarchive's zstd filter (3.6) compresses on the calling thread in libzstd's
/// single-threaded streaming mode. With a worker, libzstd cuts the stream into jobs of
/// contiguous input and compresses each apart from the thread that feeds it, as the `zstd`
/// program does by default (and so `tar --zstd`, with larger jobs): on a 179 MB tar of 100,000
/// small saves, a fifth less CPU than the same level single-threaded (docs/performance.md), and
/// a slightly smaller output. The frames are plain zstd, whichever way they were made: every
/// reader of the bundles, libarchive's included, reads them.
///
/// With a worker, the caller's thread only hands input over and writes what comes out; it
/// waits only when the worker is a whole job behind.
final class ZstdCompressor: StreamCompressor {
    private let context: OpaquePointer
    private let output: ArchiveOutput
    private let name: String
    /// Where each call's compressed bytes land before they are written.
    private let outputBuffer: UnsafeMutableRawBufferPointer

    /// Input handed to the worker per job. Larger jobs compress faster (measured against one
    /// thread: 512 KiB jobs saved 4% of the CPU, 2 MiB a fifth, libzstd's default of 8 MiB at
    /// level 3 hardly more), and hold more memory than one thread: 7 MiB more with 2 MiB jobs,
    /// 33 MiB more with the default.
    static let jobSize: Int32 = 2 << 20

    /// Starts a frame on `output` at `level` (libzstd's default, 3, when nil), compressed by
    /// a worker of libzstd's own with `worker`, else by the threads that call it; `name` is
    /// for messages.
    init(output: ArchiveOutput, name: String, level: Int?, worker: Bool) throws(ArchiveError) {
        guard let context = ZSTD_createCCtx() else {
            throw .cannotCreate(archive: name, message: "libzstd could not allocate a compressor")
        }
        self.context = context
        self.output = output
        self.name = name
        outputBuffer = .allocate(byteCount: ZSTD_CStreamOutSize(), alignment: 16)
        if let level {
            // libzstd would take any level and clamp it; libarchive's filter refused one out of
            // range, and so does this. Freed by deinit, which runs for a class whose properties
            // are all set.
            let levels = Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel())
            guard levels.contains(level) else {
                throw .cannotCreate(archive: name, message: "zstd level \(level), expected \(levels.lowerBound) to \(levels.upperBound)")
            }
            let set = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(level))
            if ZSTD_isError(set) != 0 { throw .cannotCreate(archive: name, message: "zstd level \(level): \(Self.reason(set))") }
        }
        // A libzstd built without threads refuses a worker: the caller's thread compresses.
        if worker, ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_nbWorkers, 1)) == 0 {
            _ = ZSTD_CCtx_setParameter(context, ZSTD_c_jobSize, Self.jobSize)
        }
    }

    deinit {
        // Waits for the worker; a frame not ended is simply dropped.
        ZSTD_freeCCtx(context)
        outputBuffer.deallocate()
    }

    /// Compresses `bytes`, writing whatever output is ready; `ending` the frame with them.
    func compress(_ bytes: UnsafeRawBufferPointer, ending: Bool) throws(ArchiveError) {
        var input = ZSTD_inBuffer(src: bytes.baseAddress, size: bytes.count, pos: 0)
        if ending {
            while try step(&input, ZSTD_e_end) != 0 {}
        } else {
            while input.pos < input.size { _ = try step(&input, ZSTD_e_continue) }
        }
    }

    func compress(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        try compress(bytes, ending: false)
    }

    /// Ends the frame and writes the rest of it.
    func finish() throws(ArchiveError) {
        try compress(UnsafeRawBufferPointer(start: nil, count: 0), ending: true)
    }

    /// Nothing to do: what libzstd holds is dropped with it, unwritten.
    func abandon() {}

    /// One call of libzstd, its output written; returns what it says is left to flush.
    private func step(_ input: inout ZSTD_inBuffer, _ directive: ZSTD_EndDirective) throws(ArchiveError) -> Int {
        var compressed = ZSTD_outBuffer(dst: outputBuffer.baseAddress, size: outputBuffer.count, pos: 0)
        let left = ZSTD_compressStream2(context, &compressed, &input, directive)
        guard ZSTD_isError(left) == 0 else { throw .ioFailure(archive: name, message: "zstd: \(Self.reason(left))") }
        if compressed.pos > 0 {
            let bytes = UnsafeRawBufferPointer(start: outputBuffer.baseAddress, count: compressed.pos)
            guard output.write(bytes) == compressed.pos else {
                throw .ioFailure(archive: name, message: output.failure ?? "the write failed")
            }
        }
        return left
    }

    private static func reason(_ code: Int) -> String {
        ZSTD_getErrorName(code).map { String(cString: $0) } ?? "error \(code)"
    }
}
