import OrderedCollections

/// Receives a document value by value, in document order, with no tree in between.
///
/// Readers that can stream (binary plist) drive a sink directly, and the JSON and XML writers
/// are sinks, so `savetool convert` of a 50 MB save never holds the whole document as values:
/// memory stays near the size of the input. ``TreeBuilder`` is the sink that builds a
/// ``SaveValue``; ``SaveValue/emit(into:maxDepth:)`` replays a tree as events.
///
/// Events come in this grammar: a value is a scalar, or `beginArray`, values, `endArray`, or
/// `beginDictionary`, then `key` and a value for each entry, then `endDictionary`.
/// ``value(_:)`` never receives an array or a dictionary.
public protocol SaveValueSink {
    /// `count` is the number of elements the source declares.
    mutating func beginArray(count: Int) throws
    mutating func endArray() throws
    /// `count` is the number of entries the source declares.
    mutating func beginDictionary(count: Int) throws
    mutating func key(_ key: String) throws
    mutating func endDictionary() throws
    mutating func value(_ scalar: SaveValue) throws
    /// A key as valid UTF-8 bytes, from the input or from a buffer the reader reuses: valid
    /// only during the call. The writers copy it without building a `String`. The default
    /// builds one and calls ``key(_:)``.
    mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) throws
    /// A string value as valid UTF-8 bytes, valid only during the call (as for ``utf8Key(_:)``).
    /// The default builds a `String` and calls ``value(_:)``.
    mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) throws
}

extension SaveValueSink {
    public mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) throws {
        try key(String(decoding: text, as: UTF8.self))
    }

    public mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) throws {
        try value(.string(String(decoding: text, as: UTF8.self)))
    }
}

/// The sink that builds a ``SaveValue`` tree.
public struct TreeBuilder: SaveValueSink {
    private enum Frame {
        case array([SaveValue])
        case dictionary(OrderedDictionary<String, SaveValue>, pendingKey: String)
    }

    private var stack: [Frame] = []
    public private(set) var result: SaveValue?

    public init() {}

    public mutating func beginArray(count: Int) {
        var items: [SaveValue] = []
        items.reserveCapacity(min(count, 1 << 16))
        stack.append(.array(items))
    }

    public mutating func beginDictionary(count: Int) {
        stack.append(.dictionary(OrderedDictionary(minimumCapacity: min(count, 1 << 16)), pendingKey: ""))
    }

    public mutating func key(_ key: String) {
        guard case .dictionary(let entries, _) = stack.popLast() else { preconditionFailure("key outside a dictionary") }
        stack.append(.dictionary(entries, pendingKey: key))
    }

    public mutating func endArray() {
        guard case .array(let items) = stack.popLast() else { preconditionFailure("unbalanced endArray") }
        add(.array(items))
    }

    public mutating func endDictionary() {
        guard case .dictionary(let entries, _) = stack.popLast() else { preconditionFailure("unbalanced endDictionary") }
        add(.dictionary(entries))
    }

    public mutating func value(_ scalar: SaveValue) { add(scalar) }

    private mutating func add(_ value: SaveValue) {
        guard let top = stack.popLast() else { result = value; return }
        switch top {
        case .array(var items):
            items.append(value)
            stack.append(.array(items))
        case .dictionary(var entries, let key):
            entries[key] = value  // readers reject or resolve duplicate keys before they get here
            stack.append(.dictionary(entries, pendingKey: key))
        }
    }
}

extension SaveValue {
    /// Replays the value as events, refusing nesting deeper than `maxDepth` with the pointer
    /// of the first value too deep.
    public func emit<Sink: SaveValueSink>(into sink: inout Sink, maxDepth: Int = DecodingOptions().maxDepth) throws {
        do {
            try emit(into: &sink, depth: 0, maxDepth: maxDepth)
        } catch let tooDeep as TooDeep {
            throw CodecError.limitExceeded(
                codec: "value", at: .pointer(JSONPointer(tokens: tooDeep.reversedPath.reversed())),
                found: "nesting deeper than \(maxDepth) levels", expected: "a value nested at most \(maxDepth) deep")
        }
    }

    /// The place of a value nested too deep, gathered on the way out: keeping a path on the
    /// way in cost a string for every value of every document written.
    private struct TooDeep: Error {
        var reversedPath: [String] = []
    }

    private func emit<Sink: SaveValueSink>(into sink: inout Sink, depth: Int, maxDepth: Int) throws {
        switch self {
        case .array(let items):
            if depth >= maxDepth { throw TooDeep() }
            try sink.beginArray(count: items.count)
            for (index, item) in items.enumerated() {
                do {
                    try item.emit(into: &sink, depth: depth + 1, maxDepth: maxDepth)
                } catch var tooDeep as TooDeep {
                    tooDeep.reversedPath.append(String(index))
                    throw tooDeep
                }
            }
            try sink.endArray()
        case .dictionary(let entries):
            if depth >= maxDepth { throw TooDeep() }
            try sink.beginDictionary(count: entries.count)
            for (key, item) in entries {
                try sink.key(key)
                do {
                    try item.emit(into: &sink, depth: depth + 1, maxDepth: maxDepth)
                } catch var tooDeep as TooDeep {
                    tooDeep.reversedPath.append(key)
                    throw tooDeep
                }
            }
            try sink.endDictionary()
        default:
            try sink.value(self)
        }
    }
}
