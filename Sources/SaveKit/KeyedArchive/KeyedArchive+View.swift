import Foundation
import OrderedCollections

extension KeyedArchive {
    /// The archive's graph, resolved from `$top` (see ``KeyedArchive``). Errors name the place
    /// in the archive as a pointer into the property list: `/$objects/12/NS.objects/3`.
    public func view(maxDepth: Int = 512) throws(CodecError) -> SaveValue {
        var reader = ViewReader(objects: objects, maxDepth: maxDepth)
        return try reader.read(top)
    }

    /// The view, with what writing it back needs: each object's uid by its view node.
    func resolved(maxDepth: Int = 512) throws(CodecError) -> (view: SaveValue, nodes: [Int: SaveValue], ids: [Int: Int]) {
        var reader = ViewReader(objects: objects, maxDepth: maxDepth)
        let view = try reader.read(top)
        return (view, reader.nodes, reader.ids)
    }
}

/// Resolves uids into the view, depth first from `$top`.
struct ViewReader {
    let objects: [SaveValue]
    let maxDepth: Int
    /// Objects met from two places or more: each gets an `$id` where the view first meets it.
    var shared: Set<Int> = []
    /// uid → the `$id` it was given.
    var ids: [Int: Int] = [:]
    /// uid → its node in the view, where the view first met it (what an unchanged edit is compared with).
    var nodes: [Int: SaveValue] = [:]

    init(objects: [SaveValue], maxDepth: Int) {
        (self.objects, self.maxDepth) = (objects, maxDepth)
    }

    mutating func read(_ top: OrderedDictionary<String, SaveValue>) throws(CodecError) -> SaveValue {
        try countReferences(from: top)
        var view = OrderedDictionary<String, SaveValue>()
        for (name, value) in top {
            view[name] = try field(value, depth: 1, at: JSONPointer(tokens: ["$top", name]))
        }
        return .dictionary(view)
    }

    /// Finds the objects referred to more than once, without recursion (a hostile graph may be
    /// deep): an object reached twice is shared, and so is the object a cycle comes back to.
    private mutating func countReferences(from top: OrderedDictionary<String, SaveValue>) throws(CodecError) {
        var seen = Set<Int>()
        var pending: [(SaveValue, JSONPointer)] = top.map { ($0.value, JSONPointer(tokens: ["$top", $0.key])) }
        while let (value, at) = pending.popLast() {
            switch value {
            case .uid(let raw):
                let uid = try checked(raw, at: at)
                guard case .dictionary(let fields) = objects[uid], fields["$class"] != nil, !isDate(fields) else { continue }
                if !seen.insert(uid).inserted {
                    shared.insert(uid)
                    continue
                }
                for (key, field) in fields where key != "$class" {
                    pending.append((field, JSONPointer(tokens: ["$objects", String(uid), key])))
                }
            case .array(let elements):
                for (index, element) in elements.enumerated() { pending.append((element, JSONPointer(tokens: at.tokens + [String(index)]))) }
            default:
                continue
            }
        }
    }

    /// An `NSDate`, which the view shows as a value wherever it is, never as a shared object.
    private func isDate(_ fields: OrderedDictionary<String, SaveValue>) -> Bool {
        guard fields.count == 2, fields["NS.time"]?.numberValue != nil, case .uid(let classUID)? = fields["$class"], classUID < objects.count,
            case .dictionary(let info) = objects[Int(classUID)]
        else { return false }
        return info["$classname"] == .string("NSDate")
    }

    private func checked(_ raw: UInt64, at: JSONPointer) throws(CodecError) -> Int {
        guard raw < UInt64(objects.count) else {
            throw KeyedArchive.malformed(at, "uid \(raw), past the last object (\(objects.count - 1))", "a uid of an entry of $objects")
        }
        return Int(raw)
    }

    /// A value held in an object's field (or in `$top`): a uid is resolved, anything else is itself.
    private mutating func field(_ value: SaveValue, depth: Int, at: JSONPointer) throws(CodecError) -> SaveValue {
        switch value {
        case .uid(let raw): return try object(try checked(raw, at: at), depth: depth, at: at)
        case .array(let elements):
            var resolved: [SaveValue] = []
            resolved.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                resolved.append(try field(element, depth: depth + 1, at: JSONPointer(tokens: at.tokens + [String(index)])))
            }
            return .array(resolved)
        case .dictionary:
            throw KeyedArchive.malformed(at, "a dictionary held in a field", "a value or a uid of an archived object")
        default:
            return value
        }
    }

    private mutating func object(_ uid: Int, depth: Int, at: JSONPointer) throws(CodecError) -> SaveValue {
        guard depth <= maxDepth else {
            throw .limitExceeded(codec: "keyed", at: .pointer(at), found: "objects nested more than \(maxDepth) deep", expected: "at most \(maxDepth)")
        }
        let entry = objects[uid]
        let place = JSONPointer(tokens: ["$objects", String(uid)])
        guard case .dictionary(let fields) = entry else {
            switch entry {
            case .string("$null"): return .null
            case .array, .uid:
                throw KeyedArchive.malformed(place, "\(entry.typeNameWithArticle) in the object table", "a string, number, data or an object with $class")
            default:
                nodes[uid] = entry
                return entry
            }
        }
        if let id = ids[uid] { return .dictionary(["$ref": .integer(Int64(id))]) }
        guard case .uid(let classUID)? = fields["$class"] else {
            throw KeyedArchive.malformed(place, "an object without $class", "every archived object to name its class")
        }
        let (name, classView) = try className(try checked(classUID, at: JSONPointer(tokens: place.tokens + ["$class"])))
        if shared.contains(uid) { ids[uid] = ids.count + 1 }
        let node = try body(of: fields, name: name, classView: classView, uid: uid, depth: depth, at: place)
        nodes[uid] = node
        return node
    }

    /// What the view shows for the object `fields` of class `name`.
    private mutating func body(
        of fields: OrderedDictionary<String, SaveValue>, name: String, classView: SaveValue, uid: Int, depth: Int, at place: JSONPointer
    ) throws(CodecError) -> SaveValue {
        let id = ids[uid].map { SaveValue.integer(Int64($0)) }
        let usual = classView == .string(name)
        var view = OrderedDictionary<String, SaveValue>()
        view["$class"] = classView
        if let id { view["$id"] = id }

        // Foundation's collections and dates are told by their class name: some archivers (Python's
        // bpylist2) write a shorter class chain than Foundation does, and the chain is kept in `$class`.
        if KeyedArchive.arrayClasses.contains(name), fields.count == 2, case .array(let members)? = fields["NS.objects"] {
            var items: [SaveValue] = []
            items.reserveCapacity(members.count)
            for (index, member) in members.enumerated() {
                items.append(try element(member, depth: depth + 1, at: JSONPointer(tokens: place.tokens + ["NS.objects", String(index)])))
            }
            if name == "NSArray", usual, id == nil { return .array(items) }
            view["$items"] = .array(items)
            return .dictionary(view)
        }
        if KeyedArchive.dictionaryClasses.contains(name), fields.count == 3, case .array(let keys)? = fields["NS.keys"],
            case .array(let values)? = fields["NS.objects"], keys.count == values.count
        {
            var pairs: [(SaveValue, SaveValue)] = []
            for index in keys.indices {
                let key = try element(keys[index], depth: depth + 1, at: JSONPointer(tokens: place.tokens + ["NS.keys", String(index)]))
                let value = try element(values[index], depth: depth + 1, at: JSONPointer(tokens: place.tokens + ["NS.objects", String(index)]))
                pairs.append((key, value))
            }
            let byName = pairs.allSatisfy { if case .string(let key) = $0.0 { !key.hasPrefix("$") } else { false } }
            if byName, Set(pairs.map { $0.0.stringValue! }).count == pairs.count {
                if name == "NSDictionary", usual, id == nil {
                    return .dictionary(OrderedDictionary(uniqueKeysWithValues: pairs.map { ($0.0.stringValue!, $0.1) }))
                }
                for (key, value) in pairs { view[key.stringValue!] = value }
            } else {
                view["$pairs"] = .array(pairs.map { .array([$0.0, $0.1]) })
            }
            return .dictionary(view)
        }
        // A date is a date whatever its class chain: written back, it gets Foundation's own.
        if name == "NSDate", fields.count == 2, let time = fields["NS.time"]?.numberValue {
            return .date(Date(timeIntervalSinceReferenceDate: time))
        }
        for (key, value) in fields where key != "$class" {
            view[KeyedArchive.viewName(ofField: key)] = try field(value, depth: depth + 1, at: JSONPointer(tokens: place.tokens + [key]))
        }
        return .dictionary(view)
    }

    /// A member of a collection: a uid, as `NSKeyedArchiver` writes every member.
    private mutating func element(_ value: SaveValue, depth: Int, at: JSONPointer) throws(CodecError) -> SaveValue {
        guard case .uid(let raw) = value else {
            throw KeyedArchive.malformed(at, "\(value.typeNameWithArticle)", "the uid of a member")
        }
        return try object(try checked(raw, at: at), depth: depth, at: at)
    }

    /// The class an object names, and how the view shows it: the name alone when the archive
    /// holds its usual chain, else the class entry whole.
    private func className(_ uid: Int) throws(CodecError) -> (String, SaveValue) {
        let place = JSONPointer(tokens: ["$objects", String(uid)])
        guard case .dictionary(let info) = objects[uid], case .string(let name)? = info["$classname"] else {
            throw KeyedArchive.malformed(place, "\(objects[uid].typeNameWithArticle) where a class was expected", "a dictionary with $classname")
        }
        guard info["$class"] == nil else {
            throw KeyedArchive.malformed(JSONPointer(tokens: place.tokens + ["$class"]), "a class with a $class of its own (a loop through $class)", "a class entry with $classname and $classes")
        }
        if let chain = info["$classes"] {
            guard case .array(let names) = chain, names.allSatisfy({ $0.stringValue != nil }) else {
                throw KeyedArchive.malformed(JSONPointer(tokens: place.tokens + ["$classes"]), "\(chain.typeNameWithArticle)", "an array of class names")
            }
            if Set(names.compactMap(\.stringValue)).count != names.count {
                throw KeyedArchive.malformed(JSONPointer(tokens: place.tokens + ["$classes"]), "a class chain that names a class twice (a loop)", "each class once")
            }
        }
        let usual = info.count == 2 && info["$classes"] == .array(KeyedArchive.usualChain(of: name).map(SaveValue.string))
        return (name, usual ? .string(name) : .dictionary(info))
    }
}
