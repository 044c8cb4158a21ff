/// A JSON Pointer whose `*` tokens match any key or index (formats.md): `/levelProgress/*/stars`.
public struct PointerPattern: Sendable, Hashable, CustomStringConvertible {
    public var tokens: [String]

    public init(parsing text: String) throws(PointerError) {
        tokens = try JSONPointer(parsing: text).tokens
    }

    public init(tokens: [String]) { self.tokens = tokens }

    public func matches(_ pointer: JSONPointer) -> Bool {
        guard pointer.tokens.count == tokens.count else { return false }
        for index in tokens.indices where tokens[index] != "*" && tokens[index] != pointer.tokens[index] { return false }
        return true
    }

    /// Whether some pointer matches both patterns (`/players/*/level` and `/players/0/level`).
    public func overlaps(_ other: PointerPattern) -> Bool {
        tokens.count == other.tokens.count && zip(tokens, other.tokens).allSatisfy { $0 == $1 || $0 == "*" || $1 == "*" }
    }

    /// Orders rules by how exactly they name a place: deeper first, then fewer wildcards, then
    /// literal tokens before `*` from the left.
    func isMoreSpecific(than other: PointerPattern) -> Bool {
        if tokens.count != other.tokens.count { return tokens.count > other.tokens.count }
        let wildcards = tokens.filter { $0 == "*" }.count, otherWildcards = other.tokens.filter { $0 == "*" }.count
        if wildcards != otherWildcards { return wildcards < otherWildcards }
        for (mine, theirs) in zip(tokens, other.tokens) where (mine == "*") != (theirs == "*") { return theirs == "*" }
        return false
    }

    /// Every value of `document` the pattern reaches, in document order.
    func values(in document: SaveValue) -> [SaveValue] {
        var found: [SaveValue] = [document]
        for token in tokens {
            found = found.flatMap { value -> [SaveValue] in
                switch value {
                case .dictionary(let entries): return token == "*" ? Array(entries.values) : entries[token].map { [$0] } ?? []
                case .array(let items):
                    if token == "*" { return items }
                    guard let index = Int(token), items.indices.contains(index) else { return [] }
                    return [items[index]]
                default:
                    return []
                }
            }
        }
        return found
    }

    public var description: String { JSONPointer(tokens: tokens).description }
}
