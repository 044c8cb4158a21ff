/// One of the two copies being merged, or their common ancestor.
public enum MergeSide: String, Sendable, CaseIterable {
    case local, remote, base
}

/// What the merge did at one place of a document, and why: the lines of `savetool merge`'s
/// output and the entries of its `--report`.
public struct MergeDecision: Sendable {
    /// Where, in the document (through embedded documents, as `get` reads them).
    public var path: JSONPointer
    /// The policy that decided (`counter`, `pickSide` …), or how the value was taken without one:
    /// `changedOnOneSide`, `onOneSideOnly`, `answer`.
    public var policy: String
    /// `nil` where a side has no value (absent, or no base at all).
    public var base: SaveValue?
    public var local: SaveValue?
    public var remote: SaveValue?
    /// `nil` when the value is left out of the result.
    public var result: SaveValue?
    public var why: String
    /// Not settled: no rule, answer or preference decided it, so nothing is written.
    public var isConflict: Bool
    /// The kind whose rules applied, when not the file's own: a document held inside it (the
    /// JSON `gameSave` of a `UserDefaults` plist) is merged by its own kind's, and checked
    /// against its own schema. Empty for such a document that no kind claims.
    public var kind: String?

    public init(
        path: JSONPointer, policy: String, base: SaveValue? = nil, local: SaveValue? = nil, remote: SaveValue? = nil, result: SaveValue?, why: String, isConflict: Bool
    ) {
        (self.path, self.policy, self.base, self.local, self.remote, self.result) = (path, policy, base, local, remote, result)
        (self.why, self.isConflict) = (why, isConflict)
    }
}

/// A place the policies could not decide, as handed to a ``ValueMerger/Resolver``.
public struct MergeConflict: Sendable {
    public var path: JSONPointer
    public var base: SaveValue?
    public var local: SaveValue?
    public var remote: SaveValue?
    /// Why no policy decided, for people: "changed on both sides and the rule is ask".
    public var reason: String
    /// For a group's conflict, how many values a value given must hold: one per member, in the
    /// rule's order.
    public var valueCount: Int?

    public init(path: JSONPointer, base: SaveValue?, local: SaveValue?, remote: SaveValue?, reason: String, valueCount: Int? = nil) {
        (self.path, self.base, self.local, self.remote, self.reason, self.valueCount) = (path, base, local, remote, reason, valueCount)
    }

    /// What is wrong with `value` as this conflict's answer, if anything: a value given for a
    /// group that is not an array of one value per member.
    public func problem(with value: SaveValue) -> String? {
        guard let valueCount, value.arrayValue?.count != valueCount else { return nil }
        return "\(value.typeNameWithArticle)\(value.arrayValue.map { " of \($0.count)" } ?? ""), expected an array of \(valueCount) values, one per member in the rule's order"
    }

    /// A conflict about a whole file (two files no kind reads that differ, or one removed and
    /// changed): settled only by taking a side, never by a value given.
    public var isWholeFile: Bool { path.tokens.isEmpty && base == nil && local == nil && remote == nil }
}

/// How a conflict is settled: one side's value (absent if that side has none), or a value given.
public enum ConflictResolution: Sendable, Equatable {
    case take(MergeSide)
    case value(SaveValue)
}
