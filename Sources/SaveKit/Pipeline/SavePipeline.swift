/// What happens to one save file on its way through savetool: read → recognise → migrate →
/// validate → the bytes to write. `migrate`, `import`, `validate` and any server embedding
/// SaveKit go through this one path, so they agree on every file.
///
/// The pipeline writes nothing: it returns the new bytes (when the file migrates) and lets the
/// caller decide where they go.
///
/// ```swift
/// let pipeline = try SavePipeline(kinds: kinds, registry: .builtIn)
/// let result = pipeline.process(bytes, path: "Documents/current_tournament.json")
/// if let output = result.output { try FileIO.writeAtomically(output, to: destination) }
/// ```
public struct SavePipeline: Sendable {
    public let migrator: Migrator
    public let registry: CodecRegistry
    /// The kind every file is taken to be (`--kind`), instead of recognising it.
    public let kind: String?
    /// The version to migrate to; each file's kind's current version when `nil`.
    public let target: Int?
    public var decoding = DecodingOptions()
    /// A migrated document is written over its old text where its codec can say what changed
    /// (JSON): the rest keeps its bytes, so a file migrated in place is a small diff. It costs
    /// an encode of each migrated file's old value (and a read-back of the result where its
    /// layout is not the writer's own); ``BatchMigration`` turns it on for files migrated in place.
    public var keepsUnchangedText = false

    /// Checks the request before any file is read: an unknown kind, or a target version past
    /// every version there is, is a usage error.
    public init(kinds: [SaveKind], registry: CodecRegistry, kind: String? = nil, target: Int? = nil) throws(SaveError) {
        migrator = Migrator(kinds: kinds)
        self.registry = registry
        self.kind = kind
        self.target = target
        if let kind {
            guard let found = migrator.kind(named: kind) else {
                throw SaveError(.usage, "no save kind '\(kind)', expected one of: \(kinds.map(\.name).joined(separator: ", "))")
            }
            if let target, target > found.currentVersion {
                throw SaveError(.usage, "version \(target) of \(kind), expected 1...\(found.currentVersion) (its latest is \(found.currentVersion))")
            }
        } else if let target, let latest = kinds.map(\.currentVersion).max(), target > latest {
            throw SaveError(.usage, "version \(target), expected at most \(latest): no known kind has a version past \(latest)")
        }
        if let target, target < 1 { throw SaveError(.usage, "version \(target), expected a version from 1") }
    }

    /// Runs one file through the pipeline. `path` is relative to the root being walked (or the
    /// bundle's `files/`): kinds claim files by it. A caller that has hashed the bytes already
    /// (an import checks every file's SHA-256) passes the digest as `sha256`.
    public func process(_ bytes: [UInt8], path: String?, sha256: String? = nil) -> FileResult {
        var result = FileResult(status: .unrecognized, sha256Before: sha256 ?? Checksum.sha256(bytes))
        let claimed = kind.flatMap(migrator.kind(named:)).map { ($0, SaveKind.Evidence.named) }
            ?? migrator.claim(path: path).map { ($0.kind, SaveKind.Evidence.path(pattern: $0.pattern)) }
        if let (claimedKind, evidence) = claimed { (result.kind, result.evidence) = (claimedKind.name, evidence) }
        let sniffed = registry.codec(sniffing: bytes) ?? path.flatMap(registry.codec(forPath:)) ?? claimed?.0.codec.flatMap(registry.codec(id:))
        guard var codec = sniffed, !codec.traits.contains(.archive) else {
            if claimed != nil { result.fail(.failed, "cannot tell its format from the content or the name, expected a save document") }
            return result
        }
        // Nobody's by its path, and its bytes hold no kind's fingerprint: nobody's, undecoded.
        if claimed == nil, !migrator.mayRecogniseByContent(bytes, codec: codec.id) { return result }
        var value: SaveValue
        do {
            value = try codec.decode(bytes, options: decoding)
            // A keyed archive is recognised, migrated and checked as the objects it holds, and
            // archived again on write. A migration may change a value's type: the kind's new
            // version is what the app's decoder now reads.
            if let keyed = try registry.keyedView(of: value, decodedBy: codec, options: decoding, retyping: true) {
                (value, codec) = (keyed.view, keyed.codec)
            }
        } catch {
            // A file no kind claims may be anything; one a kind claims must read.
            if claimed != nil {
                result.fail(.failed, "\(error)")
                result.decodingError = error as? CodecError
            }
            return result
        }
        guard let found = migrator.match(value, path: path, named: kind) else {
            // Content that the fingerprints of two kinds match is nobody's, and said so, as
            // `validate` says it: a batch or an import never passes a kind's mistake in silence.
            if claimed == nil, case let several = migrator.contentMatches(value), several.count > 1 {
                result.fail(.ambiguous, "recognised by the fingerprints of \(several.count) kinds (\(several.map(\.kind.name).joined(separator: ", "))), expected one")
            }
            return result
        }
        (result.kind, result.evidence) = (found.kind.name, found.evidence)
        switch found.recognition {
        case .unrecognized:
            result.problem = "\(found.kind.name) (\(found.evidence)), but \(found.kind.versionProblem(in: value)); left as it is"
            return result
        case .ambiguous(let versions):
            result.fail(.ambiguous, "matches the fingerprints of versions \(versions.map(String.init).joined(separator: ", ")), expected exactly one")
            return result
        case .future(let version):
            result.from = version
            result.fail(.future, "\(found.kind.describe(found.recognition)); left as it is")
            return result
        case .version(let version):
            result.from = version
            if let target, target > found.kind.currentVersion {
                result.fail(.failed, "version \(target) was asked for, expected at most \(found.kind.currentVersion), the latest of \(found.kind.name)")
                return result
            }
        }
        var embedded: [Migrator.EmbeddedDocumentFound]?
        let outcome = migrator.migrate(value, as: found, to: target, registry: registry, embeddedFound: &embedded)
        switch outcome {
        case .migrated(_, let from, let to, let steps, let migrated):
            (result.from, result.to, result.steps) = (from, to, steps)
            do {
                let output = keepsUnchangedText
                    ? try codec.encode(migrated, over: bytes, holding: value, decoding: decoding)
                    : try codec.encode(migrated, options: .keepingLayout(of: bytes, codec: codec))
                result.status = .migrated
                result.output = output
                result.sha256After = Checksum.sha256(output)
            } catch {
                result.fail(.failed, "migrated, but cannot be written as \(codec.id): \(error)")
            }
        case .unchanged(_, let version):
            (result.from, result.to) = (version, version)
            let violations = migrator.violations(in: value, of: found.kind, version: version, registry: registry, embedded: embedded)
            if violations.isEmpty {
                result.status = .unchanged
            } else {
                result.violations = violations
                // Named by the schema broken: an embedded document's, when all are in one.
                let schema = Set(violations.map(\.schema)).count == 1 ? violations[0].schema : nil
                result.fail(.invalid, "not a valid \(schema ?? "\(found.kind.name) version \(version)"): " + Self.listed(violations))
            }
        // An outcome may be an embedded document's: it names its own kind, and the holder's
        // version stays what was recognised.
        case .invalid(let kind, let version, let violations):
            if kind == found.kind.name { result.to = version }
            result.violations = violations
            result.fail(.invalid, "not a valid \(kind) version \(version): " + Self.listed(violations))
        case .failed(let kind, let from, let error):
            if kind == found.kind.name { result.from = from }
            result.fail(.failed, error.description)
        case .future(let kind, let version):
            let inner = migrator.kinds.first { $0.name == kind } ?? found.kind
            result.fail(.future, "\(inner.describe(.future(version)))\(kind == found.kind.name ? "" : ", inside this \(found.kind.name)"); left as it is")
        case .ambiguous(let kind, let versions):
            let inside = kind == found.kind.name ? "" : " (\(kind), inside this \(found.kind.name))"
            result.fail(.ambiguous, "matches the fingerprints of versions \(versions.map(String.init).joined(separator: ", "))\(inside), expected exactly one")
        case .unrecognized:
            break
        }
        return result
    }
}

/// What the pipeline made of one file.
public struct FileResult: Sendable {
    /// The words of cli.md's report lines.
    public enum Status: String, Sendable, CaseIterable {
        case migrated, unchanged, unrecognized, ambiguous, future, invalid, failed

        /// Whether the file is surely of a kind and something is wrong with it: what a batch counts as failed.
        public var isProblem: Bool { ![.migrated, .unchanged, .unrecognized].contains(self) }
    }

    public var status: Status
    public var kind: String?
    /// Why the kind was taken.
    public var evidence: SaveKind.Evidence?
    public var from: Int?
    public var to: Int?
    public var steps: [String] = []
    /// Why the file is not migrated or unchanged, for people.
    public var problem: String?
    public var violations: [Schema.Violation] = []
    /// Why a file a kind claims could not be read, when its decoder said: its place and its
    /// problem apart, for an answer that names the place in a field of its own.
    public var decodingError: CodecError?
    /// The new bytes, when the file migrates: in the same codec and layout as the input.
    public var output: [UInt8]?
    public var sha256Before: String
    public var sha256After: String?

    public init(status: Status, sha256Before: String) {
        self.status = status
        self.sha256Before = sha256Before
    }

    mutating func fail(_ status: Status, _ problem: String) {
        self.status = status
        self.problem = problem
    }
}

extension SavePipeline {
    /// The first three violations, and how many more there are: a CI job that fixes a file
    /// should know it has not seen every problem (`validate` lists them all).
    static func listed(_ violations: [Schema.Violation]) -> String {
        violations.prefix(3).map(\.description).joined(separator: "; ") + (violations.count > 3 ? "; and \(violations.count - 3) more (savetool validate lists them all)" : "")
    }
}
