import Foundation

/// Reading and editing through embedded documents: with a `UserDefaults` plist whose
/// `gameSave` key holds the bytes of a JSON document, `/gameSave/level` names the `level`
/// inside that JSON. An edit re-encodes the embedded document in its own codec.
extension SaveValue {
    /// The value at `pointer`, decoding embedded documents on the way when the path goes on
    /// past a `data` (or JSON-text string) value.
    public func value(at pointer: JSONPointer, seeingThrough registry: CodecRegistry) throws -> SaveValue {
        guard let (prefix, inner, _, rest) = try splitAtEmbedded(pointer, registry: registry) else {
            return try requireValue(at: pointer)
        }
        do {
            return try inner.value(at: rest, seeingThrough: registry)
        } catch let error as PointerError {
            throw error.prefixed(by: prefix)
        }
    }

    /// Sets the value at `pointer`, editing inside embedded documents where the path leads.
    public mutating func setValue(_ newValue: SaveValue, at pointer: JSONPointer, seeingThrough registry: CodecRegistry) throws {
        try edit(pointer, registry: registry) { (value: inout SaveValue, path: JSONPointer) in try value.setValue(newValue, at: path) }
    }

    /// Removes the value at `pointer`, editing inside embedded documents where the path leads.
    public mutating func removeValue(at pointer: JSONPointer, seeingThrough registry: CodecRegistry) throws {
        try edit(pointer, registry: registry) { (value: inout SaveValue, path: JSONPointer) in try value.removeValue(at: path) }
    }

    /// The first date, data, uid or non-finite real in `value`, with its path: what plain JSON
    /// cannot hold.
    static func firstNonPlainValue(in value: SaveValue, path: [String] = []) -> (path: [String], found: String)? {
        switch value {
        case .date, .data, .uid: return (path, value.typeNameWithArticle)
        case .real(let number) where !number.isFinite: return (path, "the real \(number)")
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = firstNonPlainValue(in: item, path: path + [String(index)]) { return found }
            }
            return nil
        case .dictionary(let entries):
            for (key, item) in entries {
                if let found = firstNonPlainValue(in: item, path: path + [key]) { return found }
            }
            return nil
        default: return nil
        }
    }

    private mutating func edit(_ pointer: JSONPointer, registry: CodecRegistry, _ body: (inout SaveValue, JSONPointer) throws -> Void) throws {
        guard let (prefix, inner, codec, rest) = try splitAtEmbedded(pointer, registry: registry) else {
            try body(&self, pointer)
            return
        }
        var edited = inner
        do {
            try edited.edit(rest, registry: registry, body)
        } catch let error as PointerError {
            throw error.prefixed(by: prefix)
        }
        // Nothing changed inside: the embedded bytes stay as they are, not encoded again.
        if edited == inner { return }
        // Embedded JSON is read by the app's own decoder, which knows no typed-JSON markers: a
        // value it cannot read is refused here, not written as `{"$date": …}`.
        if codec.id == JSONCodec().id, let (path, found) = Self.firstNonPlainValue(in: edited) {
            throw CodecError.unrepresentable(
                codec: "json", at: JSONPointer(tokens: prefix.tokens + path), found: found,
                expected: "a plain JSON value (the app reads this embedded JSON with its own decoder, which knows no typed-JSON markers)")
        }
        // Written over its old bytes: what the edit did not touch keeps its layout.
        let holder = try requireValue(at: prefix)
        let original = EmbeddedDocument.bytes(of: holder) ?? []  // always bytes: the path went in through them
        let replacement: SaveValue
        do {
            replacement = try EmbeddedDocument.replacement(for: edited, over: original, holding: inner, codec: codec, asText: { if case .string = holder { true } else { false } }())
        } catch let error as CodecError {
            throw error.prefixed(by: prefix)
        }
        try setValue(replacement, at: prefix)
    }

    /// The first embedded document on the path with tokens left after it.
    private func splitAtEmbedded(_ pointer: JSONPointer, registry: CodecRegistry)
        throws -> (prefix: JSONPointer, inner: SaveValue, codec: any SaveCodec, rest: JSONPointer)?
    {
        var current = self
        for (index, token) in pointer.tokens.enumerated() {
            guard let bytes = EmbeddedDocument.bytes(of: current) else {
                guard let next = current.value(at: JSONPointer(tokens: [token])) else { return nil }
                current = next
                continue
            }
            let prefix = JSONPointer(tokens: Array(pointer.tokens[..<index]))
            let found: (value: SaveValue, codec: any SaveCodec)?
            do { found = try EmbeddedDocument.decodeReportingArchives(bytes, registry: registry) } catch let error as CodecError { throw error.prefixed(by: prefix) }
            guard let (inner, codec) = found else {
                // Bytes that begin as a document and do not read: the path goes into a damaged
                // save, which is bad data with its place, not a value that is not there.
                if let problem = EmbeddedDocument.unreadable(bytes, registry: registry) {
                    throw SaveError(.badData, location: prefix.displayText, problem)
                }
                return nil
            }
            return (prefix, inner, codec, JSONPointer(tokens: Array(pointer.tokens[index...])))
        }
        return nil
    }
}

extension CodecError {
    /// The same error with its pointer seen from the outer document.
    func prefixed(by prefix: JSONPointer) -> CodecError {
        func join(_ pointer: JSONPointer) -> JSONPointer { JSONPointer(tokens: prefix.tokens + pointer.tokens) }
        switch self {
        case .unrepresentable(let codec, let at, let found, let expected): return .unrepresentable(codec: codec, at: join(at), found: found, expected: expected)
        case .malformed(let codec, .pointer(let at), let found, let expected): return .malformed(codec: codec, at: .pointer(join(at)), found: found, expected: expected)
        default: return self
        }
    }
}

extension PointerError {
    /// The same error with its pointer seen from the outer document.
    func prefixed(by prefix: JSONPointer) -> PointerError {
        func join(_ pointer: JSONPointer) -> JSONPointer { JSONPointer(tokens: prefix.tokens + pointer.tokens) }
        switch self {
        case .notFound(let pointer): return .notFound(join(pointer))
        case .notAContainer(let pointer, let type): return .notAContainer(join(pointer), type: type)
        case .badIndex(let pointer, let token, let count, let appending): return .badIndex(join(pointer), token: token, count: count, appending: appending)
        default: return self
        }
    }
}
