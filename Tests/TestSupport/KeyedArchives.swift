import SaveKit

/// Keyed archives for the tests.
public enum KeyedArchives {
    /// The same archive with its `$objects` in another order (every entry but `$null` reversed)
    /// and every uid renumbered to match: what another archiver could write for the same state.
    public static func reordered(_ plist: SaveValue) -> SaveValue {
        guard case .dictionary(var fields) = plist, let objects = fields["$objects"]?.arrayValue, let top = fields["$top"] else { return plist }
        let order = [0] + Array(objects.indices.dropFirst().reversed())
        var renumbered = Array(repeating: 0, count: objects.count)
        for (position, uid) in order.enumerated() { renumbered[uid] = position }
        func renumber(_ value: SaveValue) -> SaveValue {
            switch value {
            case .uid(let uid): uid < UInt64(objects.count) ? .uid(UInt64(renumbered[Int(uid)])) : value
            case .array(let items): .array(items.map(renumber))
            case .dictionary(let entries): .dictionary(entries.mapValues(renumber))
            default: value
            }
        }
        fields["$objects"] = .array(order.map { renumber(objects[$0]) })
        fields["$top"] = renumber(top)
        return .dictionary(fields)
    }
}
