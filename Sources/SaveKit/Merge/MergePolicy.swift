/// How a value that changed on both sides (or, without a base, differs) is merged: one of the
/// policies a kind's `merge.json` names (formats.md).
///
/// Pointers inside a policy (`clock`, `key`, the criteria of `pickSide`) are relative to the
/// value the rule applies to: `{"path": "/reputation/*", "policy": "pickSide", "by": [{"max": "/score"}]}`
/// compares each kingdom's own score.
public indirect enum MergePolicy: Sendable, Equatable {
    /// The local side's value, whole.
    case preferLocal
    /// The remote side's value, whole.
    case preferRemote
    /// The side whose logical clock (a save counter stored in the save) is higher, whole. Never
    /// file times: a device's wall clock may be hours off. Equal clocks are a conflict.
    case latest(clock: JSONPointer)
    /// The larger value: numbers, text (RFC 3339 times sort as text), dates, `true` over `false`.
    case max
    case min
    /// A group of values compared as a tuple and taken whole from one side (level, then XP).
    case lexMax
    /// A count changed on both sides: base + both deltas. Without a base: `noBase`, else a conflict.
    case counter(noBase: MergePolicy?)
    /// Every element of both arrays, the local order first: when both sides changed the array,
    /// no element of either is dropped.
    case union
    /// Arrays whose elements are objects identified by `key`, merged element by element.
    case keyed(key: JSONPointer)
    /// A whole value from one side, chosen by `criteria` in order; a tie goes to `otherwise`,
    /// else it is a conflict. With `identity`, two sides whose values there differ are two
    /// different things (two puzzles), not two copies of one: a conflict, never a pick that
    /// drops one (neither side holding one is no difference).
    case pickSide(by: [SideCriterion], otherwise: MergePolicy?, identity: JSONPointer? = nil)
    /// Never decided automatically: a conflict, settled by answers or `--prefer`.
    case ask

    /// The policy's name in merge.json and in reports.
    public var name: String {
        switch self {
        case .preferLocal: "preferLocal"
        case .preferRemote: "preferRemote"
        case .latest: "latest"
        case .max: "max"
        case .min: "min"
        case .lexMax: "lexMax"
        case .counter: "counter"
        case .union: "union"
        case .keyed: "keyed"
        case .pickSide: "pickSide"
        case .ask: "ask"
        }
    }

    /// Whether swapping the two sides gives the same result (property tests rely on it).
    public var isSymmetric: Bool {
        switch self {
        case .max, .min, .lexMax: true
        case .counter(let fallback): fallback?.isSymmetric ?? true
        default: false
        }
    }
}

/// One test of `pickSide`: a side that passes it beats one that does not.
public enum SideCriterion: Sendable, Equatable {
    /// The side where the condition holds (`{"prefer": {"equals": ["/completed", true]}}`).
    case prefer(Condition)
    /// The side with the larger value at the pointer.
    case max(JSONPointer)
    case min(JSONPointer)
    /// The side with the larger sum of the numbers the pattern reaches (`/players/*/score`).
    case maxTotal(PointerPattern)
}
