/// How far a long piece of work has come, told as it goes so that a command can draw a
/// progress bar: export, import, backup and verify report one after every entry.
public struct WorkProgress: Sendable, Equatable {
    public enum Phase: String, Sendable, Equatable {
        /// Reading and checksumming the folder (export's first pass; its size is not known yet).
        case checksumming
        /// Writing the bundle.
        case writing
        /// Restoring a bundle's entries.
        case restoring
        /// Reading a bundle through and checking every checksum, writing nothing.
        case verifying
    }

    public var phase: Phase
    public var entries: Int
    public var bytes: Int64
    /// The totals, when the phase knows them (from the manifest, or from export's first pass).
    public var totalEntries: Int?
    public var totalBytes: Int64?

    public init(phase: Phase, entries: Int, bytes: Int64, totalEntries: Int? = nil, totalBytes: Int64? = nil) {
        (self.phase, self.entries, self.bytes, self.totalEntries, self.totalBytes) = (phase, entries, bytes, totalEntries, totalBytes)
    }
}
