/// Every decision of a merge as one document (`--report`, `--json`):
///
/// ```json
/// {"format": "savetool.merge-report/1", "files": 1, "conflicts": 0,
///  "decisions": [{"file": "Documents/games/daily.json", "path": "", "policy": "pickSide",
///                 "local": {…}, "remote": {…}, "result": {…}, "why": "…", "conflict": false}]}
/// ```
///
/// A side without a value (absent, or no base) has no key; a whole file's decision has no values.
/// The conflicts it lists can be answered in a ``MergeAnswers`` file with the same `file` and `path`.
public struct MergeReport: Sendable {
    public private(set) var decisions: [SaveValue] = []
    public private(set) var files = 0
    public private(set) var conflicts = 0

    public init() {}

    public mutating func add(_ file: TreeMerger.FileOutcome) {
        files += 1
        for decision in file.decisions {
            if decision.isConflict { conflicts += 1 }
            decisions.append(Self.value(of: decision, file: file.path, kind: decision.kind ?? file.kind))
        }
    }

    public var value: SaveValue {
        ["format": "savetool.merge-report/1", "files": .integer(Int64(files)), "conflicts": .integer(Int64(conflicts)), "decisions": .array(decisions)]
    }

    static func value(of decision: MergeDecision, file: String, kind: String?) -> SaveValue {
        var entry: SaveValue = ["file": .string(file), "path": .string(decision.path.description), "policy": .string(decision.policy)]
        if let kind, !kind.isEmpty { try? entry.setValue(.string(kind), at: JSONPointer(tokens: ["kind"])) }
        // An open conflict has no result: the local value only stands in for it.
        for (key, value) in [("base", decision.base), ("local", decision.local), ("remote", decision.remote), ("result", decision.isConflict ? nil : decision.result)] {
            if let value { try? entry.setValue(value, at: JSONPointer(tokens: [key])) }
        }
        try? entry.setValue(.string(decision.why), at: JSONPointer(tokens: ["why"]))
        try? entry.setValue(.bool(decision.isConflict), at: JSONPointer(tokens: ["conflict"]))
        return entry
    }
}
