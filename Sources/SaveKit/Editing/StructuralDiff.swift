/// The differences between two documents, as JSON Pointer paths.
///
/// Dictionaries are compared by key, whatever their order; arrays element by element (an
/// element added in the middle shows as changes from there on, as in `diff` of two lists).
/// A change of type — the integer `1` against the real `1.0` — is a difference.
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

    public init(from old: SaveValue, to new: SaveValue) {
        compare(old, new, at: JSONPointer())
    }

    private mutating func compare(_ old: SaveValue, _ new: SaveValue, at pointer: JSONPointer) {
        switch (old, new) {
        case (.dictionary(let before), .dictionary(let after)):
            for (key, value) in before {
                if let counterpart = after[key] {
                    compare(value, counterpart, at: pointer.appending(key))
                } else {
                    changes.append(.removed(pointer.appending(key), value))
                }
            }
            for (key, value) in after where before[key] == nil {
                changes.append(.added(pointer.appending(key), value))
            }
        case (.array(let before), .array(let after)):
            for index in 0..<min(before.count, after.count) {
                compare(before[index], after[index], at: pointer.appending(index))
            }
            if before.count > after.count {
                for index in after.count..<before.count { changes.append(.removed(pointer.appending(index), before[index])) }
            } else if after.count > before.count {
                for index in before.count..<after.count { changes.append(.added(pointer.appending(index), after[index])) }
            }
        default:
            if old != new { changes.append(.changed(pointer, from: old, to: new)) }
        }
    }
}
