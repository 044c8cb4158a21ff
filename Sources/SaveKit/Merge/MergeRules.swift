import OrderedCollections

/// A kind's `merge.json` (formats.md): which policy merges which values.
///
/// ```json
/// {"format": "savetool.merge/1", "kind": "blocks.gamesave", "default": "ask",
///  "rules": [
///    {"group": ["/player/level", "/player/xp"], "policy": "lexMax"},
///    {"path": "/coins", "policy": "counter"},
///    {"path": "/unlockedThemes", "policy": "union"},
///    {"path": "/settings", "policy": "preferLocal"}]}
/// ```
///
/// A rule applies to the value at its path as a whole: once it decides, nothing below it is
/// merged field by field. A value no rule names is merged key by key when both sides are
/// objects, and otherwise by the `default` policy.
public struct MergeRules: Sendable {
    public var kind: String
    public var defaultPolicy: MergePolicy
    public var rules: [Rule] { didSet { split() } }
    /// `rules` split once: every value of a merge asks for its rule and its groups.
    private var valueRules: [Rule] = [], groupRules: [Rule] = []

    public struct Rule: Sendable {
        /// Where the rule applies; for a group, the object that holds all its members.
        public var path: PointerPattern
        /// A group's members, relative to `path`; empty for a rule on one value.
        public var members: [JSONPointer]
        public var policy: MergePolicy

        public init(path: PointerPattern, members: [JSONPointer] = [], policy: MergePolicy) {
            (self.path, self.members, self.policy) = (path, members, policy)
        }
    }

    public init(kind: String, defaultPolicy: MergePolicy = .ask, rules: [Rule]) {
        (self.kind, self.defaultPolicy, self.rules) = (kind, defaultPolicy, rules)
        split()
    }

    private mutating func split() {
        valueRules = rules.filter { $0.members.isEmpty }
        groupRules = rules.filter { !$0.members.isEmpty }
    }

    /// The most specific single-value rule whose path matches `pointer`.
    public func rule(at pointer: JSONPointer) -> Rule? {
        var best: Rule?
        for rule in valueRules where rule.path.matches(pointer) {
            if best == nil || rule.path.isMoreSpecific(than: best!.path) { best = rule }
        }
        return best
    }

    /// Whether a counter rule reaches below `pointer`.
    public func hasCounter(below pointer: JSONPointer) -> Bool {
        valueRules.contains { rule in
            guard case .counter = rule.policy, rule.path.tokens.count > pointer.tokens.count else { return false }
            return PointerPattern(tokens: Array(rule.path.tokens.prefix(pointer.tokens.count))).matches(pointer)
        }
    }

    /// The group rules held by the object at `pointer`.
    public func groups(at pointer: JSONPointer) -> [Rule] {
        groupRules.isEmpty ? [] : groupRules.filter { $0.path.matches(pointer) }
    }
}

extension MergeRules {
    /// Parses a merge.json document; errors name the place in it.
    public init(parsing document: SaveValue) throws(FormatDefinitionError) {
        func fail(_ path: [String], _ message: String) -> FormatDefinitionError { FormatDefinitionError(at: JSONPointer(tokens: path), message: message) }
        guard let top = document.dictionaryValue else { throw fail([], "\(document.typeNameWithArticle), expected the merge rules' object") }
        for key in top.keys where !["format", "kind", "default", "rules"].contains(key) {
            throw fail([key], "an unknown key, expected one of format, kind, default, rules")
        }
        guard top["format"]?.stringValue == "savetool.merge/1" else { throw fail(["format"], "expected \"savetool.merge/1\"") }
        guard let kind = top["kind"]?.stringValue, !kind.isEmpty else { throw fail(["kind"], "missing, expected the kind's name") }
        var defaultPolicy = MergePolicy.ask
        if let value = top["default"] {
            defaultPolicy = try Self.policy(named: value, at: ["default"], rule: [:], fail: fail)
        }
        guard let list = top["rules"]?.arrayValue else { throw fail(["rules"], "missing, expected an array of rules") }
        var rules: [Rule] = []
        // Each value in one group at most: two groups sharing a member would both be named by
        // it, and one answer would settle both. Wildcards count: `/players/*/level` and
        // `/players/0/level` share a value.
        var grouped: [(member: PointerPattern, rule: Int)] = []
        // Two rules for one path: the first would win in silence.
        var ruled: [PointerPattern: Int] = [:]
        for (index, item) in list.enumerated() {
            let at = ["rules", String(index)]
            guard let rule = item.dictionaryValue else { throw fail(at, "\(item.typeNameWithArticle), expected a rule object") }
            let known = ["path", "group", "policy", "clock", "key", "noBase", "by", "otherwise", "identity", "why"]
            for key in rule.keys where !known.contains(key) { throw fail(at + [key], "an unknown key, expected one of \(known.joined(separator: ", "))") }
            guard let policyName = rule["policy"] else { throw fail(at + ["policy"], "missing, expected a policy name") }
            let policy = try Self.policy(named: policyName, at: at + ["policy"], rule: rule, fail: fail)
            func pattern(_ value: SaveValue, at path: [String]) throws(FormatDefinitionError) -> PointerPattern {
                guard let text = value.stringValue else { throw fail(path, "\(value.typeNameWithArticle), expected a JSON Pointer") }
                do { return try PointerPattern(parsing: text) } catch { throw fail(path, "\(error)") }
            }
            switch (rule["path"], rule["group"]) {
            case (let path?, nil):
                let place = try pattern(path, at: at + ["path"])
                if let earlier = ruled[place] {
                    throw fail(at + ["path"], "\(place), which /rules/\(earlier) has a rule for already, expected one rule per path")
                }
                ruled[place] = index
                rules.append(Rule(path: place, policy: policy))
            case (nil, let group?):
                guard let items = group.arrayValue, !items.isEmpty else { throw fail(at + ["group"], "expected an array of JSON Pointers") }
                var members: [PointerPattern] = []
                for (position, item) in items.enumerated() {
                    let member = try pattern(item, at: at + ["group", String(position)])
                    if let earlier = grouped.first(where: { $0.member.overlaps(member) }) {
                        let shared = earlier.member == member ? "" : " (as \(earlier.member))"
                        throw fail(at + ["group", String(position)], "\(member), a member of the group of /rules/\(earlier.rule)\(shared) already, expected each value in one group at most")
                    }
                    grouped.append((member, index))
                    members.append(member)
                }
                // The group is held by the deepest object that holds every member.
                var anchor = Array(members[0].tokens.dropLast())
                for member in members.dropFirst() {
                    let parent = Array(member.tokens.dropLast())
                    var shared = 0
                    while shared < anchor.count, shared < parent.count, anchor[shared] == parent[shared] { shared += 1 }
                    anchor = Array(anchor.prefix(shared))
                }
                let relative = members.map { JSONPointer(tokens: Array($0.tokens.dropFirst(anchor.count))) }
                guard !relative.contains(where: { $0.tokens.contains("*") }) else {
                    throw fail(at + ["group"], "a wildcard below the members' shared parent, expected members that name one value each in that object")
                }
                guard case .lexMax = policy else { throw fail(at + ["policy"], "\"\(policy.name)\" for a group, expected \"lexMax\"") }
                rules.append(Rule(path: PointerPattern(tokens: anchor), members: relative, policy: policy))
            case (nil, nil): throw fail(at + ["path"], "missing, expected \"path\" (or \"group\")")
            case (_?, _?): throw fail(at + ["group"], "beside \"path\", expected one of them")
            }
        }
        self.init(kind: kind, defaultPolicy: defaultPolicy, rules: rules)
    }

    private static func policy(
        named value: SaveValue, at path: [String], rule: OrderedDictionary<String, SaveValue>, fail: ([String], String) -> FormatDefinitionError
    ) throws(FormatDefinitionError) -> MergePolicy {
        let names = ["preferLocal", "preferRemote", "latest", "max", "min", "lexMax", "counter", "union", "keyed", "pickSide", "ask"]
        guard let name = value.stringValue else { throw fail(path, "\(value.typeNameWithArticle), expected one of \(names.joined(separator: ", "))") }
        let base = Array(path.dropLast())
        // `default`, `noBase` and `otherwise` name a policy alone: one with parameters cannot be one.
        if rule.isEmpty, ["latest", "keyed", "pickSide", "lexMax"].contains(name) {
            throw fail(path, "\"\(name)\" needs a rule of its own, expected one of preferLocal, preferRemote, max, min, counter, union, ask")
        }
        // A parameter of another policy would be ignored in silence (an `identity` given to
        // `keyed` protects nothing).
        let owners = ["clock": "latest", "key": "keyed", "noBase": "counter", "by": "pickSide", "otherwise": "pickSide", "identity": "pickSide"]
        for key in rule.keys {
            if let owner = owners[key], owner != name { throw fail(base + [key], "a parameter of \(owner), not of \(name), expected none here") }
        }
        func pointer(_ key: String) throws(FormatDefinitionError) -> JSONPointer {
            guard let text = rule[key]?.stringValue else { throw fail(base + [key], "missing, expected a JSON Pointer for \"\(name)\"") }
            do { return try JSONPointer(parsing: text) } catch { throw fail(base + [key], "\(error)") }
        }
        func fallback(_ key: String) throws(FormatDefinitionError) -> MergePolicy? {
            guard let value = rule[key] else { return nil }
            let policy = try self.policy(named: value, at: base + [key], rule: [:], fail: fail)
            return policy
        }
        switch name {
        case "preferLocal": return .preferLocal
        case "preferRemote": return .preferRemote
        case "max": return .max
        case "min": return .min
        case "lexMax": return .lexMax
        case "union": return .union
        case "ask": return .ask
        case "latest": return .latest(clock: try pointer("clock"))
        case "keyed": return .keyed(key: try pointer("key"))
        case "counter": return .counter(noBase: try fallback("noBase"))
        case "pickSide":
            guard let list = rule["by"]?.arrayValue, !list.isEmpty else { throw fail(base + ["by"], "missing, expected an array of criteria") }
            var criteria: [SideCriterion] = []
            for (index, item) in list.enumerated() {
                let at = base + ["by", String(index)]
                let expected = "expected {\"prefer\": condition}, {\"max\": pointer}, {\"min\": pointer} or {\"maxTotal\": pattern}"
                guard let entry = item.dictionaryValue, entry.count == 1, let key = entry.keys.first else { throw fail(at, expected) }
                let payload = entry.values[0]
                func target() throws(FormatDefinitionError) -> JSONPointer {
                    guard let text = payload.stringValue else { throw fail(at + [key], "expected a JSON Pointer") }
                    do { return try JSONPointer(parsing: text) } catch { throw fail(at + [key], "\(error)") }
                }
                switch key {
                case "prefer": criteria.append(.prefer(try Condition(parsing: payload, at: at + [key])))
                case "max": criteria.append(.max(try target()))
                case "min": criteria.append(.min(try target()))
                case "maxTotal": criteria.append(.maxTotal(PointerPattern(tokens: try target().tokens)))
                default: throw fail(at + [key], "an unknown criterion, \(expected)")
                }
            }
            return .pickSide(by: criteria, otherwise: try fallback("otherwise"), identity: rule["identity"] == nil ? nil : try pointer("identity"))
        default:
            throw fail(path, "\"\(name)\", expected one of \(names.joined(separator: ", "))")
        }
    }
}
