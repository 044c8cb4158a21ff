import SaveKit

extension MergeDecision {
    /// A conflict as the sync API gives it (a 409's `conflicts`, and `savetool sync --json`):
    /// its JSON Pointer (`""` for the whole document), why, and the three values — the base's,
    /// the head's on the server and the one pushed — each where there is one.
    public var syncConflict: SaveValue {
        var fields: [(String, SaveValue)] = [("pointer", .string(path.description)), ("why", .string(why))]
        if let base { fields.append(("base", base)) }
        if let remote { fields.append(("head", remote)) }
        if let local { fields.append(("pushed", local)) }
        return .dictionary(.init(uniqueKeysWithValues: fields))
    }
}
