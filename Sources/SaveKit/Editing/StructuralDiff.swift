import OrderedCollections

/// The differences between two documents, as JSON Pointer paths.
///
/// Dictionaries are compared by key, whatever their order; arrays element by element (an
/// element added in the middle shows as changes from there on, as in `diff` of two lists).
/// A change of type — the integer `1` against the real `1.0` — is a difference.
///
/// With a codec registry, two values that both hold a document (the `data` of a `UserDefaults`
/// key holding a JSON-encoded save, or a string of JSON text) are compared inside, whatever
/// their codecs: `/gameSave/coinBalance: 120 → 500` rather than two blobs.
public struct StructuralDiff: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        case added(JSONPointer, SaveValue)
        case removed(JSONPointer, SaveValue)
        case changed(JSONPointer, from: SaveValue, to: SaveValue)

        public var pointer: JSONPointer {
            switch self {
            case .added(let pointer, _), .removed(let pointer, _), .changed(let pointer, _, _): pointer
            }
        }
    }

    public private(set) var changes: [Change] = []

    public var isEmpty: Bool { changes.isEmpty }

    public init(from old: SaveValue, to new: SaveValue, seeingThrough registry: CodecRegistry? = nil) {
        compare(old, new, at: JSONPointer(), registry: registry)
    }

    private mutating func compare(_ old: SaveValue, _ new: SaveValue, at pointer: JSONPointer, registry: CodecRegistry?) {
        switch (old, new) {
        case (.dictionary(let before), .dictionary(let after)):
            // Keys are found as characters; a key spelled in another Unicode normalisation on
            // the other side (`é` as one code point, and as `e` and an accent) is another key
            // in the file, so it shows as one removed and one added, not as no change.
            func spelledAlike(_ key: String, in entries: OrderedDictionary<String, SaveValue>) -> SaveValue? {
                guard let index = entries.index(forKey: key), SaveValue.sameBytes(entries.keys[index], key) else { return nil }
                return entries.values[index]
            }
            for (key, value) in before {
                if let counterpart = spelledAlike(key, in: after) {
                    compare(value, counterpart, at: pointer.appending(key), registry: registry)
                } else {
                    changes.append(.removed(pointer.appending(key), value))
                }
            }
            for (key, value) in after where spelledAlike(key, in: before) == nil {
                changes.append(.added(pointer.appending(key), value))
            }
        case (.array(let before), .array(let after)):
            for index in 0..<min(before.count, after.count) {
                compare(before[index], after[index], at: pointer.appending(index), registry: registry)
            }
            if before.count > after.count {
                for index in after.count..<before.count { changes.append(.removed(pointer.appending(index), before[index])) }
            } else if after.count > before.count {
                for index in before.count..<after.count { changes.append(.added(pointer.appending(index), after[index])) }
            }
        default:
            guard old != new else { return }
            // Inside only when both hold a document the same way (data and data, text and
            // text) in the same codec; a holder that changed kind or codec is itself the change.
            if let registry, old.typeName == new.typeName,
                let before = EmbeddedDocument.bytes(of: old).flatMap({ EmbeddedDocument.decode($0, registry: registry) }),
                let after = EmbeddedDocument.bytes(of: new).flatMap({ EmbeddedDocument.decode($0, registry: registry) }),
                before.codec.id == after.codec.id, before.value.typeName == after.value.typeName
            {
                let count = changes.count
                compare(before.value, after.value, at: pointer, registry: registry)
                // Equal inside but not byte for byte (keys reordered, re-encoded): still a change.
                if changes.count == count { changes.append(.changed(pointer, from: old, to: new)) }
                return
            }
            changes.append(.changed(pointer, from: old, to: new))
        }
    }
}
