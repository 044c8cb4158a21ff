import Foundation
import OrderedCollections

/// The object graph that `NSKeyedArchiver` writes, held in a property list.
///
/// A keyed archive is a dictionary with `$archiver` = `NSKeyedArchiver`, a `$top` dictionary of
/// named roots and a flat `$objects` table whose entries refer to each other by uid. Read as a
/// plain plist, the state of a game hides behind `{"$uid": 1}` → `/$objects/1` → …
/// ``view(options:)`` resolves the graph into a document people can read and edit:
///
/// ```json
/// {"root": {"$class": "GKPlayer", "name": "Zoë", "level": 7, "items": [{"$class": "Item", "count": 2}]}}
/// ```
///
/// - An object is a dictionary with its class under `$class` and its fields beside it.
/// - `NSArray` is an array; the other collections (`NSMutableArray`, `NSSet`, `NSOrderedSet` …)
///   are `{"$class": "NSMutableArray", "$items": […]}`.
/// - `NSDictionary` is a dictionary; `NSMutableDictionary` is one with `$class` beside its keys.
///   Keys that are not strings, or that start with `$`, are kept as `{"$pairs": [[key, value], …]}`.
/// - `NSDate` is a date and data is data; strings, numbers and `$null` are values.
/// - An object referred to from two places, or in a cycle, is written once with `"$id": n` and
///   then as `{"$ref": n}`; ids count up in the order the view meets the objects, so two archives
///   of one state read alike whatever order their archivers wrote `$objects` in.
/// - A class whose chain is not the usual one is kept whole: `"$class": {"$classname": …, "$classes": […]}`.
/// - An object of one of those Foundation classes that does not have their form keeps its fields
///   under `$fields`: `{"$class": "NSDictionary", "$fields": {"NS.keys": …}}`.
///
/// ``archive(replacingViewWith:options:)`` writes an edited view back. Objects that the edit
/// did not touch keep their uids, so a one-field edit changes one entry of `$objects`.
public struct KeyedArchive: Sendable {
    /// The archive as a property list.
    public let plist: SaveValue
    let top: OrderedDictionary<String, SaveValue>
    let objects: [SaveValue]
    /// Each object's node in the view and `$id`, kept from the reading when the view is to be
    /// written back (``CodecRegistry/keyedView(of:decodedBy:options:retyping:forWriting:)``),
    /// so that writing does not resolve the graph a second time.
    var resolution: (nodes: [SaveValue?], ids: [Int: Int])?

    /// More objects than this is refused: a hostile file could claim millions of tiny ones.
    public static let maxObjects = 5_000_000

    /// Whether `value` says it is a keyed archive (its top, not a value inside it): its
    /// `$archiver` is `NSKeyedArchiver`. One that has lost its `$top` or whose `$objects` is
    /// not an array is then refused with the place (``init(_:)``), not read as a plain plist.
    public static func isKeyedArchive(_ value: SaveValue) -> Bool {
        guard case .dictionary(let fields) = value else { return false }
        return fields["$archiver"] == .string("NSKeyedArchiver")
    }

    /// A cheap test before a full decode: a keyed archive's bytes hold the archiver's name in
    /// ASCII (binary and XML plists alike).
    public static func mayBeIn(_ bytes: [UInt8]) -> Bool {
        // Not a byte-at-a-time loop: that was 4% of converting a 52 MB binary plist.
        bytes.withUnsafeBytes { ByteSearch.contains(archiverName, in: $0) }
    }

    private static let archiverName = Array("NSKeyedArchiver".utf8)

    /// Takes `plist` as a keyed archive; a value that is not one is refused with what it lacks.
    public init(_ plist: SaveValue) throws(CodecError) {
        guard case .dictionary(let fields) = plist else {
            throw Self.malformed(JSONPointer(), "\(plist.typeNameWithArticle)", "a dictionary with $archiver, $top and $objects")
        }
        guard fields["$archiver"] == .string("NSKeyedArchiver") else {
            throw Self.malformed(JSONPointer(tokens: ["$archiver"]), fields["$archiver"].map { "\($0.compactText)" } ?? "no $archiver", "NSKeyedArchiver")
        }
        guard case .dictionary(let top)? = fields["$top"] else {
            throw Self.malformed(JSONPointer(tokens: ["$top"]), fields["$top"]?.typeNameWithArticle ?? "no $top", "a dictionary of the archive's roots")
        }
        guard case .array(let objects)? = fields["$objects"] else {
            throw Self.malformed(JSONPointer(tokens: ["$objects"]), fields["$objects"]?.typeNameWithArticle ?? "no $objects", "an array of the archived objects")
        }
        guard objects.count <= Self.maxObjects else {
            throw .limitExceeded(codec: "keyed", at: .pointer(JSONPointer(tokens: ["$objects"])), found: "\(objects.count) objects", expected: "at most \(Self.maxObjects)")
        }
        (self.plist, self.top, self.objects) = (plist, top, objects)
    }

    static func malformed(_ pointer: JSONPointer, _ found: String, _ expected: String) -> CodecError {
        .malformed(codec: "keyed", at: .pointer(pointer), found: found, expected: expected)
    }

    // MARK: Summary

    /// What `inspect` says of an archive.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        /// The class of `$top/root` (or of the first root), if it is an object.
        public var rootClass: String?
        public var objectCount: Int
        /// Every class named in the archive, in the order of `$objects`.
        public var classes: [String]

        /// `keyed archive (NSKeyedArchiver), root class GKPlayer, 41 objects, classes: GKPlayer, NSArray`
        public var description: String {
            let root = rootClass.map { ", root class \($0)" } ?? ""
            return "keyed archive (NSKeyedArchiver)\(root), \(objectCount) object\(objectCount == 1 ? "" : "s"), classes: \(classes.joined(separator: ", "))"
        }
    }

    public var summary: Summary {
        var classes: [String] = []
        for object in objects {
            if case .dictionary(let fields) = object, case .string(let name)? = fields["$classname"], !classes.contains(name) { classes.append(name) }
        }
        let root = top["root"] ?? top.values.first
        var rootClass: String?
        if case .uid(let uid)? = root, uid < objects.count, case .dictionary(let fields) = objects[Int(uid)], case .uid(let classUID)? = fields["$class"],
            classUID < objects.count, case .dictionary(let info) = objects[Int(classUID)], case .string(let name)? = info["$classname"]
        {
            rootClass = name
        }
        return Summary(rootClass: rootClass, objectCount: objects.count, classes: classes)
    }

    // MARK: Classes

    /// The class chains `NSKeyedArchiver` writes for the classes a view shows by their name alone.
    static let usualChains: [String: [String]] = [
        "NSArray": ["NSArray", "NSObject"], "NSMutableArray": ["NSMutableArray", "NSArray", "NSObject"],
        "NSSet": ["NSSet", "NSObject"], "NSMutableSet": ["NSMutableSet", "NSSet", "NSObject"],
        "NSOrderedSet": ["NSOrderedSet", "NSObject"], "NSMutableOrderedSet": ["NSMutableOrderedSet", "NSOrderedSet", "NSObject"],
        "NSDictionary": ["NSDictionary", "NSObject"], "NSMutableDictionary": ["NSMutableDictionary", "NSDictionary", "NSObject"],
        "NSDate": ["NSDate", "NSObject"], "NSData": ["NSData", "NSObject"], "NSMutableData": ["NSMutableData", "NSData", "NSObject"],
        "NSString": ["NSString", "NSObject"], "NSMutableString": ["NSMutableString", "NSString", "NSObject"],
        "NSNumber": ["NSNumber", "NSValue", "NSObject"], "NSUUID": ["NSUUID", "NSObject"], "NSURL": ["NSURL", "NSObject"],
        "NSNull": ["NSNull", "NSObject"],
    ]

    /// The chain a class named `name` has unless its archive says otherwise.
    static func usualChain(of name: String) -> [String] { usualChains[name] ?? [name, "NSObject"] }

    /// The class entry `NSKeyedArchiver` writes for `name`.
    static func usualClassEntry(_ name: String) -> SaveValue {
        .dictionary(["$classes": .array(usualChain(of: name).map(SaveValue.string)), "$classname": .string(name)])
    }

    /// How the view shows the class entry `info` of class `name`: the name alone when the entry
    /// holds its usual chain (in either key order), else the entry whole.
    static func classView(name: String, entry info: OrderedDictionary<String, SaveValue>) -> SaveValue {
        let usual = info.count == 2 && info["$classes"] == .array(usualChain(of: name).map(SaveValue.string))
        return usual ? .string(name) : .dictionary(info)
    }

    /// What is wrong with a class entry, or `nil`: the key of the entry at fault (`nil` for the
    /// entry as a whole), what was found and what was expected. The reader and the writer of
    /// views hold class entries to this one rule.
    static func classEntryProblem(_ info: OrderedDictionary<String, SaveValue>) -> (key: String?, found: String, expected: String)? {
        guard case .string? = info["$classname"] else { return (nil, "a dictionary where a class was expected", "a dictionary with $classname") }
        if info["$class"] != nil { return ("$class", "a class with a $class of its own (a loop through $class)", "a class entry with $classname and $classes") }
        if let chain = info["$classes"] {
            guard case .array(let names) = chain, names.allSatisfy({ $0.stringValue != nil }) else { return ("$classes", chain.typeNameWithArticle, "an array of class names") }
            if Set(names.compactMap(\.stringValue)).count != names.count { return ("$classes", "a class chain that names a class twice (a loop)", "each class once") }
        }
        return nil
    }

    static let arrayClasses: Set<String> = ["NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet"]
    static let dictionaryClasses: Set<String> = ["NSDictionary", "NSMutableDictionary"]

    /// Keys of the view that are not fields of an object.
    static let viewKeys: Set<String> = ["$class", "$id", "$ref", "$items", "$pairs", "$fields"]

    /// A field of an archived object as the view names it: a name that the view uses for itself
    /// (or one that starts with `$$`) gets one more `$`.
    static func viewName(ofField name: String) -> String {
        viewKeys.contains(name) || name.hasPrefix("$$") ? "$" + name : name
    }

    /// The field a view's key names (the inverse of ``viewName(ofField:)``).
    static func fieldName(ofViewKey key: String) -> String {
        key.hasPrefix("$$") ? String(key.dropFirst()) : key
    }
}
