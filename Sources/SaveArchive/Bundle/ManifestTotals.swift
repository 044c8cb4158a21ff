import OrderedCollections
import SaveKit

/// What a manifest's header declares of its entries before listing them (`"totals"`), so that
/// an import can check the limits and the free space before the first entry is read, and land
/// entries while the rest of the manifest is still read however little room is left.
///
/// Export writes them; a manifest without them (bundles written before 2026-11-29, or a
/// hand-made layout that puts them after `files`) is imported as before. Declared totals must
/// be the listed ones: entries past what is declared are refused as soon as they are read, and
/// totals that the entries fall short of once all are read too.
struct ManifestTotals: Sendable, Equatable {
    /// Every entry: files, folders and links.
    var entries: Int
    /// Regular files.
    var files: Int
    /// The bytes of those files.
    var bytes: Int64
    /// Of ``bytes``, those of sparse files, whose holes are made rather than written.
    var sparseBytes: Int64

    /// What the files take once written.
    var writtenBytes: Int64 { bytes - sparseBytes }

    init(entries: Int, files: Int, bytes: Int64, sparseBytes: Int64) {
        (self.entries, self.files, self.bytes, self.sparseBytes) = (entries, files, bytes, sparseBytes)
    }

    /// The totals of `summary`'s entries.
    init(_ summary: BundleSummary) {
        self.init(entries: summary.entryCount, files: summary.fileCount, bytes: summary.byteCount, sparseBytes: summary.sparseByteCount)
    }

    /// As the header writes it; `sparseBytes` only where there are some.
    var value: SaveValue {
        var members: OrderedDictionary<String, SaveValue> = [
            "entries": .integer(Int64(entries)), "files": .integer(Int64(files)), "bytes": .integer(bytes),
        ]
        if sparseBytes > 0 { members["sparseBytes"] = .integer(sparseBytes) }
        return .dictionary(members)
    }

    /// The totals of a header's `"totals"` value, or why they cannot be. Members it does not
    /// know are left for later versions to give a meaning.
    static func declared(by value: SaveValue) -> Result<ManifestTotals, Refused> {
        guard case .dictionary(let members) = value else {
            return .failure(Refused(reason: "\"totals\" is \(value.typeNameWithArticle), expected an object of \"entries\", \"files\" and \"bytes\""))
        }
        var counts: [Int64] = []
        for (name, required) in [("entries", true), ("files", true), ("bytes", true), ("sparseBytes", false)] {
            switch members[name] {
            case .integer(let number)? where number >= 0: counts.append(number)
            case nil where !required: counts.append(0)
            case nil: return .failure(Refused(reason: "\"totals\" without \"\(name)\", expected the count of every entry, the files and their bytes"))
            case let other?: return .failure(Refused(reason: "\"totals\" whose \"\(name)\" is \(other.typeNameWithArticle), expected a whole number from 0"))
            }
        }
        let (entries, files, bytes, sparse) = (counts[0], counts[1], counts[2], counts[3])
        guard files <= entries, sparse <= bytes else {
            return .failure(Refused(reason: "\"totals\" that do not add up (\(files) files of \(entries) entries, \(sparse) sparse bytes of \(bytes)), expected no more files than entries and no more sparse bytes than bytes"))
        }
        return .success(ManifestTotals(entries: Int(entries), files: Int(files), bytes: bytes, sparseBytes: sparse))
    }

    struct Refused: Error {
        var reason: String
    }

    /// Why entries read so far, with these running totals, are more than declared; `nil` while
    /// they are not.
    func exceeded(by summary: BundleSummary) -> String? {
        let listed = ManifestTotals(summary)
        let passed: String
        if listed.entries > entries {
            passed = "\(listed.entries) entries listed so far, more than the \(entries)"
        } else if listed.files > files {
            passed = "\(listed.files) files listed so far, more than the \(files)"
        } else if listed.bytes > bytes {
            passed = "\(listed.bytes) bytes of files listed so far, more than the \(bytes)"
        } else if listed.writtenBytes > writtenBytes {
            passed = "\(listed.writtenBytes) bytes outside sparse files listed so far, more than the \(writtenBytes) (\(bytes) bytes, \(sparseBytes) of them in sparse files)"
        } else {
            return nil
        }
        return passed + " its \"totals\" declare, expected the totals of every entry"
    }

    /// Why the whole manifest's totals are not the declared ones; `nil` when they are.
    func mismatch(with summary: BundleSummary) -> String? {
        let listed = ManifestTotals(summary)
        guard listed != self else { return nil }
        return "it lists \(listed.description) where its \"totals\" declare \(description), expected the totals of every entry"
    }

    var description: String {
        "\(entries) entr\(entries == 1 ? "y" : "ies"), \(files) file\(files == 1 ? "" : "s") of \(bytes) bytes" + (sparseBytes > 0 ? ", \(sparseBytes) of them in sparse files" : "")
    }
}
