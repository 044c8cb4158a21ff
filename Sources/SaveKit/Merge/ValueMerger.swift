import OrderedCollections

/// Merges two copies of a document by a kind's ``MergeRules``, three ways when their common
/// ancestor is known (formats.md, merge.json).
///
/// With a base, a value changed on one side only is taken from that side, and only values
/// changed on both sides reach a rule. Without one, every difference reaches a rule, and a
/// value present on one side only is kept (nothing tells an addition from a deletion, and
/// keeping loses nothing). Whatever no rule decides is a conflict, handed to ``resolve``.
///
/// ```swift
/// let merger = ValueMerger(rules: rules)
/// let outcome = merger.merge(base: base, local: phone, remote: tablet)
/// if outcome.conflicts.isEmpty { write(outcome.value) }
/// ```
public struct ValueMerger: Sendable {
    public typealias Resolver = @Sendable (MergeConflict) -> (resolution: ConflictResolution, by: String)?

    public var rules: MergeRules?
    /// Settles conflicts (answers, `--prefer`, a question on a terminal); `nil` leaves them open.
    public var resolve: Resolver?

    public init(rules: MergeRules?, resolve: Resolver? = nil) {
        (self.rules, self.resolve) = (rules, resolve)
    }

    public struct Outcome: Sendable {
        /// The merged document; where a conflict is open, the local side's value stands in.
        public var value: SaveValue
        public var decisions: [MergeDecision]
        public var conflicts: [MergeDecision] { decisions.filter(\.isConflict) }
    }

    public func merge(base: SaveValue?, local: SaveValue, remote: SaveValue, at root: JSONPointer = .root) -> Outcome {
        var run = Run(merger: self, threeWay: base != nil, prefix: root)
        let value = run.node(.root, base: base, local: local, remote: remote) ?? local
        return Outcome(value: value, decisions: run.decisions)
    }

    /// One merge: its decisions so far.
    private struct Run {
        let merger: ValueMerger
        let threeWay: Bool
        /// Whether any rule is a counter: then equal sides that both left the base need a look.
        let hasCounters: Bool
        /// Where the document sits (inside a holder's embedded value), for reports.
        let prefix: JSONPointer
        var decisions: [MergeDecision] = []

        init(merger: ValueMerger, threeWay: Bool, prefix: JSONPointer) {
            (self.merger, self.threeWay, self.prefix) = (merger, threeWay, prefix)
            hasCounters = threeWay && merger.rules?.hasCounter(below: JSONPointer(tokens: [])) == true
                || merger.rules?.rule(at: .root).map { if case .counter = $0.policy { true } else { false } } == true
        }

        var defaultPolicy: MergePolicy { merger.rules?.defaultPolicy ?? .ask }

        mutating func record(_ path: JSONPointer, _ policy: String, _ base: SaveValue?, _ local: SaveValue?, _ remote: SaveValue?, _ result: SaveValue?, _ why: String) {
            decisions.append(MergeDecision(
                path: JSONPointer(tokens: prefix.tokens + path.tokens), policy: policy, base: base, local: local, remote: remote,
                result: result, why: why, isConflict: false))
        }

        /// A place nothing decided: settled by the resolver, or left open (the local value stands in).
        mutating func conflict(_ path: JSONPointer, _ policy: String, _ base: SaveValue?, _ local: SaveValue?, _ remote: SaveValue?, _ reason: String) -> SaveValue? {
            settle(path, policy, base, local, remote, reason).value
        }

        /// A conflict settled by the resolver (the side taken, when one was), or left open with the
        /// local value standing in. An answer taking the base where there is none settles nothing.
        /// An answer's value of another shape than `valueCount` says (a group's) settles
        /// nothing, and the conflict says why.
        mutating func settle(
            _ path: JSONPointer, _ policy: String, _ base: SaveValue?, _ local: SaveValue?, _ remote: SaveValue?, _ reason: String,
            valueCount: Int? = nil
        ) -> (value: SaveValue?, side: MergeSide?) {
            let full = JSONPointer(tokens: prefix.tokens + path.tokens)
            var why = reason
            let conflict = MergeConflict(path: full, base: base, local: local, remote: remote, reason: reason, valueCount: valueCount)
            if let (resolution, by) = merger.resolve?(conflict) {
                switch resolution {
                case .take(.base) where !threeWay:
                    why += "; the answer takes the base, but this merge has none"
                case .take(let side):
                    let value = side == .local ? local : side == .remote ? remote : base
                    record(path, policy, base, local, remote, value, "\(reason); settled by \(by)")
                    return (value, side)
                case .value(let given):
                    if let problem = conflict.problem(with: given) {
                        why += "; the answer's value is \(problem)"
                        break
                    }
                    record(path, policy, base, local, remote, given, "\(reason); settled by \(by)")
                    return (given, nil)
                }
            }
            decisions.append(MergeDecision(path: full, policy: policy, base: base, local: local, remote: remote, result: local, why: why, isConflict: true))
            return (local, .local)
        }

        /// Whether equal sides that differ from the base still need merging: at a counter, or in
        /// an object holding one (arrays and other rules take equal sides as they are).
        func sameChangeCounts(_ path: JSONPointer, base: SaveValue?, value: SaveValue?) -> Bool {
            guard threeWay, let base, let value, base != value, let rules = merger.rules else { return false }
            if let rule = rules.rule(at: path) {
                if case .counter = rule.policy { return true }
                return false
            }
            if case .dictionary = value { return rules.hasCounter(below: path) }
            return false
        }

        mutating func node(_ path: JSONPointer, base: SaveValue?, local: SaveValue?, remote: SaveValue?) -> SaveValue? {
            // The same change on both sides is taken once, but for a counter: two devices that
            // each earned 10 coins from the base hold equal copies, and both earnings count.
            if local == remote, !sameChangeCounts(path, base: base, value: local) { return local }
            if threeWay && (base == local || base == remote) {
                let changed: MergeSide = base == local ? .remote : .local
                let taken = changed == .remote ? remote : local
                // Within two objects, the change is reported key by key (the same result).
                if case .dictionary(let baseEntries)? = base, case .dictionary(let takenEntries)? = taken {
                    return .dictionary(mergeEntries(path, base: baseEntries, local: changed == .local ? takenEntries : baseEntries, remote: changed == .remote ? takenEntries : baseEntries))
                }
                let what = taken == nil ? "removed" : base == nil ? "added" : "changed"
                record(path, "changedOnOneSide", base, local, remote, taken, "\(what) on the \(changed.rawValue) side only")
                return taken
            }
            guard var local, var remote else {
                // Present on one side only.
                if !threeWay {
                    let kept = local ?? remote
                    record(path, "onOneSideOnly", nil, local, remote, kept, "on the \(local == nil ? "remote" : "local") side only; without a base, an addition and a deletion look alike, so it is kept")
                    return kept
                }
                // Removed on one side and changed on the other: only a rule that takes one side decides.
                let rule = merger.rules?.rule(at: path)
                let policy = rule?.policy ?? defaultPolicy, source = rule == nil ? "the default policy" : "the rule"
                switch policy {
                case .preferLocal: record(path, "preferLocal", base, local, remote, local, "removed on one side, changed on the other; \(source) takes the local side"); return local
                case .preferRemote: record(path, "preferRemote", base, local, remote, remote, "removed on one side, changed on the other; \(source) takes the remote side"); return remote
                default: break
                }
                let edited = local == nil ? "remote" : "local"
                return conflict(path, rule?.policy.name ?? "deleteAgainstEdit", base, local, remote, "removed on the \(local == nil ? "local" : "remote") side and changed on the \(edited) side")
            }
            if case .dictionary = local, case .dictionary = remote {
                for group in merger.rules?.groups(at: path) ?? [] { settle(group, at: path, base: base, local: &local, remote: &remote) }
                if local == remote, !sameChangeCounts(path, base: base, value: local) { return local }
            }
            if let rule = merger.rules?.rule(at: path) {
                return apply(rule.policy, path, base: base, local: local, remote: remote)
            }
            if case .dictionary(let localEntries) = local, case .dictionary(let remoteEntries) = remote {
                return .dictionary(mergeEntries(path, base: base?.dictionaryValue, local: localEntries, remote: remoteEntries))
            }
            return apply(defaultPolicy, path, base: base, local: local, remote: remote, isDefault: true)
        }

        /// Keys in the local order, then the remote side's new keys in its order.
        mutating func mergeEntries(
            _ path: JSONPointer, base: OrderedDictionary<String, SaveValue>?, local: OrderedDictionary<String, SaveValue>, remote: OrderedDictionary<String, SaveValue>
        ) -> OrderedDictionary<String, SaveValue> {
            var merged = OrderedDictionary<String, SaveValue>(minimumCapacity: local.count)
            for (key, value) in local {
                let other = remote[key]
                // Most keys hold the same value on both sides: kept without building their path
                // (unless both changed it alike where a counter may be, which node(…) decides).
                if value == other, !hasCounters || base?[key] == nil || base?[key] == value {
                    merged[key] = value
                } else if let result = node(path.appending(key), base: base?[key], local: value, remote: other) {
                    merged[key] = result
                }
            }
            for (key, value) in remote where local[key] == nil {
                if let result = node(path.appending(key), base: base?[key], local: nil, remote: value) { merged[key] = result }
            }
            return merged
        }

        /// A group changed on both sides: the winning side's members are written into both, so
        /// the rest of the merge sees them equal.
        mutating func settle(_ group: MergeRules.Rule, at path: JSONPointer, base: SaveValue?, local: inout SaveValue, remote: inout SaveValue) {
            let localTuple = group.members.map { local.value(at: $0) }, remoteTuple = group.members.map { remote.value(at: $0) }
            guard localTuple != remoteTuple else { return }
            if threeWay {
                let baseTuple = group.members.map { base?.value(at: $0) }
                if baseTuple == localTuple || baseTuple == remoteTuple { return }  // one side's change: taken member by member
            }
            let names = group.members.map { JSONPointer(tokens: prefix.tokens + path.tokens + $0.tokens).description }.joined(separator: ", ")
            let groupValue = { (tuple: [SaveValue?]) -> SaveValue in .array(tuple.map { $0 ?? .null }) }
            // Named by its first member, never by the object holding it: that may be the whole
            // file, whose pointer "" an answer takes for a whole file's conflict. Once settled, the
            // members are equal on both sides, so nothing else is decided there.
            let path = JSONPointer(tokens: path.tokens + group.members[0].tokens)
            let winning: [SaveValue?]
            if let order = Self.compareTuples(localTuple, remoteTuple), order != 0 {
                winning = order > 0 ? localTuple : remoteTuple
                record(path, "lexMax", threeWay ? groupValue(group.members.map { base?.value(at: $0) }) : .none, groupValue(localTuple), groupValue(remoteTuple), groupValue(winning),
                       "the group \(names) compared as a tuple: the \(order > 0 ? "local" : "remote") side's is higher")
            } else {
                let baseTuple = threeWay ? group.members.map { base?.value(at: $0) } : nil
                let settled = settle(
                    path, "lexMax", baseTuple.map(groupValue), groupValue(localTuple), groupValue(remoteTuple), "the group \(names) cannot be ordered (values of different types)",
                    valueCount: group.members.count)
                switch settled.side {
                case .remote?: winning = remoteTuple
                case .base?: winning = baseTuple ?? localTuple
                case .local?: winning = localTuple
                case nil:
                    // A value given for the group: an array with one entry per member (checked above).
                    winning = (settled.value?.arrayValue ?? []).map { $0 == .null ? nil : $0 }
                }
            }
            for (member, value) in zip(group.members, winning) {
                if let value {
                    try? local.setValue(value, at: member)
                    try? remote.setValue(value, at: member)
                } else {
                    _ = try? local.removeValue(at: member)
                    _ = try? remote.removeValue(at: member)
                }
            }
        }

        mutating func apply(_ policy: MergePolicy, _ path: JSONPointer, base: SaveValue?, local: SaveValue, remote: SaveValue, isDefault: Bool = false) -> SaveValue? {
            let rule = isDefault ? "the default policy" : "the rule"
            switch policy {
            case .preferLocal:
                record(path, policy.name, base, local, remote, local, "\(rule) takes the local side"); return local
            case .preferRemote:
                record(path, policy.name, base, local, remote, remote, "\(rule) takes the remote side"); return remote
            case .ask:
                return conflict(path, policy.name, base, local, remote, threeWay ? "changed on both sides, and \(rule) is ask" : "different on the two sides, and \(rule) is ask")
            case .max, .min, .lexMax:
                guard let order = Self.compare(local, remote) else {
                    return conflict(path, policy.name, base, local, remote, "\(local.typeNameWithArticle) and \(remote.typeNameWithArticle) cannot be compared")
                }
                let takesLocal = policy == .min ? order < 0 : order > 0
                let result = takesLocal ? local : remote
                record(path, policy.name, base, local, remote, result, "the \(policy == .min ? "smaller" : "larger") value, from the \(takesLocal ? "local" : "remote") side")
                return result
            case .latest(let clock):
                guard let localClock = local.value(at: clock), let remoteClock = remote.value(at: clock), let order = Self.compare(localClock, remoteClock), order != 0 else {
                    return conflict(path, policy.name, base, local, remote, "the clock \(clock.displayText) does not tell which side is later (missing, equal or not comparable)")
                }
                let result = order > 0 ? local : remote
                record(path, policy.name, base, local, remote, result, "the \(order > 0 ? "local" : "remote") side's clock \(clock.displayText) is later (\((order > 0 ? localClock : remoteClock).compactText) against \((order > 0 ? remoteClock : localClock).compactText)); taken whole")
                return result
            case .counter(let fallback):
                guard let localNumber = Self.number(local), let remoteNumber = Self.number(remote) else {
                    return conflict(path, policy.name, base, local, remote, "a counter holds \(local.typeNameWithArticle) and \(remote.typeNameWithArticle), expected numbers")
                }
                guard let base, let baseNumber = Self.number(base) else {
                    if let fallback {
                        let result = apply(fallback, path, base: nil, local: local, remote: remote)
                        if let last = decisions.indices.last, decisions[last].path == JSONPointer(tokens: prefix.tokens + path.tokens), !decisions[last].isConflict {
                            decisions[last].policy = "counter"
                            decisions[last].why = "a counter without a base: its noBase fallback, " + decisions[last].why
                        }
                        return result
                    }
                    return conflict(path, policy.name, nil, local, remote, "a counter changed on both sides, but without a base the two changes cannot be added")
                }
                let result = Self.sum(base: baseNumber, localNumber, remoteNumber)
                record(path, policy.name, base, local, remote, result, "the base plus both sides' changes")
                return result
            case .union:
                switch (local, remote) {
                case (.array(let localItems), .array(let remoteItems)):
                    var items = localItems
                    for item in remoteItems where !items.contains(item) { items.append(item) }
                    let result = SaveValue.array(items)
                    record(path, policy.name, base, local, remote, result, "every element of both sides")
                    return result
                case (.dictionary(let localEntries), .dictionary(let remoteEntries)):
                    return .dictionary(mergeEntries(path, base: base?.dictionaryValue, local: localEntries, remote: remoteEntries))
                default:
                    return conflict(path, policy.name, base, local, remote, "a union of \(local.typeNameWithArticle) and \(remote.typeNameWithArticle), expected two arrays")
                }
            case .keyed(let key):
                guard case .array(let localItems) = local, case .array(let remoteItems) = remote else {
                    return conflict(path, policy.name, base, local, remote, "keyed holds \(local.typeNameWithArticle) and \(remote.typeNameWithArticle), expected two arrays")
                }
                return mergeKeyed(path, key: key, base: base?.arrayValue, local: localItems, remote: remoteItems)
            case .pickSide(let criteria, let otherwise, let identity):
                // 1 and 1.0 are one identity (a JSON copy against a plist copy), as keyed's are.
                let same = { (a: SaveValue?, b: SaveValue?) in a == b || (a?.numberValue != nil && a?.numberValue == b?.numberValue) }
                if let identity, !same(local.value(at: identity), remote.value(at: identity)) {
                    let shown = { (value: SaveValue) in value.value(at: identity)?.compactText ?? "none" }
                    return conflict(
                        path, policy.name, base, local, remote,
                        "two different \(identity.displayText) (local \(shown(local)), remote \(shown(remote))): one would be lost, so neither is picked")
                }
                for criterion in criteria {
                    guard let winner = Self.judge(criterion, local, remote) else { continue }
                    let result = winner == .local ? local : remote
                    record(path, policy.name, base, local, remote, result, "\(Self.describe(criterion)): the \(winner.rawValue) side; taken whole")
                    return result
                }
                if let otherwise { return apply(otherwise, path, base: base, local: local, remote: remote) }
                return conflict(path, policy.name, base, local, remote, "no criterion of pickSide tells the two sides apart")
            }
        }

        /// Elements matched by their key: a side's reordering and the other side's edits both
        /// kept, nothing duplicated.
        mutating func mergeKeyed(_ path: JSONPointer, key: JSONPointer, base: [SaveValue]?, local: [SaveValue], remote: [SaveValue]) -> SaveValue? {
            func identities(_ items: [SaveValue]) -> [String]? {
                var seen = Set<String>(), order: [String] = []
                for item in items {
                    guard let identity = item.value(at: key), !identity.isContainer else { return nil }
                    // 1 and 1.0 are one identity (a JSON copy against a plist copy).
                    let text = identity.numberValue.map { "number:\($0)" } ?? identity.typeName + ":" + identity.compactText
                    guard seen.insert(text).inserted else { return nil }
                    order.append(text)
                }
                return order
            }
            guard let localOrder = identities(local), let remoteOrder = identities(remote) else {
                return conflict(path, "keyed", base.map(SaveValue.array), .array(local), .array(remote), "elements without a unique \(key.displayText), expected one identity per element")
            }
            let baseOrder = base.flatMap(identities)
            if base != nil && baseOrder == nil {
                return conflict(path, "keyed", base.map(SaveValue.array), .array(local), .array(remote), "the base's elements have no unique \(key.displayText), so removals cannot be told from additions")
            }
            let byIdentity = { (items: [SaveValue], order: [String]) in Dictionary(uniqueKeysWithValues: zip(order, items)) }
            let localItems = byIdentity(local, localOrder), remoteItems = byIdentity(remote, remoteOrder)
            let baseItems = zip(baseOrder ?? [], base ?? []).reduce(into: [String: SaveValue]()) { $0[$1.0] = $1.1 }
            // The order: the side that reordered, else the local one; the other side's new
            // elements go after the element they follow there.
            let remoteReordered = threeWay && baseOrder.map { localOrder.filter(Set($0).contains) == $0.filter(Set(localOrder).contains) } == true
                && remoteOrder.filter(Set(localOrder).contains) != localOrder.filter(Set(remoteOrder).contains)
            var order = remoteReordered ? remoteOrder : localOrder
            let other = remoteReordered ? localOrder : remoteOrder
            var placed = Set(order)
            for (position, identity) in other.enumerated() where !placed.contains(identity) {
                let after = other[..<position].last(where: placed.contains)
                order.insert(identity, at: after.flatMap { order.firstIndex(of: $0) }.map { $0 + 1 } ?? 0)
                placed.insert(identity)
            }
            // Each element is reported at its place in the merged order, counting the elements the
            // merge removes: its index in the result when none before it is removed, and never a
            // path two elements share (an answer settles exactly one). An index of either side
            // would be both: a remote element and a local one may each be the third.
            var items: [SaveValue] = []
            for (index, identity) in order.enumerated() {
                if let value = node(path.appending(index), base: baseItems[identity], local: localItems[identity], remote: remoteItems[identity]) {
                    items.append(value)
                }
            }
            return .array(items)
        }

        // MARK: - Comparing values

        /// -1, 0 or 1, or `nil` when the two cannot be ordered.
        static func compare(_ left: SaveValue, _ right: SaveValue) -> Int? {
            switch (left, right) {
            case (.string(let a), .string(let b)):
                if a == b { return 0 }
                // RFC 3339 times (what JSON saves keep times as) compare as the times they spell:
                // as text, "…11:00:00+02:00" comes after "…10:00:00Z", and "…10:00:00Z" after
                // "…10:00:00.5Z", though both are earlier.
                if let first = RFC3339.parseUnixTime(a), let second = RFC3339.parseUnixTime(b) {
                    return first == second ? 0 : (first < second ? -1 : 1)
                }
                return Array(a.utf8).lexicographicallyPrecedes(b.utf8) ? -1 : 1
            case (.date(let a), .date(let b)): return a == b ? 0 : (a < b ? -1 : 1)
            case (.bool(let a), .bool(let b)): return a == b ? 0 : (b ? -1 : 1)
            case (.array(let a), .array(let b)): return compareTuples(a.map(Optional.some), b.map(Optional.some))
            default:
                guard let a = left.numberValue, let b = right.numberValue, left.isNumber, right.isNumber else { return nil }
                return a == b ? 0 : (a < b ? -1 : 1)
            }
        }

        /// Element by element; a missing element is lower than any value.
        static func compareTuples(_ left: [SaveValue?], _ right: [SaveValue?]) -> Int? {
            for (a, b) in zip(left, right) {
                switch (a, b) {
                case (nil, nil): continue
                case (nil, _): return -1
                case (_, nil): return 1
                case (let a?, let b?):
                    guard let order = compare(a, b) else { return nil }
                    if order != 0 { return order }
                }
            }
            return left.count == right.count ? 0 : (left.count < right.count ? -1 : 1)
        }

        // `.none`, not `nil`: SaveValue is ExpressibleByNilLiteral, and `nil` here was `.null`,
        // a number to the guards that read it (a counter added "abc" as 0).
        static func number(_ value: SaveValue) -> SaveValue? { value.isNumber ? value : .none }

        static func sum(base: SaveValue, _ local: SaveValue, _ remote: SaveValue) -> SaveValue {
            if case .integer(let b) = base, case .integer(let l) = local, case .integer(let r) = remote {
                let (localDelta, o1) = l.subtractingReportingOverflow(b), (remoteDelta, o2) = r.subtractingReportingOverflow(b)
                let (total, o3) = b.addingReportingOverflow(localDelta), (result, o4) = total.addingReportingOverflow(remoteDelta)
                if !(o1 || o2 || o3 || o4) { return .integer(result) }
            }
            let (b, l, r) = (base.numberValue ?? 0, local.numberValue ?? 0, remote.numberValue ?? 0)
            return .real(b + (l - b) + (r - b))
        }

        static func judge(_ criterion: SideCriterion, _ local: SaveValue, _ remote: SaveValue) -> MergeSide? {
            switch criterion {
            case .prefer(let condition):
                let (forLocal, forRemote) = (condition.holds(in: local), condition.holds(in: remote))
                return forLocal == forRemote ? nil : (forLocal ? .local : .remote)
            case .max(let pointer), .min(let pointer):
                let (a, b) = (local.value(at: pointer), remote.value(at: pointer))
                let order: Int
                switch (a, b) {
                case (nil, nil): return nil
                case (nil, _): order = -1
                case (_, nil): order = 1
                case (let a?, let b?): guard let compared = compare(a, b) else { return nil }; order = compared
                }
                if order == 0 { return nil }
                if case .min = criterion { return order < 0 ? .local : .remote }
                return order > 0 ? .local : .remote
            case .maxTotal(let pattern):
                let total = { (value: SaveValue) in pattern.values(in: value).compactMap(\.numberValue).reduce(0, +) }
                let (a, b) = (total(local), total(remote))
                return a == b ? nil : (a > b ? .local : .remote)
            }
        }

        static func describe(_ criterion: SideCriterion) -> String {
            switch criterion {
            case .prefer(let condition): "the side where \(words(condition))"
            case .max(let pointer): "the higher \(pointer.displayText)"
            case .min(let pointer): "the lower \(pointer.displayText)"
            case .maxTotal(let pattern): "the higher total of \(pattern)"
            }
        }

        static func words(_ condition: Condition) -> String {
            switch condition {
            case .has(let pointer): "\(pointer.displayText) exists"
            case .missing(let pointer): "\(pointer.displayText) is missing"
            case .type(let pointer, let type): "\(pointer.displayText) is \(SaveValue.withArticle(type))"
            case .equals(let pointer, let value): "\(pointer.displayText) is \(value.compactText)"
            case .isClass(let pointer, let name): "\(pointer.displayText) is a \(name)"
            case .compare(let pointer, let comparison, _): "\(pointer.displayText) \(comparison.rawValue) the value given"
            case .all(let conditions): conditions.map(words).joined(separator: " and ")
            case .any(let conditions): conditions.map(words).joined(separator: " or ")
            case .not(let inner): "not (\(words(inner)))"
            }
        }
    }
}
