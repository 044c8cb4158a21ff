import Foundation
import OrderedCollections

extension KeyedArchive {
    /// The archive's graph, resolved from `$top` (see ``KeyedArchive``). Errors name the place
    /// in the archive as a pointer into the property list: `/$objects/12/NS.objects/3`.
    public func view(maxDepth: Int = 512) throws(CodecError) -> SaveValue {
        var reader = ViewReader(objects: objects, maxDepth: maxDepth, recordingNodes: false)
        return try reader.read(top)
    }

    /// The view, with what writing it back needs: each object's uid by its view node.
    func resolved(maxDepth: Int = 512) throws(CodecError) -> (view: SaveValue, nodes: [SaveValue?], ids: [Int: Int]) {
        var reader = ViewReader(objects: objects, maxDepth: maxDepth, recordingNodes: true)
        let view = try reader.read(top)
        var ids: [Int: Int] = [:]
        for (uid, id) in reader.ids.enumerated() where id != 0 { ids[uid] = Int(id) }
        return (view, reader.nodes, ids)
    }
}

/// Resolves uids into the view, depth first from `$top`.
///
/// Tables are arrays indexed by uid, and places in the archive are kept as (object, key, index)
/// until an error needs them as a pointer: a 20 MB archive has a million fields.
struct ViewReader {
    let objects: [SaveValue]
    let maxDepth: Int
    /// Objects met from two places or more: each gets an `$id` where the view first meets it.
    var shared: [Bool]
    /// uid → the `$id` it was given (0: none).
    var ids: [Int32]
    var nextID: Int32 = 1
    /// uid → its node in the view, where the view first met it (what an unchanged edit is
    /// compared with); kept only for writing back.
    var nodes: [SaveValue?]
    let recordingNodes: Bool
    /// Class entries by uid, checked once: the name, and how the view shows the class.
    var classes: [Int: (name: String, view: SaveValue)] = [:]
    /// Bytes of strings and data the view holds: a string shared by many places is repeated
    /// at each, so a small archive could otherwise make a huge view.
    var expandedBytes = 0
    static let maxExpandedBytes = 256 << 20

    init(objects: [SaveValue], maxDepth: Int, recordingNodes: Bool) {
        (self.objects, self.maxDepth, self.recordingNodes) = (objects, maxDepth, recordingNodes)
        shared = Array(repeating: false, count: objects.count)
        ids = Array(repeating: 0, count: objects.count)
        nodes = recordingNodes ? Array(repeating: nil, count: objects.count) : []
    }

    /// Where a value sits in the archive: a key of `$top` (owner -1) or of object `owner`, and
    /// the index in that key's array.
    struct Place {
        var owner: Int
        var key: String
        var index: Int = -1

        var pointer: JSONPointer {
            var tokens = owner < 0 ? ["$top", key] : ["$objects", String(owner), key]
            if index >= 0 { tokens.append(String(index)) }
            return JSONPointer(tokens: tokens)
        }

        func at(_ index: Int) -> Place { Place(owner: owner, key: key, index: index) }
    }

    mutating func read(_ top: OrderedDictionary<String, SaveValue>) throws(CodecError) -> SaveValue {
        try countReferences(from: top)
        var view = OrderedDictionary<String, SaveValue>()
        for (name, value) in top {
            view[name] = try field(value, depth: 1, at: Place(owner: -1, key: name))
        }
        return .dictionary(view)
    }

    /// Finds the objects referred to more than once, without recursion (a hostile graph may be
    /// deep): an object reached twice is shared, and so is the object a cycle comes back to.
    private mutating func countReferences(from top: OrderedDictionary<String, SaveValue>) throws(CodecError) {
        var seen = Array(repeating: false, count: objects.count)
        var pending: [(SaveValue, Place)] = top.map { ($0.value, Place(owner: -1, key: $0.key)) }
        while let (value, place) = pending.popLast() {
            switch value {
            case .uid(let raw):
                let uid = try checked(raw, at: place)
                guard case .dictionary(let fields) = objects[uid], case .uid(let classUID)? = fields["$class"] else { continue }
                if try isDate(fields, classUID: classUID, at: place) { continue }
                if seen[uid] {
                    shared[uid] = true
                    continue
                }
                seen[uid] = true
                for (key, field) in fields where key != "$class" {
                    pending.append((field, Place(owner: uid, key: key)))
                }
            case .array(let elements):
                for (index, element) in elements.enumerated() { pending.append((element, place.at(index))) }
            default:
                continue
            }
        }
    }

    /// An `NSDate`, which the view shows as a value wherever it is, never as a shared object.
    private mutating func isDate(_ fields: OrderedDictionary<String, SaveValue>, classUID: UInt64, at place: Place) throws(CodecError) -> Bool {
        guard fields.count == 2, fields["NS.time"]?.numberValue != nil else { return false }
        return try className(try checked(classUID, at: place)).name == "NSDate"
    }

    private func checked(_ raw: UInt64, at place: Place) throws(CodecError) -> Int {
        guard raw < UInt64(objects.count) else {
            throw KeyedArchive.malformed(place.pointer, objects.isEmpty ? "uid \(raw), and $objects is empty" : "uid \(raw), past the last object (\(objects.count - 1))", "a uid of an entry of $objects")
        }
        return Int(raw)
    }

    /// A value held in an object's field (or in `$top`): a uid is resolved, anything else is itself.
    private mutating func field(_ value: SaveValue, depth: Int, at place: Place) throws(CodecError) -> SaveValue {
        switch value {
        case .uid(let raw): return try object(try checked(raw, at: place), depth: depth, at: place)
        case .array(let elements):
            var resolved: [SaveValue] = []
            resolved.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                resolved.append(try field(element, depth: depth + 1, at: place.at(index)))
            }
            return .array(resolved)
        case .dictionary:
            throw KeyedArchive.malformed(place.pointer, "a dictionary held in a field", "a value or a uid of an archived object")
        default:
            return value
        }
    }

    private mutating func object(_ uid: Int, depth: Int, at place: Place) throws(CodecError) -> SaveValue {
        guard depth <= maxDepth else {
            throw .limitExceeded(codec: "keyed", at: .pointer(place.pointer), found: "objects nested more than \(maxDepth) deep", expected: "at most \(maxDepth)")
        }
        let entry = objects[uid]
        guard case .dictionary(let fields) = entry else {
            switch entry {
            // Only uid 0 is nil, as in Foundation: a `$null` elsewhere in the table is the string.
            case .string("$null") where uid == 0: return .null
            case .array, .uid:
                throw KeyedArchive.malformed(JSONPointer(tokens: ["$objects", String(uid)]), "\(entry.typeNameWithArticle) in the object table", "a string, number, data or an object with $class")
            default:
                switch entry {
                case .string(let text): expandedBytes += text.utf8.count
                case .data(let data): expandedBytes += data.count
                default: expandedBytes += 8
                }
                guard expandedBytes <= Self.maxExpandedBytes else {
                    throw .limitExceeded(
                        codec: "keyed", at: .pointer(place.pointer), found: "shared strings and data repeated past \(Self.maxExpandedBytes >> 20) MiB in the view",
                        expected: "at most \(Self.maxExpandedBytes >> 20) MiB")
                }
                if recordingNodes { nodes[uid] = entry }
                return entry
            }
        }
        if ids[uid] != 0 { return .dictionary(["$ref": .integer(Int64(ids[uid]))]) }
        guard case .uid(let classUID)? = fields["$class"] else {
            // A uid that leads to a class entry is the archive's mistake, not the class's.
            let found = fields["$classname"] != nil ? "a class entry, where an object is expected" : "an object without $class"
            throw KeyedArchive.malformed(JSONPointer(tokens: ["$objects", String(uid)]), found, "every archived object to name its class")
        }
        let (name, classView) = try className(try checked(classUID, at: Place(owner: uid, key: "$class")))
        if shared[uid] {
            ids[uid] = nextID
            nextID += 1
        }
        let node = try body(of: fields, name: name, classView: classView, uid: uid, depth: depth)
        if recordingNodes { nodes[uid] = node }
        return node
    }

    /// What the view shows for the object `fields` of class `name`.
    private mutating func body(
        of fields: OrderedDictionary<String, SaveValue>, name: String, classView: SaveValue, uid: Int, depth: Int
    ) throws(CodecError) -> SaveValue {
        let id: SaveValue? = ids[uid] == 0 ? nil : .integer(Int64(ids[uid]))
        let usual = classView == .string(name)
        var view = OrderedDictionary<String, SaveValue>()
        view["$class"] = classView
        if let id { view["$id"] = id }

        // Foundation's collections and dates are told by their class name: some archivers (Python's
        // bpylist2) write a shorter class chain than Foundation does, and the chain is kept in `$class`.
        if KeyedArchive.arrayClasses.contains(name), fields.count == 2, case .array(let members)? = fields["NS.objects"] {
            var items: [SaveValue] = []
            items.reserveCapacity(members.count)
            let place = Place(owner: uid, key: "NS.objects")
            for (index, member) in members.enumerated() {
                items.append(try element(member, depth: depth + 1, at: place.at(index)))
            }
            if name == "NSArray", usual, id == nil { return .array(items) }
            view["$items"] = .array(items)
            return .dictionary(view)
        }
        if KeyedArchive.dictionaryClasses.contains(name), fields.count == 3, case .array(let keys)? = fields["NS.keys"],
            case .array(let values)? = fields["NS.objects"], keys.count == values.count
        {
            var pairs: [(SaveValue, SaveValue)] = []
            pairs.reserveCapacity(keys.count)
            for index in keys.indices {
                let key = try element(keys[index], depth: depth + 1, at: Place(owner: uid, key: "NS.keys", index: index))
                let value = try element(values[index], depth: depth + 1, at: Place(owner: uid, key: "NS.objects", index: index))
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
        // Any other object: its fields beside its class. One of a class the view reads as a
        // collection, dictionary or date that does not have that form (a damaged or unusual
        // archive) keeps its fields under `$fields`, so that it is written back as it was.
        var members = OrderedDictionary<String, SaveValue>()
        let interpreted = KeyedArchive.arrayClasses.contains(name) || KeyedArchive.dictionaryClasses.contains(name) || name == "NSDate"
        for (key, value) in fields where key != "$class" {
            members[interpreted ? key : KeyedArchive.viewName(ofField: key)] = try field(value, depth: depth + 1, at: Place(owner: uid, key: key))
        }
        if interpreted {
            view["$fields"] = .dictionary(members)
        } else {
            view.merge(members) { $1 }
        }
        return .dictionary(view)
    }

    /// A member of a collection: a uid, as `NSKeyedArchiver` writes every member.
    private mutating func element(_ value: SaveValue, depth: Int, at place: Place) throws(CodecError) -> SaveValue {
        guard case .uid(let raw) = value else {
            throw KeyedArchive.malformed(place.pointer, "\(value.typeNameWithArticle)", "the uid of a member")
        }
        return try object(try checked(raw, at: place), depth: depth, at: place)
    }

    /// The class an object names, and how the view shows it: the name alone when the archive
    /// holds its usual chain, else the class entry whole.
    private mutating func className(_ uid: Int) throws(CodecError) -> (name: String, view: SaveValue) {
        if let known = classes[uid] { return known }
        let place = JSONPointer(tokens: ["$objects", String(uid)])
        guard case .dictionary(let info) = objects[uid] else {
            throw KeyedArchive.malformed(place, "\(objects[uid].typeNameWithArticle) where a class was expected", "a dictionary with $classname")
        }
        if let problem = KeyedArchive.classEntryProblem(info) {
            throw KeyedArchive.malformed(JSONPointer(tokens: place.tokens + (problem.key.map { [$0] } ?? [])), problem.found, problem.expected)
        }
        let name = info["$classname"]!.stringValue!
        let known = (name, KeyedArchive.classView(name: name, entry: info))
        classes[uid] = known
        return known
    }
}
