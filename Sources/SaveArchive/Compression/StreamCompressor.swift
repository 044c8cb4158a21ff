/// Compresses one stream into an ``ArchiveOutput``: a libarchive filter (``LibarchiveFilter``:
/// gzip, xz) or libzstd itself (``ZstdCompressor``). A ``CompressionPipeline`` runs one on a
/// thread of its own.
protocol StreamCompressor: AnyObject {
    /// Compresses `bytes`, writing whatever output is ready.
    func compress(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError)
    /// Ends the stream, writing the rest of it.
    func finish() throws(ArchiveError)
    /// Stops without writing anything more, not even what is buffered or the stream's end:
    /// the archive failed, and no more of it should reach the output.
    func abandon()
}
