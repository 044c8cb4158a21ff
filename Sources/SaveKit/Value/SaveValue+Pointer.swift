import OrderedCollections

extension SaveValue {
    /// The value at `pointer`, or `nil` when there is none.
    public func value(at pointer: JSONPointer) -> SaveValue? {
        var current = self
        for token in pointer.tokens {
            switch current {
            case .dictionary(let entries):
                guard let next = entries[token] else { return nil }
                current = next
            case .array(let items):
                guard let index = Self.arrayIndex(token), index < items.count else { return nil }
                current = items[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The value at `pointer`, or an error saying where the path stopped and why.
    public func requireValue(at pointer: JSONPointer) throws(PointerError) -> SaveValue {
        var current = self
        for (depth, token) in pointer.tokens.enumerated() {
            let here = JSONPointer(tokens: Array(pointer.tokens[...depth]))
            switch current {
            case .dictionary(let entries):
                guard let next = entries[token] else { throw .notFound(here) }
                current = next
            case .array(let items):
                guard let index = Self.arrayIndex(token), index < items.count else {
                    throw .badIndex(here, token: token, count: items.count)
                }
                current = items[index]
            default:
                throw .notAContainer(JSONPointer(tokens: Array(pointer.tokens[..<depth])), type: current.typeName)
            }
        }
        return current
    }

    /// Sets the value at `pointer`: replaces an existing value, adds a new key at the end of a
    /// dictionary, or appends to an array when the last token is `-` (RFC 6902's convention).
    public mutating func setValue(_ newValue: SaveValue, at pointer: JSONPointer) throws(PointerError) {
        guard let last = pointer.tokens.last else { self = newValue; return }
        let parentPointer = pointer.parent!
        try modifyContainer(at: parentPointer) { (container: inout SaveValue) throws(PointerError) in
            switch container {
            case .dictionary(var entries):
                container = .null  // release the storage so the update does not copy it
                entries[last] = newValue
                container = .dictionary(entries)
            case .array(var items):
                container = .null  // as above
                if last == "-" {
                    items.append(newValue)
                } else {
                    guard let index = Self.arrayIndex(last), index <= items.count else {
                        container = .array(items)
                        throw .badIndex(pointer, token: last, count: items.count, appending: true)
                    }
                    if index == items.count { items.append(newValue) } else { items[index] = newValue }
                }
                container = .array(items)
            default:
                throw .notAContainer(parentPointer, type: container.typeName)
            }
        }
    }

    /// Calls `body` with the value at `pointer` to change it in place: what it changes is not
    /// copied first, as reading the value and setting it again would copy it. `false` when there
    /// is no value there.
    mutating func modify<E: Error>(at pointer: JSONPointer, from depth: Int = 0, _ body: (inout SaveValue) throws(E) -> Void) throws(E) -> Bool {
        if depth == pointer.tokens.count {
            try body(&self)
            return true
        }
        let token = pointer.tokens[depth]
        switch self {
        case .dictionary(var entries):
            guard let index = entries.index(forKey: token) else { return false }
            self = .null  // so that `entries` is the storage's only owner
            defer { self = .dictionary(entries) }
            return try entries.values[index].modify(at: pointer, from: depth + 1, body)
        case .array(var items):
            guard let index = Self.arrayIndex(token), index < items.count else { return false }
            self = .null
            defer { self = .array(items) }
            return try items[index].modify(at: pointer, from: depth + 1, body)
        default:
            return false
        }
    }

    /// Removes the value at `pointer` and returns it.
    @discardableResult
    public mutating func removeValue(at pointer: JSONPointer) throws(PointerError) -> SaveValue {
        guard let last = pointer.tokens.last else { throw .cannotRemoveRoot }
        let parentPointer = pointer.parent!
        var removed = SaveValue.null
        try modifyContainer(at: parentPointer) { (container: inout SaveValue) throws(PointerError) in
            switch container {
            case .dictionary(var entries):
                container = .null  // release the storage so the removal does not copy it
                guard let old = entries.removeValue(forKey: last) else {
                    container = .dictionary(entries)
                    throw .notFound(pointer)
                }
                removed = old
                container = .dictionary(entries)
            case .array(var items):
                guard let index = Self.arrayIndex(last), index < items.count else {
                    throw .badIndex(pointer, token: last, count: items.count)
                }
                container = .null
                removed = items.remove(at: index)
                container = .array(items)
            default:
                throw .notAContainer(parentPointer, type: container.typeName)
            }
        }
        return removed
    }

    private mutating func modifyContainer(
        at pointer: JSONPointer, depth: Int = 0, _ body: (inout SaveValue) throws(PointerError) -> Void
    ) throws(PointerError) {
        if depth == pointer.tokens.count { try body(&self); return }
        let token = pointer.tokens[depth]
        // Made only for a message: most changes find their way.
        var here: JSONPointer { JSONPointer(tokens: Array(pointer.tokens[...depth])) }
        switch self {
        case .dictionary(var entries):
            guard var child = entries[token] else { throw .notFound(here) }
            self = .null
            entries[token] = .null
            defer { entries[token] = child; self = .dictionary(entries) }
            try child.modifyContainer(at: pointer, depth: depth + 1, body)
        case .array(var items):
            guard let index = Self.arrayIndex(token), index < items.count else {
                throw .badIndex(here, token: token, count: items.count)
            }
            var child = items[index]
            self = .null
            items[index] = .null
            defer { items[index] = child; self = .array(items) }
            try child.modifyContainer(at: pointer, depth: depth + 1, body)
        default:
            throw .notAContainer(JSONPointer(tokens: Array(pointer.tokens[..<depth])), type: typeName)
        }
    }

    /// RFC 6901 array indices: decimal digits, no leading zeros.
    static func arrayIndex(_ token: String) -> Int? {
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if token.utf8.count > 1 && token.utf8.first == 0x30 { return nil }
        return Int(token)
    }
}
