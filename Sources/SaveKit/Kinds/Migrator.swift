import Foundation

/// Recognises documents among a set of save kinds and migrates them to a target version.
public struct Migrator: Sendable {
    public var kinds: [SaveKind] {
        didSet { (claims, prefilter) = (Self.claims(of: kinds), ContentPrefilter(kinds: kinds)) }
    }
    /// Every kind's `files` patterns, with the `*/` form that matches a path's end spelled out
    /// once here instead of for every path asked about (imports ask for every file), and the
    /// literal text every path it matches ends with.
    private var claims: [(kind: Int, pattern: String, anywhere: String, ending: [UInt8])]
    private var prefilter: ContentPrefilter

    public init(kinds: [SaveKind]) {
        self.kinds = kinds
        self.claims = Self.claims(of: kinds)
        prefilter = ContentPrefilter(kinds: kinds)
    }

    /// Whether a document no kind claims by its path could be recognised by its content at
    /// all; `false` is certain (see ``ContentPrefilter``), so it need not be decoded.
    public func mayRecogniseByContent(_ bytes: [UInt8], codec: String) -> Bool { prefilter.mayMatch(bytes, codec: codec) }

    private static func claims(of kinds: [SaveKind]) -> [(kind: Int, pattern: String, anywhere: String, ending: [UInt8])] {
        kinds.indices.flatMap { index in kinds[index].files.map { (index, $0, "*/" + $0, literalEnding(of: $0)) } }
    }

    /// What follows a pattern's last wildcard, bracket or escape: text that every path it
    /// matches ends with, either way it is matched. A path that does not end so is no match,
    /// found without the two `fnmatch` calls that were most of an import's recognition.
    static func literalEnding(of pattern: String) -> [UInt8] {
        let bytes = Array(pattern.utf8)
        let special: Set<UInt8> = [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "\\")]
        guard let last = bytes.lastIndex(where: special.contains) else { return bytes }
        return Array(bytes[(last + 1)...])
    }

    public enum Outcome: Sendable {
        case migrated(kind: String, from: Int, to: Int, steps: [String], value: SaveValue)
        /// Already at the target version: not rewritten.
        case unchanged(kind: String, version: Int)
        case unrecognized
        case ambiguous(kind: String, versions: [Int])
        /// Above the kind's current version: reported, never written.
        case future(kind: String, version: Int)
        /// Not valid for its version's schema (before migrating) or the target's (after).
        case invalid(kind: String, version: Int, violations: [Schema.Violation])
        case failed(kind: String, from: Int, error: MigrationError)
    }

    /// A kind taken for a document, its version, and why it was taken.
    public struct Match: Sendable {
        public var kind: SaveKind
        public var recognition: SaveKind.Recognition
        public var evidence: SaveKind.Evidence
    }

    /// The kind of a document, never guessed (formats.md): the kind `named` (``SaveKind/Evidence/named``,
    /// or `declared` when a holder names it), else the kind whose `files` pattern claims `path`,
    /// else the one kind whose fingerprint matches the content. A version field alone claims
    /// nothing, and content that fingerprints of two kinds match is nobody's. `nil` when no kind
    /// is sure, or `named` is no known kind.
    public func match(_ value: SaveValue, path: String?, named: String?, declaredBy holder: String? = nil) -> Match? {
        if let named {
            guard let kind = self.kind(named: named) else { return nil }
            return Match(kind: kind, recognition: kind.recognise(value), evidence: holder.map { .declared(by: $0) } ?? .named)
        }
        if let claimed = claim(path: path) {
            return Match(kind: claimed.kind, recognition: claimed.kind.recognise(value), evidence: .path(pattern: claimed.pattern))
        }
        let byContent = contentMatches(value)
        return byContent.count == 1 ? byContent[0] : nil
    }

    /// Every kind whose fingerprints recognise `value` by its content alone: more than one, and
    /// none of them may claim it (``match(_:path:named:declaredBy:)`` gives `nil`).
    public func contentMatches(_ value: SaveValue) -> [Match] {
        // By index: an element taken out of the array is a copy of a kind (a dozen references to
        // retain and release), for every kind and every file of a batch.
        var matches: [Match] = []
        for index in kinds.indices {
            if let (recognition, evidence) = kinds[index].recogniseByContent(value) {
                matches.append(Match(kind: kinds[index], recognition: recognition, evidence: evidence))
            }
        }
        return matches
    }

    /// The first kind whose `files` patterns claim `path`, with the pattern.
    public func claim(path: String?) -> (kind: SaveKind, pattern: String)? {
        guard let path else { return nil }
        return path.withCString { text in
            let length = strlen(text)
            return claims.first { claim in
                guard length >= claim.ending.count,
                    claim.ending.withUnsafeBytes({ $0.isEmpty || memcmp(text + length - $0.count, $0.baseAddress!, $0.count) == 0 })
                else { return false }
                return fnmatch(claim.pattern, text, FNM_PATHNAME) == 0 || fnmatch(claim.anywhere, text, 0) == 0
            }
            .map { (kinds[$0.kind], $0.pattern) }
        }
    }

    public func kind(named name: String) -> SaveKind? { kinds.first { $0.name == name } }

    /// A document held inside a value of another (formats.md `embedded`), as decoded and recognised.
    public struct EmbeddedDocumentFound: Sendable {
        public var pointer: JSONPointer
        public var codec: any SaveCodec
        /// The bytes as held; a string holder's are its UTF-8.
        public var bytes: [UInt8]
        /// Whether the holder is a string (else data), so a re-encoded document goes back the same way.
        public var heldAsText: Bool
        /// `nil` when the bytes are not a document of `codec`.
        public var value: SaveValue?
        public var kind: SaveKind?
        public var recognition: SaveKind.Recognition
        /// Why the bytes do not read, with the place in them, when `value` is `nil`.
        public var decodingError: (any Error & Sendable)?

        /// What is wrong with a document that does not read: its decoder's place and words.
        var unreadable: String {
            decodingError.map { EmbeddedDocument.unreadable(codec, $0) } ?? "not a \(codec.id) document"
        }
    }

    /// The embedded documents `kind` declares that are present in `value`, sorted by pointer.
    public func embeddedDocuments(in value: SaveValue, of kind: SaveKind, registry: CodecRegistry = .builtIn) -> [EmbeddedDocumentFound] {
        kind.embedded.sorted { $0.key.description < $1.key.description }.compactMap { pointer, embedded in
            guard let holder = value.value(at: pointer), let codec = registry.codec(id: embedded.codec),
                let bytes = EmbeddedDocument.bytes(of: holder)
            else { return nil }
            let heldAsText = if case .string = holder { true } else { false }
            let inner: SaveValue
            do { inner = try codec.decode(bytes, options: EmbeddedDocument.decoding) } catch {
                return EmbeddedDocumentFound(
                    pointer: pointer, codec: codec, bytes: bytes, heldAsText: heldAsText, value: nil, kind: nil, recognition: .unrecognized, decodingError: error)
            }
            let found = match(inner, path: nil, named: embedded.kind, declaredBy: kind.name)
            return EmbeddedDocumentFound(
                pointer: pointer, codec: codec, bytes: bytes, heldAsText: heldAsText, value: inner, kind: found?.kind, recognition: found?.recognition ?? .unrecognized)
        }
    }

    /// Migrates `value` to `target` (the kind's current version when `nil`), and the documents
    /// embedded in it (a data value holding JSON, say) to their own kinds' current versions,
    /// re-encoded in their own codecs.
    public func migrate(_ value: SaveValue, path: String? = nil, kind named: String? = nil, to target: Int? = nil, registry: CodecRegistry = .builtIn) -> Outcome {
        guard let found = match(value, path: path, named: named) else { return .unrecognized }
        return migrate(value, as: found, to: target, registry: registry)
    }

    /// Migrates `value`, of the kind and version `found` says, as ``migrate(_:path:kind:to:registry:)`` does.
    public func migrate(_ value: SaveValue, as found: Match, to target: Int? = nil, registry: CodecRegistry = .builtIn) -> Outcome {
        var embedded: [EmbeddedDocumentFound]?
        return migrate(value, as: found, to: target, registry: registry, embeddedFound: &embedded)
    }

    /// Migrates as ``migrate(_:as:to:registry:)`` does, and hands back the embedded documents it
    /// decoded in an unchanged `value`, so that checking them does not decode them again.
    func migrate(_ value: SaveValue, as found: Match, to target: Int?, registry: CodecRegistry, embeddedFound: inout [EmbeddedDocumentFound]?) -> Outcome {
        let outcome = migrateDocument(value, kind: found.kind, recognition: found.recognition, to: target)
        let (kindName, document): (String, SaveValue)
        switch outcome {
        case .migrated(let name, _, _, _, let migrated): (kindName, document) = (name, migrated)
        case .unchanged(let name, _): (kindName, document) = (name, value)
        default: return outcome
        }
        guard let kind = kinds.first(where: { $0.name == kindName }), !kind.embedded.isEmpty else { return outcome }
        var updated = document
        var embeddedSteps: [String] = []
        let embeddedDocuments = embeddedDocuments(in: document, of: kind, registry: registry)
        if case .unchanged = outcome { embeddedFound = embeddedDocuments }
        for embedded in embeddedDocuments {
            let pointer = embedded.pointer
            guard let inner = embedded.value else {
                return .failed(kind: kindName, from: 0, error: MigrationError(step: "embedded", operation: "decode", path: pointer, message: embedded.unreadable))
            }
            guard let innerKind = embedded.kind else { continue }
            switch migrateDocument(inner, kind: innerKind, recognition: embedded.recognition, to: nil) {
            case .migrated(let innerKind, let from, _, let steps, let migrated):
                guard let replacement = try? EmbeddedDocument.replacement(for: migrated, over: embedded.bytes, holding: inner, codec: embedded.codec, asText: embedded.heldAsText) else {
                    return .failed(kind: innerKind, from: from, error: MigrationError(step: "embedded", operation: "encode", path: pointer, message: "cannot encode as \(embedded.codec.id)"))
                }
                try? updated.setValue(replacement, at: pointer)
                embeddedSteps += steps.map { "\(pointer.displayText): \(innerKind) \($0)" }
            case .unchanged, .unrecognized:
                continue
            // Failed or invalid inside: the file is left as it was, and the place is named in
            // the file (`/saveData/wallet`), with the embedded document's kind.
            case .failed(let innerKind, let from, let error):
                var placed = error.placed(under: pointer)
                placed.step = "\(innerKind) \(error.step)"
                return .failed(kind: innerKind, from: from, error: placed)
            case .invalid(let innerKind, let version, let violations):
                return .invalid(kind: innerKind, version: version, violations: violations.map { $0.placed(under: pointer) })
            case let other:
                return other  // future or ambiguous inside: the file is left as it was
            }
        }
        if embeddedSteps.isEmpty { return outcome }
        switch outcome {
        case .migrated(let name, let from, let to, let steps, _):
            return .migrated(kind: name, from: from, to: to, steps: steps + embeddedSteps, value: updated)
        case .unchanged(let name, let version):
            return .migrated(kind: name, from: version, to: version, steps: embeddedSteps, value: updated)
        default:
            return outcome
        }
    }

    /// Every way `value`, of `kind` at `version`, breaks its version's schema, and the schemas of
    /// the documents embedded in it (their pointers prefixed with the holder's); an embedded
    /// document that cannot be read, or whose version is unknown or newer, is a violation too.
    public func violations(in value: SaveValue, of kind: SaveKind, version: Int, registry: CodecRegistry = .builtIn) -> [Schema.Violation] {
        violations(in: value, of: kind, version: version, registry: registry, embedded: nil)
    }

    /// The violations, with the embedded documents already found in `value` (`nil`: found here).
    func violations(in value: SaveValue, of kind: SaveKind, version: Int, registry: CodecRegistry, embedded found: [EmbeddedDocumentFound]?) -> [Schema.Violation] {
        var violations = kind.schemas[version]?.violations(of: value) ?? []
        for embedded in found ?? embeddedDocuments(in: value, of: kind, registry: registry) {
            guard let inner = embedded.value else {
                violations.append(Schema.Violation(at: embedded.pointer, message: embedded.unreadable))
                continue
            }
            guard let innerKind = embedded.kind, case .version(let innerVersion) = embedded.recognition else {
                let message = switch (embedded.kind, embedded.recognition) {
                case (let innerKind?, .ambiguous): "\(innerKind.describe(embedded.recognition)), expected exactly one"
                case (let innerKind?, .future): innerKind.describe(embedded.recognition)
                default:
                    "an embedded document no version of \(kind.embedded[embedded.pointer]?.kind ?? "any kind") recognises, expected "
                        + (embedded.kind.map { "a \($0.name) save (\($0.whatTellsTheVersion))" } ?? "a save of a kind savetool knows")
                }
                violations.append(Schema.Violation(at: embedded.pointer, message: message))
                continue
            }
            for violation in innerKind.schemas[innerVersion]?.violations(of: inner) ?? [] {
                violations.append(violation.placed(under: embedded.pointer, schema: "\(innerKind.name) version \(innerVersion)"))
            }
        }
        return violations
    }

    private func migrateDocument(_ value: SaveValue, kind: SaveKind, recognition: SaveKind.Recognition, to target: Int?) -> Outcome {
        let version: Int
        switch recognition {
        case .unrecognized: return .unrecognized
        case .ambiguous(let versions): return .ambiguous(kind: kind.name, versions: versions)
        case .future(let future): return .future(kind: kind.name, version: future)
        case .version(let found): version = found
        }
        let goal = min(target ?? kind.currentVersion, kind.currentVersion)
        if version >= goal { return .unchanged(kind: kind.name, version: version) }
        if let violations = kind.schemas[version]?.violations(of: value), !violations.isEmpty {
            return .invalid(kind: kind.name, version: version, violations: violations)
        }
        guard let steps = kind.migrations?.steps(from: version, to: goal) else {
            return .failed(kind: kind.name, from: version, error: MigrationError(
                step: "\(version)→\(goal)", operation: "plan", path: JSONPointer(), message: "no migration steps lead from version \(version) to \(goal)"))
        }
        var current = value
        for step in steps {
            let schema = kind.schemas[step.from]
            do {
                try MigrationEngine(isRequired: { schema?.requires($0) ?? false }).apply(step.operations, to: &current, step: step.name)
                if let versionPath = kind.versionPath { try current.setValue(.integer(Int64(step.to)), at: versionPath) }
            } catch let error as MigrationError {
                return .failed(kind: kind.name, from: version, error: error)
            } catch {
                return .failed(kind: kind.name, from: version, error: MigrationError(step: step.name, operation: "stamp", path: kind.versionPath ?? JSONPointer(), message: "\(error)"))
            }
            if let violations = kind.schemas[step.to]?.violations(of: current), !violations.isEmpty {
                return .invalid(kind: kind.name, version: step.to, violations: violations)
            }
        }
        // Without a version field, the next run tells the version by fingerprints alone: a
        // result they do not call the goal would be migrated again, or left as from the future.
        if kind.versionPath == nil, case let found = kind.recognise(current), found != .version(goal) {
            return .failed(kind: kind.name, from: version, error: MigrationError(
                step: "\(version)→\(goal)", operation: "recognise", path: JSONPointer(),
                message: "the result is \(kind.describe(found)), expected version \(goal): the kind's fingerprints must tell its versions apart"))
        }
        return .migrated(kind: kind.name, from: version, to: goal, steps: steps.map(\.name), value: current)
    }
}
