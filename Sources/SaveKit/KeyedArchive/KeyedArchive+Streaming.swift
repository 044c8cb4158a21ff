import Foundation

extension KeyedArchive {
    /// Whether `bytes`, a binary property list, hold a keyed archive at their top: read from the
    /// top dictionary alone, without decoding the rest (the stream then checks everything).
    static func isBinaryKeyedArchive(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var plist = BinaryPlistReader(bytes: buffer, options: DecodingOptions())
            guard let (top, _) = try? plist.prepare() else { return false }
            return (try? KeyedViewStream.layout(of: top, in: plist)) != nil
        }
    }
}

/// A binary keyed archive's view (``KeyedArchive/view(maxDepth:)``) sent as events straight from
/// the property list's object table, which is indexed by object number as `$objects` is: no tree
/// of the property list and no tree of the view, so `convert --to json` of a large archive holds
/// little more than the file.
///
/// The events are those of the view that the tree reader builds, value for value. A rehearsal
/// into a sink that keeps nothing meets every fault and limit first, so nothing is written for
/// an archive that is refused. When the stream will not read an archive, the tree reader reads
/// and writes it: the result, or the error, is the one every other command gives for that file.
struct KeyedViewEvents: SaveEventSource {
    let bytes: [UInt8]
    let options: DecodingOptions

    func emit(into sink: inout AnySaveValueSink) throws {
        let streamed = try bytes.withUnsafeBufferPointer { buffer in
            var stream: KeyedViewStream
            do {
                stream = try KeyedViewStream(bytes: buffer, options: options)
                var rehearsal = stream
                var nothing = NestingLimit()
                try rehearsal.emitView(into: &nothing)
            } catch is KeyedViewStream.Fault, is BinaryPlistReader.Failure {
                return false
            }
            do {
                try stream.emitView(into: &sink)
            } catch is KeyedViewStream.Fault, is BinaryPlistReader.Failure {
                // The rehearsal met every fault; one now would be the stream's own mistake.
                throw CodecError.malformed(codec: "keyed", at: .pointer(JSONPointer()), found: "a fault the rehearsal did not meet", expected: "the same reading twice")
            }
            return true
        }
        if streamed { return }
        // Written into nothing first, as the stream is: the tree's own refusal (nesting too
        // deep to write) comes before any of it reaches the output.
        let view = try KeyedArchiveCodec().decode(bytes, options: options)
        var nothing = DiscardingSink()
        try view.emit(into: &nothing)
        try view.emit(into: &sink)
    }
}

/// Walks a keyed archive's graph in a binary property list, as ``ViewReader`` walks the decoded
/// one: the same checks, the same `$id`s in the same order, the same limits. Anything it finds
/// wrong is a ``Fault``, and ``KeyedViewEvents`` lets the tree reader name it.
struct KeyedViewStream {
    /// Something the stream will not read: the tree reader tells what.
    struct Fault: Error {
        var found: String
    }

    /// Where an archive's `$top` and `$objects` lie in the property list.
    struct Layout {
        var top: (count: Int, body: Int)
        var objects: (count: Int, body: Int)
    }

    /// How the view shows the objects of one class entry, worked out once per entry.
    struct ClassInfo {
        enum Form { case array, dictionary, date, plain }
        var name: String
        var view: SaveValue
        var usual: Bool
        var form: Form
    }

    private var plist: BinaryPlistReader
    private let layout: Layout
    private let maxDepth: Int
    /// As in ``ViewReader``: objects met from two places or more, and the `$id` each was given.
    private var shared: [Bool]
    private var ids: [Int32]
    private var nextID: Int32 = 1
    private var classes: [Int: ClassInfo] = [:]
    private var expandedBytes = 0
    /// UTF-16 text as UTF-8 (one buffer, reused).
    private var scratch: [UInt8] = []

    /// Checks the whole property list as the tree reader would (every object, shared ones as
    /// often as they are referenced, against the same limits), then counts references.
    init(bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws {
        plist = BinaryPlistReader(bytes: bytes, options: options)
        let (top, referencedAt) = try plist.prepare()
        var nothing = DiscardingSink()
        var emitted = 0
        try plist.emit(top, depth: 0, referencedAt: referencedAt, emitted: &emitted, into: &nothing)
        layout = try Self.layout(of: top, in: plist)
        guard layout.objects.count <= KeyedArchive.maxObjects else { throw Fault(found: "too many objects") }
        maxDepth = options.maxDepth
        shared = Array(repeating: false, count: layout.objects.count)
        ids = Array(repeating: 0, count: layout.objects.count)
        try countReferences()
    }

    /// The archive's `$top` and `$objects`, when the top object is a keyed archive's dictionary.
    static func layout(of top: Int, in plist: BinaryPlistReader) throws -> Layout {
        let start = try plist.objectOffset(top)
        guard plist.bytes[start] >> 4 == 0xD else { throw Fault(found: "no dictionary at the top") }
        let (count, body) = try plist.lengthAndBody(start)
        try plist.needReferences(body, count * 2)
        var archiver = false
        var topTable: (Int, Int)?
        var objects: (Int, Int)?
        for position in 0..<count {
            let key = try plist.objectOffset(try plist.reference(at: body + position * plist.referenceSize))
            let value = try plist.objectOffset(try plist.reference(at: body + (count + position) * plist.referenceSize))
            if try plist.stringObject(at: key, equals: "$archiver") {
                archiver = try plist.stringObject(at: value, equals: "NSKeyedArchiver")
            } else if try plist.stringObject(at: key, equals: "$top"), plist.bytes[value] >> 4 == 0xD {
                topTable = try plist.lengthAndBody(value)
            } else if try plist.stringObject(at: key, equals: "$objects"), plist.bytes[value] >> 4 == 0xA {
                objects = try plist.lengthAndBody(value)
            }
        }
        guard archiver, let topTable, let objects else { throw Fault(found: "not a keyed archive") }
        return Layout(top: topTable, objects: objects)
    }

    // MARK: - The object table

    /// Where entry `uid` of `$objects` starts.
    private func entry(_ uid: Int) throws -> Int {
        try plist.objectOffset(try plist.reference(at: layout.objects.body + uid * plist.referenceSize))
    }

    /// The uid held by the uid object at `start` (marker 0x8n), checked against the table.
    private func uid(at start: Int) throws -> Int {
        let length = Int(plist.bytes[start] & 0x0F) + 1
        try plist.need(start + 1, length)
        let raw = plist.readUInt64(at: start + 1, size: length)
        guard raw < UInt64(layout.objects.count) else { throw Fault(found: "uid \(raw), past the last object") }
        return Int(raw)
    }

    /// A dictionary object's entries: for each, where its key and its value start.
    private struct Fields {
        var count: Int
        var body: Int
    }

    private func fields(at start: Int) throws -> Fields {
        let (count, body) = try plist.lengthAndBody(start)
        return Fields(count: count, body: body)
    }

    @inline(__always)
    private func key(_ fields: Fields, _ position: Int) throws -> Int {
        try plist.objectOffset(try plist.reference(at: fields.body + position * plist.referenceSize))
    }

    @inline(__always)
    private func value(_ fields: Fields, _ position: Int) throws -> Int {
        try plist.objectOffset(try plist.reference(at: fields.body + (fields.count + position) * plist.referenceSize))
    }

    /// Where the value of the field `name` starts, if the object has one.
    private func field(_ name: StaticString, of fields: Fields) throws -> Int? {
        for position in 0..<fields.count where try plist.stringObject(at: try key(fields, position), equals: name) {
            return try value(fields, position)
        }
        return nil
    }

    private func isNumber(_ start: Int) -> Bool {
        let kind = plist.bytes[start] >> 4
        return kind == 0x1 || kind == 0x2
    }

    /// The class entry at `uid`, checked once (as ``ViewReader`` checks it).
    private mutating func classInfo(_ uid: Int) throws -> ClassInfo {
        if let known = classes[uid] { return known }
        var tree = TreeBuilder()
        var emitted = 0
        try plist.emit(try plist.reference(at: layout.objects.body + uid * plist.referenceSize), depth: 0, referencedAt: 0, emitted: &emitted, into: &tree)
        guard case .dictionary(let entry)? = tree.result, KeyedArchive.classEntryProblem(entry) == nil, let name = entry["$classname"]?.stringValue else {
            throw Fault(found: "a class entry that is not one")
        }
        let view = KeyedArchive.classView(name: name, entry: entry)
        let form: ClassInfo.Form =
            KeyedArchive.arrayClasses.contains(name) ? .array : KeyedArchive.dictionaryClasses.contains(name) ? .dictionary : name == "NSDate" ? .date : .plain
        let info = ClassInfo(name: name, view: view, usual: view == .string(name), form: form)
        classes[uid] = info
        return info
    }

    /// The object's class uid, when it is a dictionary whose `$class` is a uid.
    private func classUID(of fields: Fields) throws -> Int? {
        guard let start = try field("$class", of: fields), plist.bytes[start] >> 4 == 0x8 else { return nil }
        return try uid(at: start)
    }

    // MARK: - Shared objects

    /// ``ViewReader``'s count, on the table: an object reached twice is shared, and so is the
    /// object a cycle comes back to; dates never are.
    private mutating func countReferences() throws {
        // Per uid: not met yet, met as something no `$id` is given to (a date, a string, …), or
        // met as an object whose fields were queued. Each entry is read once, however often it
        // is referenced: a hostile archive could reference a large object a million times.
        enum Met: UInt8 { case not, uncounted, object }
        var met = Array(repeating: Met.not, count: layout.objects.count)
        var pending: [Int] = []
        let top = Fields(count: layout.top.count, body: layout.top.body)
        for position in 0..<top.count { pending.append(try value(top, position)) }
        while let start = pending.popLast() {
            switch plist.bytes[start] >> 4 {
            case 0x8:
                let uid = try uid(at: start)
                switch met[uid] {
                case .uncounted: continue
                case .object:
                    shared[uid] = true
                    continue
                case .not: break
                }
                met[uid] = .uncounted
                let object = try entry(uid)
                guard plist.bytes[object] >> 4 == 0xD else { continue }
                let fields = try fields(at: object)
                guard let classUID = try classUID(of: fields), try !isDate(fields, classUID: classUID) else { continue }
                met[uid] = .object
                for position in 0..<fields.count where try !plist.stringObject(at: try key(fields, position), equals: "$class") {
                    pending.append(try value(fields, position))
                }
            case 0xA:
                let (count, body) = try plist.lengthAndBody(start)
                for position in 0..<count { pending.append(try plist.objectOffset(try plist.reference(at: body + position * plist.referenceSize))) }
            default:
                continue
            }
        }
    }

    private mutating func isDate(_ fields: Fields, classUID: Int) throws -> Bool {
        guard fields.count == 2, let time = try field("NS.time", of: fields), isNumber(time) else { return false }
        return try classInfo(classUID).name == "NSDate"
    }

    // MARK: - The view

    mutating func emitView<Sink: SaveValueSink>(into sink: inout Sink) throws {
        let top = Fields(count: layout.top.count, body: layout.top.body)
        try sink.beginDictionary(count: top.count)
        for position in 0..<top.count {
            try emitKey(at: try key(top, position), into: &sink)
            try emitField(at: try value(top, position), depth: 1, into: &sink)
        }
        try sink.endDictionary()
    }

    /// A value held in a field (or in `$top`): a uid is the object, an array its members.
    private mutating func emitField<Sink: SaveValueSink>(at start: Int, depth: Int, into sink: inout Sink) throws {
        switch plist.bytes[start] >> 4 {
        case 0x8:
            try emitObject(try uid(at: start), depth: depth, into: &sink)
        case 0xA:
            let (count, body) = try plist.lengthAndBody(start)
            try sink.beginArray(count: count)
            for position in 0..<count {
                try emitField(at: try plist.objectOffset(try plist.reference(at: body + position * plist.referenceSize)), depth: depth + 1, into: &sink)
            }
            try sink.endArray()
        case 0xD:
            throw Fault(found: "a dictionary held in a field")
        default:
            try emitScalar(at: start, into: &sink)
        }
    }

    private mutating func emitScalar<Sink: SaveValueSink>(at start: Int, into sink: inout Sink) throws {
        switch plist.bytes[start] >> 4 {
        case 0x5, 0x6: try withText(at: start) { try sink.utf8String($0) }
        default: try sink.value(try plist.scalar(at: start))
        }
    }

    /// A dictionary key as the view writes it: the name as it is stored.
    private mutating func emitKey<Sink: SaveValueSink>(at start: Int, into sink: inout Sink) throws {
        try withText(at: start) { try sink.utf8Key($0) }
    }

    /// Hands `body` the text of the string object at `start` as UTF-8: the file's own bytes when
    /// it is ASCII, the reused scratch buffer when it is UTF-16 (valid only during the call).
    private mutating func withText<Value>(at start: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Value) throws -> Value {
        if plist.bytes[start] >> 4 == 0x5 { return try body(try plist.asciiText(at: start)) }
        try plist.utf16Text(at: start, into: &scratch)
        return try scratch.withUnsafeBufferPointer(body)
    }

    /// Counts a string or data that the view repeats wherever it is referenced.
    private mutating func expand(by count: Int) throws {
        expandedBytes += count
        guard expandedBytes <= ViewReader.maxExpandedBytes else { throw Fault(found: "shared strings and data repeated past the limit") }
    }

    private mutating func emitObject<Sink: SaveValueSink>(_ uid: Int, depth: Int, into sink: inout Sink) throws {
        guard depth <= maxDepth else { throw Fault(found: "objects nested too deep") }
        let start = try entry(uid)
        switch plist.bytes[start] >> 4 {
        case 0xD:
            break
        case 0xA, 0x8:
            throw Fault(found: "a collection or uid in the object table")
        case 0x5, 0x6:
            // Counted once written: the rehearsal, which writes nothing, meets the limit at the
            // same string.
            let length = try withText(at: start) { text in
                // Only uid 0 is nil, as in Foundation: a `$null` elsewhere in the table is the string.
                if uid == 0, text.elementsEqual("$null".utf8) {
                    try sink.value(.null)
                    return 0
                }
                try sink.utf8String(text)
                return text.count
            }
            return try expand(by: length)
        case 0x4:
            let (count, _) = try plist.lengthAndBody(start)
            try expand(by: count)
            return try sink.value(try plist.scalar(at: start))
        default:
            try expand(by: 8)
            return try sink.value(try plist.scalar(at: start))
        }
        if ids[uid] != 0 {
            try sink.beginDictionary(count: 1)
            try sink.key("$ref")
            try sink.value(.integer(Int64(ids[uid])))
            return try sink.endDictionary()
        }
        let fields = try fields(at: start)
        guard let classUID = try classUID(of: fields) else {
            throw Fault(found: try field("$classname", of: fields) != nil ? "a class entry, where an object is expected" : "an object without $class")
        }
        let info = try classInfo(classUID)
        if shared[uid] {
            ids[uid] = nextID
            nextID += 1
        }
        try emitBody(of: fields, info: info, id: ids[uid], depth: depth, into: &sink)
    }

    /// Begins an object's dictionary of `count` entries with its class and `$id`.
    private func beginObject<Sink: SaveValueSink>(_ info: ClassInfo, id: Int32, entries count: Int, into sink: inout Sink) throws {
        try sink.beginDictionary(count: 1 + (id == 0 ? 0 : 1) + count)
        try sink.key("$class")
        try info.view.emit(into: &sink)
        if id != 0 {
            try sink.key("$id")
            try sink.value(.integer(Int64(id)))
        }
    }

    /// What the view shows for an object of the class `info` (see ``ViewReader``'s `body`).
    private mutating func emitBody<Sink: SaveValueSink>(of fields: Fields, info: ClassInfo, id: Int32, depth: Int, into sink: inout Sink) throws {
        switch info.form {
        case .array:
            guard fields.count == 2, let members = try field("NS.objects", of: fields), plist.bytes[members] >> 4 == 0xA else { break }
            let (count, body) = try plist.lengthAndBody(members)
            let bare = info.name == "NSArray" && info.usual && id == 0
            if bare {
                try sink.beginArray(count: count)
            } else {
                try beginObject(info, id: id, entries: 1, into: &sink)
                try sink.key("$items")
                try sink.beginArray(count: count)
            }
            for position in 0..<count { try emitElement(at: body + position * plist.referenceSize, depth: depth + 1, into: &sink) }
            try sink.endArray()
            if !bare { try sink.endDictionary() }
            return
        case .dictionary:
            guard fields.count == 3, let keys = try field("NS.keys", of: fields), plist.bytes[keys] >> 4 == 0xA,
                let values = try field("NS.objects", of: fields), plist.bytes[values] >> 4 == 0xA
            else { break }
            let (count, keysBody) = try plist.lengthAndBody(keys)
            let (valueCount, valuesBody) = try plist.lengthAndBody(values)
            guard count == valueCount else { break }
            try emitDictionary(count: count, keys: keysBody, values: valuesBody, info: info, id: id, depth: depth, into: &sink)
            return
        case .date:
            guard fields.count == 2, let time = try field("NS.time", of: fields), isNumber(time), let seconds = try plist.scalar(at: time).numberValue else { break }
            return try sink.value(.date(Date(timeIntervalSinceReferenceDate: seconds)))
        case .plain:
            break
        }
        // Any other object: its fields beside its class; one of a class read as a collection or
        // a date that does not have that form keeps its fields under `$fields`.
        let interpreted = info.form != .plain
        try beginObject(info, id: id, entries: interpreted ? 1 : fields.count - 1, into: &sink)
        if interpreted {
            try sink.key("$fields")
            try sink.beginDictionary(count: fields.count - 1)
        }
        for position in 0..<fields.count {
            let key = try key(fields, position)
            if try plist.stringObject(at: key, equals: "$class") { continue }
            let renamable = try plist.bytes[key] >> 4 != 0x5 || plist.asciiText(at: key).first == UInt8(ascii: "$")
            if interpreted || !renamable {
                try emitKey(at: key, into: &sink)
            } else {
                // Only a name that starts with `$` can be one the view renames.
                try sink.key(KeyedArchive.viewName(ofField: try plist.string(at: key)))
            }
            try emitField(at: try value(fields, position), depth: depth + 1, into: &sink)
        }
        if interpreted { try sink.endDictionary() }
        try sink.endDictionary()
    }

    /// A member of a collection: a uid, as `NSKeyedArchiver` writes every member.
    private mutating func emitElement<Sink: SaveValueSink>(at referenceOffset: Int, depth: Int, into sink: inout Sink) throws {
        let start = try plist.objectOffset(try plist.reference(at: referenceOffset))
        guard plist.bytes[start] >> 4 == 0x8 else { throw Fault(found: "a member that is not a uid") }
        try emitObject(try uid(at: start), depth: depth, into: &sink)
    }

    /// An `NSDictionary`: by name when every key is a string that does not start with `$`, each
    /// once; else as `$pairs`.
    private mutating func emitDictionary<Sink: SaveValueSink>(
        count: Int, keys: Int, values: Int, info: ClassInfo, id: Int32, depth: Int, into sink: inout Sink
    ) throws {
        var names = Set<String>(minimumCapacity: count)
        var byName = true
        for position in 0..<count {
            let start = try plist.objectOffset(try plist.reference(at: keys + position * plist.referenceSize))
            guard plist.bytes[start] >> 4 == 0x8 else { throw Fault(found: "a key that is not a uid") }
            let uid = try uid(at: start)
            let object = try entry(uid)
            let kind = plist.bytes[object] >> 4
            guard kind == 0x5 || kind == 0x6 else {
                byName = false
                break
            }
            let name = try plist.string(at: object)
            guard !(uid == 0 && name == "$null"), !name.hasPrefix("$"), names.insert(name).inserted else {
                byName = false
                break
            }
        }
        let reference = plist.referenceSize
        if byName {
            let bare = info.name == "NSDictionary" && info.usual && id == 0
            if bare {
                try sink.beginDictionary(count: count)
            } else {
                try beginObject(info, id: id, entries: count, into: &sink)
            }
            for position in 0..<count {
                let object = try entry(try uid(at: try plist.objectOffset(try plist.reference(at: keys + position * reference))))
                try expand(by: try withText(at: object) { text in
                    try sink.utf8Key(text)
                    return text.count
                })
                try emitElement(at: values + position * reference, depth: depth + 1, into: &sink)
            }
            return try sink.endDictionary()
        }
        try beginObject(info, id: id, entries: 1, into: &sink)
        try sink.key("$pairs")
        try sink.beginArray(count: count)
        for position in 0..<count {
            try sink.beginArray(count: 2)
            try emitElement(at: keys + position * reference, depth: depth + 1, into: &sink)
            try emitElement(at: values + position * reference, depth: depth + 1, into: &sink)
            try sink.endArray()
        }
        try sink.endArray()
        try sink.endDictionary()
    }
}

/// A sink that keeps nothing and refuses nesting as ``SaveValue/emit(into:maxDepth:)`` does when
/// the tree reader's view is written: the rehearsal's sink.
private struct NestingLimit: SaveValueSink {
    private var open = 0
    private let maxDepth = DecodingOptions().maxDepth

    private mutating func begin() throws {
        guard open < maxDepth else { throw KeyedViewStream.Fault(found: "a view nested deeper than \(maxDepth) levels") }
        open += 1
    }

    mutating func beginArray(count: Int) throws { try begin() }
    mutating func endArray() { open -= 1 }
    mutating func beginDictionary(count: Int) throws { try begin() }
    mutating func key(_ key: String) {}
    mutating func endDictionary() { open -= 1 }
    mutating func value(_ scalar: SaveValue) {}
    mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) {}
    mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) {}
}

/// A sink that keeps nothing: the stream's first walk checks the property list only.
private struct DiscardingSink: SaveValueSink {
    mutating func beginArray(count: Int) {}
    mutating func endArray() {}
    mutating func beginDictionary(count: Int) {}
    mutating func key(_ key: String) {}
    mutating func endDictionary() {}
    mutating func value(_ scalar: SaveValue) {}
    mutating func utf8Key(_ text: UnsafeBufferPointer<UInt8>) {}
    mutating func utf8String(_ text: UnsafeBufferPointer<UInt8>) {}
}

extension BinaryPlistReader {
    /// Whether the object at `start` is a string equal to `name` (as Swift compares strings).
    func stringObject(at start: Int, equals name: StaticString) throws(Failure) -> Bool {
        switch bytes[start] >> 4 {
        case 0x5:
            let (count, body) = try lengthAndBody(start)
            guard count == name.utf8CodeUnitCount else { return false }
            try need(body, count)
            return memcmp(bytes.baseAddress! + body, name.utf8Start, count) == 0
        case 0x6:
            return try string(at: start) == name.description
        default:
            return false
        }
    }
}
