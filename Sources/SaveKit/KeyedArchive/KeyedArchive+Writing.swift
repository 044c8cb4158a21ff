import Foundation
import OrderedCollections

extension KeyedArchive {
    /// How a view is written back.
    public struct WritingOptions: Sendable {
        /// A value of another type may stand where one stood (a date where an `NSNumber` was);
        /// without it such an edit is refused with its pointer, since the app's `initWithCoder:`
        /// would fail on it.
        public var retype = false
        public init() {}
    }

    /// This archive with its graph replaced by `view` (an edited ``view(maxDepth:)``). Objects
    /// the edit left as they were keep their uids and their place in `$objects`; an object that
    /// changed is rewritten where it was; new objects go at the end.
    public func archive(replacingViewWith view: SaveValue, options: WritingOptions = WritingOptions()) throws(CodecError) -> SaveValue {
        let nodes: [SaveValue?], ids: [Int: Int]
        if let resolution {
            (nodes, ids) = resolution
        } else {
            (_, nodes, ids) = try resolved()
        }
        var writer = ViewWriter(objects: objects, nodes: nodes, oldIDs: ids, options: options)
        let newTop = try writer.writeTop(view, original: top)
        guard case .dictionary(var fields) = plist else { return plist }
        fields["$top"] = .dictionary(newTop)
        fields["$objects"] = .array(writer.objects)
        return .dictionary(fields)
    }

    /// A new keyed archive of `view`, as `NSKeyedArchiver` would write it: `$null` first, then
    /// the objects in the order the view meets them.
    public static func archive(_ view: SaveValue, options: WritingOptions = WritingOptions()) throws(CodecError) -> SaveValue {
        var writer = ViewWriter(objects: [.string("$null")], nodes: [], oldIDs: [:], options: options)
        let top = try writer.writeTop(view, original: [:])
        return .dictionary([
            "$version": .integer(100_000), "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(top), "$objects": .array(writer.objects),
        ])
    }
}

/// Writes a view into an object table, walking the original graph beside it.
struct ViewWriter {
    var objects: [SaveValue]
    /// uid → the view node the original archive showed for it (empty for a new archive).
    let nodes: [SaveValue?]
    let options: KeyedArchive.WritingOptions
    /// `$id` → the uid that holds it; ids of the original first, so that `$ref`s left as they were still meet their objects.
    var uidOfID: [Int: Int] = [:]
    /// Uids referred to from more than one place in the original: never rewritten in place
    /// for an edit made at one of them (a shared string stays as the other place had it).
    var references: [Int: Int] = [:]
    /// Ids a `$ref` named before any object declared them, with the first such place.
    var awaited: [Int: JSONPointer] = [:]
    /// uid → the `$id` the original view gave it: a shared object is rewritten in place only
    /// where the view still declares it.
    var oldIDOf: [Int: Int] = [:]
    /// Entries rewritten during this write: an old view node no longer describes them.
    var rewritten = Set<Int>()
    /// Ids declared so far: each once.
    var declared = Set<Int>()
    /// The uid of each class entry, by its view (`"GKPlayer"`, or the entry whole).
    var classUIDs: [String: Int] = [:]

    init(objects: [SaveValue], nodes: [SaveValue?], oldIDs: [Int: Int], options: KeyedArchive.WritingOptions) {
        (self.objects, self.nodes, self.options) = (objects, nodes, options)
        for (uid, id) in oldIDs { uidOfID[id] = uid }
        oldIDOf = oldIDs
        for (uid, object) in objects.enumerated() {
            guard case .dictionary(let fields) = object else { continue }
            if case .string(let name)? = fields["$classname"] {
                let key = Self.classKey(KeyedArchive.classView(name: name, entry: fields))
                classUIDs[key] = classUIDs[key] ?? uid
                continue
            }
            for (key, value) in fields where key != "$class" { count(value) }
        }
    }

    /// The view node of `uid` in the original, if the view met it.
    /// `.none` past the end (not `nil`, which a SaveValue? ternary reads as `.null`).
    private func node(_ uid: Int) -> SaveValue? { uid < nodes.count ? nodes[uid] : .none }

    private mutating func count(_ value: SaveValue) {
        switch value {
        // A uid past Int (unreachable: the view refused any reachable one) counts for nothing.
        case .uid(let uid): if let uid = Int(exactly: uid) { references[uid, default: 0] += 1 }
        case .array(let elements): for element in elements { count(element) }
        default: break
        }
    }

    mutating func writeTop(_ view: SaveValue, original: OrderedDictionary<String, SaveValue>) throws(CodecError) -> OrderedDictionary<String, SaveValue> {
        for value in original.values { count(value) }
        guard case .dictionary(let roots) = view else {
            throw .unrepresentable(codec: "keyed", at: JSONPointer(), found: view.typeNameWithArticle, expected: "a dictionary of the archive's roots, such as {\"root\": …}")
        }
        var top = OrderedDictionary<String, SaveValue>()
        for (name, value) in roots {
            top[name] = try field(value, original: original[name], at: JSONPointer(tokens: [name]))
        }
        if let (id, place) = awaited.min(by: { $0.key < $1.key }) {
            throw .unrepresentable(codec: "keyed", at: place, found: "{\"$ref\": \(id)}, and no object has \"$id\": \(id)", expected: "a $ref to an object of the view")
        }
        return top
    }

    // MARK: Values

    /// What a field holds for `view`: a number or bool inline where one was inline (or is new),
    /// anything else by uid.
    private mutating func field(_ view: SaveValue, original: SaveValue?, at: JSONPointer) throws(CodecError) -> SaveValue {
        switch original {
        case .uid?, nil:
            if original == nil, Self.family(view) == .number { return view }
            return .uid(UInt64(try object(view, original: original?.uidValue, at: at)))
        case .array(let elements)?:
            // An inline array (`encodeArrayOfObjects`): written back inline, member by member.
            guard case .array(let items) = view else {
                try refuseRetype(view, where: .array(elements), at: at)
                return .uid(UInt64(try object(view, original: nil, at: at)))
            }
            var members: [SaveValue] = []
            for (index, item) in items.enumerated() {
                members.append(try field(item, original: index < elements.count ? elements[index] : .none, at: JSONPointer(tokens: at.tokens + [String(index)])))
            }
            return .array(members)
        case let inline?:
            if Self.family(view) == Self.family(inline), !view.isContainer { return view }
            // A nil where a number was inline: the app's decodeInteger:forKey: would not read it.
            if case .null = view, !options.retype {
                throw .unrepresentable(codec: "keyed", at: at, found: "null where the archive held \(inline.typeNameWithArticle)", expected: "\(inline.typeNameWithArticle), as the app's decoder reads it")
            }
            try refuseRetype(view, where: inline, at: at)
            return Self.family(view) == .number ? view : .uid(UInt64(try object(view, original: nil, at: at)))
        }
    }

    /// The uid that holds `view`: the original's own when nothing changed, the original's place
    /// rewritten when it changed, or a new entry.
    private mutating func object(_ view: SaveValue, original given: Int?, at: JSONPointer) throws(CodecError) -> Int {
        var original = given.flatMap { $0 < objects.count ? $0 : nil }
        if case .dictionary(let fields) = view, let reference = fields["$ref"] {
            // A $ref stands for the object declared elsewhere; an edit made through it (a key
            // beside it) would be lost, so it is refused.
            guard fields.count == 1, case .integer(let id) = reference else {
                throw .unrepresentable(
                    codec: "keyed", at: at, found: "{\"$ref\": \(reference.compactText)} with other keys beside it",
                    expected: "{\"$ref\": n} alone: edit the object where it is written with its \"$id\"")
            }
            guard let uid = uidOfID[Int(id)] else {
                // A reference ahead of its object: its uid is taken now and filled when the object comes.
                objects.append(.string("$null"))
                uidOfID[Int(id)] = objects.count - 1
                awaited[Int(id)] = at
                return objects.count - 1
            }
            return uid
        }
        if let rewrittenAlready = original, rewritten.contains(rewrittenAlready) { original = nil }
        if let original {
            let shown = node(original)
            if shown == view {
                if let id = oldIDOf[original] { declared.insert(id) }
                return original
            }
            // refuseRetype lets null stand anywhere (a nil reference).
            let old = shown ?? objects[original]
            if Self.family(old) != Self.family(view) { try refuseRetype(view, where: old, at: at) }
        }
        if case .null = view { return try nullUID(at: at) }
        let declaredID: Int? = if case .dictionary(let fields) = view, case .integer(let id)? = fields["$id"] { Int(id) } else { nil }
        // Rewritten where it was, when that place is this value's alone: an object is one object
        // in the view too (its edits are meant for every place that shows it), but a string or a
        // date that two places share is shown at each, and edited at one.
        var inPlace: Int?
        if let original, original != 0 {
            let shownAsObject = node(original)?.isContainer ?? false
            if let oldID = oldIDOf[original] {
                // A shared object: only where the view still declares it (elsewhere another
                // object now stands where it was, and the other places keep it).
                if declaredID == oldID { inPlace = original }
            } else if shownAsObject || (references[original] ?? 0) <= 1 {
                inPlace = original
            }
        }
        if let declaredID {
            guard declared.insert(declaredID).inserted else {
                throw .unrepresentable(codec: "keyed", at: at, found: "a second object with \"$id\": \(declaredID)", expected: "each $id once")
            }
        }
        let uid: Int
        if let declaredID, awaited[declaredID] != nil, let reserved = uidOfID[declaredID] {
            uid = reserved  // a $ref met it first, and took its uid
        } else if let inPlace {
            uid = inPlace
        } else {
            objects.append(.string("$null"))
            uid = objects.count - 1
        }
        if let declaredID {
            uidOfID[declaredID] = uid
            awaited[declaredID] = nil
        }
        rewritten.insert(uid)
        objects[uid] = try entry(for: view, replacing: inPlace.map { objects[$0] }, at: at)
        return uid
    }

    /// The `$objects` entry for `view`.
    private mutating func entry(for view: SaveValue, replacing old: SaveValue?, at: JSONPointer) throws(CodecError) -> SaveValue {
        switch view {
        case .string, .integer, .unsignedInteger, .real, .bool, .data:
            return view
        case .date(let date):
            return Self.keepingOrder(of: old, ["NS.time": .real(date.timeIntervalSinceReferenceDate), "$class": .uid(UInt64(classUID(.string("NSDate"))))])
        case .array(let items):
            return try collection(items, className: .string("NSArray"), replacing: old, at: at)
        case .dictionary(let fields):
            return try dictionaryEntry(fields, replacing: old, at: at)
        case .uid, .null:
            throw .unrepresentable(codec: "keyed", at: at, found: view.typeNameWithArticle, expected: "a value or an object")
        }
    }

    private mutating func dictionaryEntry(_ fields: OrderedDictionary<String, SaveValue>, replacing old: SaveValue?, at: JSONPointer) throws(CodecError) -> SaveValue {
        let className = fields["$class"] ?? .string("NSDictionary")
        let name = try Self.checkedClassName(className, at: JSONPointer(tokens: at.tokens + ["$class"]))
        if let members = fields["$fields"] {
            guard case .dictionary(let raw) = members else {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$fields"]), found: members.typeNameWithArticle, expected: "a dictionary of the object's fields")
            }
            return try object(fields: raw, className: className, replacing: old, at: JSONPointer(tokens: at.tokens + ["$fields"]), escaped: false)
        }
        if let items = fields["$items"] {
            // What the reader shows as `$items` it reads back only for a collection class.
            guard KeyedArchive.arrayClasses.contains(name) else {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$items"]), found: "$items in an object of class \(name)", expected: "$items only in \(KeyedArchive.arrayClasses.sorted().joined(separator: ", ")), or $fields")
            }
            guard case .array(let members) = items else {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$items"]), found: items.typeNameWithArticle, expected: "an array of members")
            }
            return try collection(members, className: className, replacing: old, at: JSONPointer(tokens: at.tokens + ["$items"]))
        }
        if KeyedArchive.dictionaryClasses.contains(name) {
            return try dictionary(fields, className: className, replacing: old, at: at)
        }
        if fields["$pairs"] != nil {
            throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$pairs"]), found: "$pairs in an object of class \(name)", expected: "$pairs only in NSDictionary or NSMutableDictionary")
        }
        var named = OrderedDictionary<String, SaveValue>()
        for (key, value) in fields where !KeyedArchive.viewKeys.contains(key) { named[KeyedArchive.fieldName(ofViewKey: key)] = value }
        return try object(fields: named, className: className, replacing: old, at: at, escaped: true)
    }

    /// An object of the app's own class (or one kept as `$fields`): its fields in the view's
    /// order, which is the archive's for those it had (a field renamed in the view keeps its
    /// place), and `$class` where it stood (last in a new object).
    private mutating func object(
        fields: OrderedDictionary<String, SaveValue>, className: SaveValue, replacing old: SaveValue?, at: JSONPointer, escaped: Bool
    ) throws(CodecError) -> SaveValue {
        var oldFields = OrderedDictionary<String, SaveValue>()
        if case .dictionary(let entry)? = old { oldFields = entry }
        var entry = OrderedDictionary<String, SaveValue>()
        for (name, value) in fields {
            entry[name] = try field(value, original: oldFields[name], at: JSONPointer(tokens: at.tokens + [escaped ? KeyedArchive.viewName(ofField: name) : name]))
        }
        let classUID = SaveValue.uid(UInt64(classUID(className)))
        if let place = oldFields.index(forKey: "$class"), place < entry.count {
            entry.updateValue(classUID, forKey: "$class", insertingAt: place)
        } else {
            entry["$class"] = classUID
        }
        return .dictionary(entry)
    }

    private mutating func collection(_ items: [SaveValue], className: SaveValue, replacing old: SaveValue?, at: JSONPointer) throws(CodecError) -> SaveValue {
        var oldMembers: [SaveValue] = []
        if case .dictionary(let entry)? = old, case .array(let members)? = entry["NS.objects"] { oldMembers = members }
        var members: [SaveValue] = []
        for (index, item) in items.enumerated() {
            let original = index < oldMembers.count ? oldMembers[index].uidValue : nil
            members.append(.uid(UInt64(try object(item, original: original, at: JSONPointer(tokens: at.tokens + [String(index)])))))
        }
        return Self.keepingOrder(of: old, ["NS.objects": .array(members), "$class": .uid(UInt64(classUID(className)))])
    }

    private mutating func dictionary(_ fields: OrderedDictionary<String, SaveValue>, className: SaveValue, replacing old: SaveValue?, at: JSONPointer) throws(CodecError) -> SaveValue {
        // The original's pairs by key, so that an unchanged key or value keeps its uid.
        var oldPairs: [String: (key: Int, value: Int)] = [:]
        if case .dictionary(let entry)? = old, case .array(let keys)? = entry["NS.keys"], case .array(let values)? = entry["NS.objects"], keys.count == values.count {
            for (key, value) in zip(keys, values) {
                guard let keyUID = key.uidValue, let valueUID = value.uidValue, keyUID < objects.count else { continue }
                oldPairs[(node(keyUID) ?? objects[keyUID]).compactText] = (keyUID, valueUID)
            }
        }
        var pairs: [(SaveValue, SaveValue, JSONPointer)] = []
        if let listed = fields["$pairs"] {
            guard case .array(let entries) = listed else {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$pairs"]), found: listed.typeNameWithArticle, expected: "an array of [key, value] pairs")
            }
            for (index, pair) in entries.enumerated() {
                guard case .array(let both) = pair, both.count == 2 else {
                    throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$pairs", String(index)]), found: pair.typeNameWithArticle, expected: "a [key, value] pair")
                }
                pairs.append((both[0], both[1], JSONPointer(tokens: at.tokens + ["$pairs", String(index)])))
            }
        } else {
            for (key, value) in fields where !KeyedArchive.viewKeys.contains(key) {
                pairs.append((.string(key), value, JSONPointer(tokens: at.tokens + [key])))
            }
        }
        var keys: [SaveValue] = [], values: [SaveValue] = []
        for (key, value, place) in pairs {
            let old = oldPairs[key.compactText]
            keys.append(.uid(UInt64(try object(key, original: old?.key, at: place))))
            values.append(.uid(UInt64(try object(value, original: old?.value, at: place))))
        }
        return Self.keepingOrder(of: old, ["NS.keys": .array(keys), "NS.objects": .array(values), "$class": .uid(UInt64(classUID(className)))])
    }

    // MARK: -

    /// `fields` in the order of the entry they replace, when it had the same keys: an object
    /// whose members did not change is then the same entry.
    private static func keepingOrder(of old: SaveValue?, _ fields: OrderedDictionary<String, SaveValue>) -> SaveValue {
        guard case .dictionary(var entry)? = old, entry.count == fields.count, fields.keys.allSatisfy({ entry[$0] != nil }) else { return .dictionary(fields) }
        for (key, value) in fields { entry[key] = value }
        return .dictionary(entry)
    }

    /// Nil is uid 0, `$null`. An archive whose first entry is something else has no nil to
    /// refer to: a null there cannot be written.
    private func nullUID(at: JSONPointer) throws(CodecError) -> Int {
        guard objects.first == .string("$null") else {
            throw .unrepresentable(codec: "keyed", at: at, found: "null in an archive without $null first in its table", expected: "a value")
        }
        return 0
    }

    private mutating func classUID(_ view: SaveValue) -> Int {
        if let known = classUIDs[Self.classKey(view)] { return known }
        if case .string(let name) = view { objects.append(KeyedArchive.usualClassEntry(name)) } else { objects.append(view) }
        classUIDs[Self.classKey(view)] = objects.count - 1
        return objects.count - 1
    }

    /// The name of a class as a view gives it: a name, or a class entry that the reader would
    /// take (``KeyedArchive/classEntryProblem(_:)``), with a name that is not empty.
    static func checkedClassName(_ view: SaveValue, at: JSONPointer) throws(CodecError) -> String {
        switch view {
        case .string(let name) where !name.isEmpty:
            return name
        case .dictionary(let info):
            if let problem = KeyedArchive.classEntryProblem(info) {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + (problem.key.map { [$0] } ?? [])), found: problem.found, expected: problem.expected)
            }
            guard let name = info["$classname"]?.stringValue, !name.isEmpty else {
                throw .unrepresentable(codec: "keyed", at: JSONPointer(tokens: at.tokens + ["$classname"]), found: "an empty class name", expected: "a class name")
            }
            return name
        default:
            throw .unrepresentable(codec: "keyed", at: at, found: view.compactText, expected: "a class name or a class entry")
        }
    }

    /// A class's view as a key: its name, or its entry's text.
    static func classKey(_ view: SaveValue) -> String {
        if case .string(let name) = view { name } else { view.compactText }
    }

    enum Family: Equatable {
        case null, number, string, date, data, collection
    }

    static func family(_ value: SaveValue) -> Family {
        switch value {
        case .null: .null
        case .bool, .integer, .unsignedInteger, .real: .number
        case .string: .string
        case .date: .date
        case .data: .data
        case .array, .dictionary, .uid: .collection
        }
    }

    private func refuseRetype(_ view: SaveValue, where old: SaveValue, at: JSONPointer) throws(CodecError) {
        guard !options.retype, Self.family(old) != .null, Self.family(view) != .null else { return }
        throw .unrepresentable(
            codec: "keyed", at: at, found: "\(view.typeNameWithArticle) where the archive held \(old.typeNameWithArticle)",
            expected: "\(old.typeNameWithArticle), as the app's decoder reads it")
    }
}

extension SaveValue {
    /// The uid of a `CF$UID` reference.
    var uidValue: Int? {
        if case .uid(let uid) = self { Int(exactly: uid) } else { nil }
    }
}
