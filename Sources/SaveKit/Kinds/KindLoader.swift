import Foundation

/// Reads `Formats/<kind>/` folders: `kind.json`, `migrations.json`, `schema-v<N>.json`.
public enum KindLoader {
    /// Why a kind folder could not be loaded, naming the file and the place in it.
    public struct LoadError: Error, Sendable, Equatable, CustomStringConvertible {
        public var file: String
        /// The value the mistake is in; `nil` for a file that is not JSON, whose message starts
        /// with its own line and column.
        public var at: JSONPointer?
        public var message: String
        public init(file: String, at: JSONPointer?, message: String) {
            (self.file, self.at, self.message) = (file, at, message)
        }
        public var description: String { at.map { "\(file):\($0.displayText): \(message)" } ?? "\(file):\(message)" }
    }

    /// Mistakes in several files of kind folders, each with its file and place: found in one
    /// run, so that a kind's author fixes them in one go rather than one run each. (Within one
    /// file, the first mistake: what follows it may only be its consequence.)
    public struct LoadErrors: Error, Sendable, Equatable, CustomStringConvertible {
        public var errors: [LoadError]
        public var description: String { errors.map(\.description).joined(separator: "\n") }

        /// `errors` as one error: the only one, or all of them.
        static func combining(_ errors: [LoadError]) -> any Error {
            errors.count == 1 ? errors[0] : LoadErrors(errors: errors)
        }
    }

    /// Runs `body`, adding a mistake it finds to `mistakes` instead of stopping.
    private static func collecting<T>(_ mistakes: inout [LoadError], _ body: () throws -> T) throws -> T? {
        do { return try body() } catch let error as LoadError {
            mistakes.append(error)
        } catch let error as LoadErrors {
            mistakes += error.errors
        }
        return nil
    }

    /// Every kind in the sub-folders of `directory` that holds a `kind.json`, sorted by name.
    /// Two folders that declare one kind are a mistake: which one counts would depend on their
    /// names, which mean nothing.
    public static func kinds(in directory: String) throws -> [SaveKind] {
        let folders = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var mistakes: [LoadError] = []
        let kinds = try folders.compactMap { folder -> SaveKind? in
            let path = directory + "/" + folder
            guard FileManager.default.fileExists(atPath: path + "/kind.json") else { return nil }
            return try collecting(&mistakes) { try load(folder: path) }
        }
        guard mistakes.isEmpty else { throw LoadErrors.combining(mistakes) }
        var seen: [String: String] = [:]
        for kind in kinds {
            if let first = seen[kind.name] {
                throw LoadError(
                    file: kind.origin + "/kind.json", at: JSONPointer(tokens: ["kind"]),
                    message: "\"\(kind.name)\", expected a kind no other folder declares: \(first) declares it too")
            }
            seen[kind.name] = kind.origin
        }
        return kinds
    }

    /// Every kind of `folders` (file texts by folder and file name, as compiled into a binary),
    /// sorted by name; files are named `<origin>/<folder>/<file>` in errors.
    public static func kinds(in folders: [String: [String: String]], origin: String) throws -> [SaveKind] {
        var mistakes: [LoadError] = []
        let kinds = try folders.keys.sorted().compactMap { name -> SaveKind? in
            let files = folders[name]!
            guard files["kind.json"] != nil else { return nil }
            var kind = try collecting(&mistakes) { try load(Folder(path: origin + "/" + name) { files[$0].map { Array($0.utf8) } }) }
            kind?.origin = origin
            return kind
        }
        guard mistakes.isEmpty else { throw LoadErrors.combining(mistakes) }
        return kinds
    }

    public static func load(folder: String) throws -> SaveKind {
        try load(Folder(path: folder) { name in
            let file = folder + "/" + name
            return FileManager.default.fileExists(atPath: file) ? try FileIO.read(file) : nil
        })
    }

    /// A kind's folder: its path (for messages) and a way to read each of its files.
    private struct Folder {
        var path: String
        /// A file's bytes, or `nil` when the folder has no such file.
        var read: (String) throws -> [UInt8]?
    }

    private static func load(_ folder: Folder) throws -> SaveKind {
        // Each file checked on its own, every mistake kept: kind.json, each schema,
        // migrations.json, merge.json.
        var mistakes: [LoadError] = []
        let head = try collecting(&mistakes) { try kindFile(of: folder) }
        var schemas: [Int: Schema] = [:]
        for version in stride(from: 1, through: head?.currentVersion ?? 0, by: 1) {
            let name = "schema-v\(version).json"
            if let schema = try collecting(&mistakes, { try document(name, in: folder, optional: true) }) ?? nil {
                schemas[version] = try collecting(&mistakes) { try naming(folder.path + "/" + name) { try Schema(parsing: schema) } }
            }
        }
        let migrations = try collecting(&mistakes) {
            try companion("migrations.json", in: folder, of: head?.name, parse: MigrationPlan.init(parsing:), kind: \.kind)
        } ?? nil
        let merge = try collecting(&mistakes) {
            try companion("merge.json", in: folder, of: head?.name, parse: MergeRules.init(parsing:), kind: \.kind)
        } ?? nil
        guard mistakes.isEmpty, var kind = head else { throw LoadErrors.combining(mistakes) }
        (kind.schemas, kind.migrations, kind.merge) = (schemas, migrations, merge)
        return kind
    }

    /// What kind.json says: the kind without its schemas, migrations and merge rules.
    private static func kindFile(of folder: Folder) throws -> SaveKind {
        let kindFile = folder.path + "/kind.json"
        let kind = try document("kind.json", in: folder) ?? .null
        func fail(_ path: [String], _ message: String) -> LoadError { LoadError(file: kindFile, at: JSONPointer(tokens: path), message: message) }
        try checkShape(of: kind, fail: fail)
        /// What stands at a place, for a message: `missing`, or the value itself.
        func found(_ value: SaveValue?) -> String { value.map { "found \($0.compactText)" } ?? "missing" }
        guard kind["format"]?.stringValue?.hasPrefix("savetool.kind/1") == true else {
            throw fail(["format"], "\(found(kind["format"])), expected \"savetool.kind/1\"")
        }
        guard let name = kind["kind"]?.stringValue, !name.isEmpty else { throw fail(["kind"], "\(found(kind["kind"])), expected the kind's name") }
        guard case .integer(let current)? = kind["version"]?["current"], current >= 1 else {
            throw fail(["version", "current"], "\(found(kind["version"]?["current"])), expected the current version (an integer from 1)")
        }
        var versionPath: JSONPointer?
        if let text = kind["version"]?["path"]?.stringValue {
            do { versionPath = try JSONPointer(parsing: text) } catch { throw fail(["version", "path"], "\(error)") }
        }
        var fingerprints: [SaveKind.Fingerprint] = []
        for (index, entry) in (kind["detect"]?.arrayValue ?? []).enumerated() {
            let at = ["detect", String(index)]
            guard case .integer(let version)? = entry["version"] else { throw fail(at + ["version"], "missing, expected the version this fingerprint means") }
            guard version >= 1 else { throw fail(at + ["version"], "\(version), expected a version from 1") }
            var conditions: [Condition] = []
            for (position, condition) in (entry["all"]?.arrayValue ?? []).enumerated() {
                conditions.append(try naming(kindFile) { try Condition(parsing: condition, at: at + ["all", String(position)]) })
            }
            fingerprints.append(SaveKind.Fingerprint(version: Int(version), conditions: conditions))
        }
        var embedded: [JSONPointer: SaveKind.Embedded] = [:]
        for (text, entry) in kind["embedded"]?.dictionaryValue ?? [:] {
            guard let pointer = try? JSONPointer(parsing: text), let codec = entry["codec"]?.stringValue else {
                throw fail(["embedded", text], "expected a JSON Pointer key and a \"codec\"")
            }
            embedded[pointer] = SaveKind.Embedded(codec: codec, kind: entry["kind"]?.stringValue)
        }
        return SaveKind(
            name: name, title: kind["title"]?.stringValue ?? name, files: kind["files"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            codec: kind["codec"]?.stringValue, versionPath: versionPath, currentVersion: Int(current), fingerprints: fingerprints,
            embedded: embedded, schemas: [:], migrations: nil, merge: nil, origin: folder.path)
    }

    /// Refuses what a kind.json must not hold, with its place: a key the loader does not read
    /// (a typo, such as `"detetc"`, would otherwise be ignored and the kind match every file),
    /// a value of the wrong type, a fingerprint without conditions.
    private static func checkShape(of kind: SaveValue, fail: ([String], String) -> LoadError) throws {
        func object(_ value: SaveValue?, at path: [String], keys: [String]) throws {
            guard let value else { return }
            guard let members = value.dictionaryValue else { throw fail(path, "\(article(value)), expected an object with \(keys.joined(separator: ", "))") }
            for key in members.keys where !keys.contains(key) {
                throw fail(path + [key], "an unknown key, expected one of \(keys.joined(separator: ", "))")
            }
        }
        func string(_ value: SaveValue?, at path: [String]) throws {
            guard let value, value.stringValue == nil else { return }
            throw fail(path, "\(article(value)), expected a string")
        }
        /// "an integer", "a string".
        func article(_ value: SaveValue) -> String { ("aeiou".contains(value.typeName.prefix(1)) ? "an " : "a ") + value.typeName }
        guard kind.dictionaryValue != nil else { throw fail([], "\(article(kind)), expected the kind's object") }
        try object(kind, at: [], keys: ["format", "kind", "title", "files", "codec", "version", "detect", "embedded"])
        for key in ["format", "kind", "title", "codec"] { try string(kind[key], at: [key]) }
        if let files = kind["files"] {
            guard let patterns = files.arrayValue else { throw fail(["files"], "\(article(files)), expected an array of path patterns") }
            for (index, pattern) in patterns.enumerated() { try string(pattern, at: ["files", String(index)]) }
        }
        try object(kind["version"], at: ["version"], keys: ["current", "path"])
        func integer(_ value: SaveValue?, at path: [String]) throws {
            guard let value else { return }
            if case .integer = value { return }
            throw fail(path, "\(article(value)), expected an integer")
        }
        try integer(kind["version"]?["current"], at: ["version", "current"])
        try string(kind["version"]?["path"], at: ["version", "path"])
        if let detect = kind["detect"] {
            guard let fingerprints = detect.arrayValue else { throw fail(["detect"], "\(article(detect)), expected an array of fingerprints") }
            for (index, fingerprint) in fingerprints.enumerated() {
                let at = ["detect", String(index)]
                try object(fingerprint, at: at, keys: ["version", "all"])
                try integer(fingerprint["version"], at: at + ["version"])
                guard let all = fingerprint["all"]?.arrayValue, !all.isEmpty else {
                    throw fail(at + ["all"], "missing or empty, expected the conditions that all hold for this version")
                }
            }
        }
        try object(kind["embedded"], at: ["embedded"], keys: kind["embedded"]?.dictionaryValue.map { Array($0.keys) } ?? [])
        for (pointer, entry) in kind["embedded"]?.dictionaryValue ?? [:] {
            try object(entry, at: ["embedded", pointer], keys: ["codec", "kind"])
            try string(entry["codec"], at: ["embedded", pointer, "codec"])
            try string(entry["kind"], at: ["embedded", pointer, "kind"])
        }
    }

    /// An optional file of the folder beside kind.json, parsed; the kind it names must be
    /// kind.json's (`kindName`, when kind.json could be read).
    private static func companion<T>(
        _ name: String, in folder: Folder, of kindName: String?, parse: (SaveValue) throws -> T, kind: (T) -> String
    ) throws -> T? {
        guard let value = try document(name, in: folder, optional: true) else { return nil }
        let file = folder.path + "/" + name
        let parsed = try naming(file) { try parse(value) }
        if let kindName, kind(parsed) != kindName {
            throw LoadError(file: file, at: JSONPointer(tokens: ["kind"]), message: "\"\(kind(parsed))\", expected \"\(kindName)\" as in kind.json")
        }
        return parsed
    }

    /// Runs a parser of `file`'s contents; a mistake it finds is named with the file.
    private static func naming<T>(_ file: String, _ parse: () throws -> T) throws -> T {
        do { return try parse() } catch let error as FormatDefinitionError { throw LoadError(file: file, at: error.at, message: error.message) }
    }

    /// A file of the folder decoded as JSON; `nil` when `optional` and the folder has no such file.
    private static func document(_ name: String, in folder: Folder, optional: Bool = false) throws -> SaveValue? {
        let path = folder.path + "/" + name
        let bytes: [UInt8]
        do {
            guard let read = try folder.read(name) else {
                if optional { return nil }
                throw LoadError(file: path, at: JSONPointer(), message: "missing, expected the file")
            }
            bytes = read
        }
        do {
            return try JSONCodec().decode(bytes)
        } catch let error as CodecError {
            // The parser's own place (line:column) is the place: no pointer before it.
            throw LoadError(file: path, at: nil, message: "\(error)")
        }
    }
}
