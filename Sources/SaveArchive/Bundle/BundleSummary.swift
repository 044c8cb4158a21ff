import Foundation

/// What a bundle holds, in short: its manifest's header and totals, without the entries.
///
/// Exports, imports and verifications return this rather than the whole ``BundleManifest``:
/// a manifest of a million entries is streamed through, never held (read one with
/// ``BundleImporter/manifest(of:)`` when you want its entries).
public struct BundleSummary: Sendable, Equatable {
    public var format: String
    public var createdAt: Date
    public var createdBy: String
    public var label: String?
    public var source: String
    public var sourcePath: String?
    /// Every entry the manifest lists: files, directories and links.
    public var entryCount = 0
    /// Regular files.
    public var fileCount = 0
    /// The bytes of those files.
    public var byteCount: Int64 = 0
    /// Of ``byteCount``, those of sparse files (their holes are made, not written).
    public var sparseByteCount: Int64 = 0
    /// What the files take once written: every byte but those of sparse files.
    public var writtenByteCount: Int64 { byteCount - sparseByteCount }

    public init(format: String = BundleManifest.format, createdAt: Date, createdBy: String, label: String?, source: String, sourcePath: String?) {
        (self.format, self.createdAt, self.createdBy, self.label, self.source, self.sourcePath) = (format, createdAt, createdBy, label, source, sourcePath)
    }

    /// Counts one more entry.
    mutating func add(_ file: BundleManifest.File) {
        entryCount += 1
        if file.type == .file {
            fileCount += 1
            byteCount = byteCount.addingSaturated(file.size)
            if file.sparse { sparseByteCount = sparseByteCount.addingSaturated(file.size) }
        }
    }
}

extension BundleManifest {
    /// The header and totals of this manifest.
    public var summary: BundleSummary {
        var summary = BundleSummary(createdAt: createdAt, createdBy: createdBy, label: label, source: source, sourcePath: sourcePath)
        for file in files { summary.add(file) }
        return summary
    }
}

extension Int64 {
    /// The sum, or `Int64.max` past it: a manifest's sizes are anyone's numbers, and a total
    /// past 2^63 bytes is refused by the limits rather than trapping (a crash, not a message).
    func addingSaturated(_ other: Int64) -> Int64 {
        let (sum, overflowed) = addingReportingOverflow(other)
        return overflowed ? (other < 0 ? .min : .max) : sum
    }
}
