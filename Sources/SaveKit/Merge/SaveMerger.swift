import Foundation

/// Merges two copies of a save file (and their base, when known): decodes each in its own
/// codec, recognises the kind, migrates all of them to the kind's current version, merges the
/// documents embedded in it with their own kind's rules, then the document by its kind's rules
/// (``ValueMerger``), and writes the result in the local copy's codec and key order.
///
/// ```swift
/// let merger = try SaveMerger(kinds: kinds, registry: .builtIn)
/// let result = try merger.merge(base: base, local: .init(bytes: phone, name: "phone/save.json"),
///                               remote: .init(bytes: tablet, name: "tablet/save.json"))
/// if result.conflicts.isEmpty { try write(result.output) }
/// ```
public struct SaveMerger: Sendable {
    public var registry: CodecRegistry
    /// The kind to merge as (`--kind`); else each file's kind is recognised (formats.md).
    public var kind: String?
    public var resolve: ValueMerger.Resolver?
    /// Whether each copy is checked against its kind's schema before the merge (a copy that
    /// breaks it is refused, 65, naming the place). A server whose copies were all checked
    /// when they came in turns it off. The merged save is checked always: a rule or an answer
    /// must never write a save its own app cannot read.
    public var checksCopies = true
    let migrator: Migrator

    public init(kinds: [SaveKind], registry: CodecRegistry, kind: String? = nil, resolve: ValueMerger.Resolver? = nil) throws(SaveError) {
        if let kind, !kinds.contains(where: { $0.name == kind }) {
            throw SaveError(.usage, "unknown kind \"\(kind)\", expected one of \(kinds.map(\.name).joined(separator: ", "))")
        }
        (self.registry, self.kind, self.resolve, self.migrator) = (registry, kind, resolve, Migrator(kinds: kinds))
    }

    /// One copy: its bytes, the path kinds' `files` patterns are matched against (relative to
    /// the save folder), and the name errors give.
    public struct Copy: Sendable {
        public var bytes: [UInt8]
        public var path: String?
        public var name: String
        public init(bytes: [UInt8], path: String? = nil, name: String) { (self.bytes, self.path, self.name) = (bytes, path, name) }
    }

    public struct Result: Sendable {
        /// What to write: the local bytes themselves when the merge changes nothing there.
        public var output: [UInt8]
        public var kind: String?
        public var decisions: [MergeDecision]
        public var conflicts: [MergeDecision] { decisions.filter(\.isConflict) }
        /// Whether `output` differs from the local copy.
        public var changesLocal: Bool
    }

    public func merge(base: Copy?, local: Copy, remote: Copy) throws(SaveError) -> Result {
        // Equal copies are merged done, unless both changed the base alike: then a counter's
        // two changes both count (two devices that each earned 10 coins from the same save hold
        // the same bytes), and the rules below decide. Where a counter did count both, that is
        // said first (sameBytes): the same save given twice (pulled twice, a result merged
        // again) would count its changes twice.
        if local.bytes == remote.bytes, base == nil || base?.bytes == local.bytes { return Result(output: local.bytes, kind: nil, decisions: [], changesLocal: false) }
        // One side's change, byte for byte, when both are in the same codec (a re-encoding could
        // only lose the file's own layout).
        if let base, registry.codec(sniffing: local.bytes)?.id == registry.codec(sniffing: remote.bytes)?.id {
            if base.bytes == local.bytes { return whole(.remote, base: base, local: local, remote: remote, why: "changed on the remote side only") }
            if base.bytes == remote.bytes { return whole(.local, base: base, local: local, remote: remote, why: "changed on the local side only") }
        }
        // A file that is no save document (a text file beside the saves, a bundle) merges as a
        // whole file, as one no kind claims does.
        let readable = { (copy: Copy) in registry.saveDocumentCodec(for: copy.bytes, named: copy.path ?? copy.name) != nil }
        guard readable(local), readable(remote) else { return try unrecognised(base: base, local: local, remote: remote) }
        let (localCodec, localValue) = try decode(local)
        let (_, remoteValue) = try decode(remote)
        let baseValue = try base.map { copy throws(SaveError) in try decode(copy).1 }
        guard let found = migrator.match(localValue, path: local.path, named: kind) ?? migrator.match(remoteValue, path: remote.path, named: kind) else {
            return try unrecognised(base: base, local: local, remote: remote)
        }
        let kind = found.kind
        let migrated = try [(local, localValue), (remote, remoteValue)].map { copy, value throws(SaveError) in try current(value, of: kind, copy: copy) }
        let baseMigrated = try base.map { copy throws(SaveError) in try current(baseValue!, of: kind, copy: copy) }
        let sides = migrated.map(\.value), baseCurrent = baseMigrated?.value
        // Every copy is merged at the kind's current version; a copy that was older is said, as
        // import says it, so that a save its app no longer reads is never a surprise.
        let moved = [("local", migrated[0].steps), ("remote", migrated[1].steps), ("base", baseMigrated?.steps ?? [])].filter { !$0.1.isEmpty }
        let copies = moved.map(\.0).joined(separator: ", ")
        let what = Set(moved.map(\.1)).count == 1
            ? "\(moved[0].1.joined(separator: ", ")) (\(copies))"
            : moved.map { "the \($0.0) copy \($0.1.joined(separator: ", "))" }.joined(separator: "; ")
        let migration = moved.isEmpty ? [] : [MergeDecision(
            path: .root, policy: "migrated", result: nil, why: "brought to the current versions before merging: \(what)", isConflict: false)]
        if checksCopies {
            for (copy, value) in [(local, sides[0]), (remote, sides[1])] + (base.map { [($0, baseCurrent!)] } ?? []) {
                if let violation = migrator.violations(in: value, of: kind, version: kind.currentVersion, registry: registry).first {
                    throw SaveError(
                        .badData, file: copy.name, location: violation.at.displayText,
                        "not a valid \(violation.schemaName(else: kind.name, version: kind.currentVersion)): \(violation.message)")
                }
            }
        }
        var (merged, decisions) = mergeDocument(kind: kind, base: baseCurrent, local: sides[0], remote: sides[1], at: .root)
        decisions = migration + decisions
        if local.bytes == remote.bytes, decisions.contains(where: { $0.policy == "counter" && !$0.isConflict }) {
            decisions.insert(MergeDecision(
                path: .root, policy: "sameBytes", result: nil,
                why: "the two copies are the same bytes: merged as two devices that made the same changes, so each counter counts both (one save given twice would count its changes twice)",
                isConflict: false), at: 0)
        }
        if merged == localValue { return Result(output: local.bytes, kind: kind.name, decisions: decisions, changesLocal: false) }
        // Two valid copies can still merge into a save its app cannot read (a counter's sum past
        // its schema's maximum, an answer's value): a conflict at that place, handed to the
        // resolver as any other (an answer, --prefer). It is written only once settled with a
        // value the schema takes, so that it is answered, or parked by a server, rather than
        // refused on every try.
        // Each place settled, with its decision's index: settled again, it stays open.
        var settled: [(place: JSONPointer, decision: Int)] = []
        while let violation = migrator.violations(in: merged, of: kind, version: kind.currentVersion, registry: registry).first {
            var why = "the merged save would break \(violation.schemaName(else: kind.name, version: kind.currentVersion)) here: \(violation.message)"
            if let earlier = settled.first(where: { $0.place == violation.at }) {
                decisions.remove(at: earlier.decision)
                why += "; the value it was settled with breaks it too"
            } else if var decision = settleSchemaConflict(at: violation.at, why: why, base: baseCurrent, local: sides[0], remote: sides[1], in: &merged) {
                decision.kind = embeddedKind(at: violation.at, in: merged, of: kind)
                settled.append((violation.at, decisions.count))
                decisions.append(decision)
                continue
            }
            var conflict = MergeDecision(path: violation.at, policy: "schema", result: nil, why: why, isConflict: true)
            // Inside a document held in this one, it is that document's schema.
            conflict.kind = embeddedKind(at: violation.at, in: merged, of: kind)
            return Result(output: local.bytes, kind: kind.name, decisions: decisions + [conflict], changesLocal: false)
        }
        if merged == localValue { return Result(output: local.bytes, kind: kind.name, decisions: decisions, changesLocal: false) }
        var options = EncodingOptions.keepingLayout(of: local.bytes, codec: localCodec)
        // The other copy may be a binary plist with a fraction of a second in a date, which an
        // XML plist cannot hold: dropped, as the app's own XML writer drops it, rather than
        // leaving a save that no merge can ever write.
        options.subsecondDatePolicy = .truncate
        do {
            // Over the local copy's text: a merge that changed three fields changes three lines.
            let output = try localCodec.encode(merged, over: local.bytes, holding: localValue, options: options)
            return Result(output: output, kind: kind.name, decisions: decisions, changesLocal: output != local.bytes)
        } catch {
            throw SaveError(.badData, file: local.name, "the merged save cannot be written as \(localCodec.id): \(error)", cause: error)
        }
    }

    /// A document of `kind`, its embedded documents merged first with their own kinds' rules.
    func mergeDocument(kind: SaveKind?, base: SaveValue?, local: SaveValue, remote: SaveValue, at prefix: JSONPointer) -> (SaveValue, [MergeDecision]) {
        var (base, local, remote) = (base, local, remote)
        var decisions: [MergeDecision] = []
        if let kind {
            for found in migrator.embeddedDocuments(in: local, of: kind, registry: registry) {
                let pointer = found.pointer
                guard let innerLocal = found.value,
                    let innerRemote = remote.value(at: pointer).flatMap(EmbeddedDocument.bytes(of:)).flatMap({ try? found.codec.decode($0, options: EmbeddedDocument.decoding) })
                else { continue }  // not a document on one side: the holder's own rules decide
                let innerBase = base?.value(at: pointer).flatMap(EmbeddedDocument.bytes(of:)).flatMap { try? found.codec.decode($0, options: EmbeddedDocument.decoding) }
                let (merged, inner) = mergeDocument(
                    kind: found.kind, base: innerBase, local: innerLocal, remote: innerRemote, at: prefix.appending(pointer))
                // Named by the kind whose rules applied; a document no kind claims, by none.
                decisions += inner.map { decision in
                    var decision = decision
                    if decision.kind == nil { decision.kind = found.kind?.name ?? "" }
                    return decision
                }
                var replacement = local.value(at: pointer)!
                if merged != innerLocal {
                    guard let written = try? EmbeddedDocument.replacement(for: merged, over: found.bytes, holding: innerLocal, codec: found.codec, asText: found.heldAsText)
                    else { continue }
                    replacement = written
                }
                // The holder's merge then sees one value here on every side.
                try? local.setValue(replacement, at: pointer)
                try? remote.setValue(replacement, at: pointer)
                if base != nil { try? base!.setValue(replacement, at: pointer) }
            }
        }
        let outcome = ValueMerger(rules: kind?.merge, resolve: resolve).merge(base: base, local: local, remote: remote, at: prefix)
        return (outcome.value, decisions + outcome.decisions)
    }

    private func decode(_ copy: Copy) throws(SaveError) -> (any SaveCodec, SaveValue) {
        let codec: any SaveCodec
        do {
            codec = try registry.detect(bytes: copy.bytes, path: copy.path ?? copy.name)
        } catch {
            throw SaveError(.badData, file: copy.name, "cannot tell its format: \(error)", hint: .nameTheCodec, cause: error)
        }
        do {
            let value = try codec.decode(copy.bytes)
            // A keyed archive is merged as the objects it holds, and archived again over the
            // local copy's table; a value taken from the other side may be of another type.
            if let keyed = try registry.keyedView(of: value, decodedBy: codec, retyping: true) { return (keyed.codec, keyed.view) }
            return (codec, value)
        } catch {
            throw SaveError(reading: error, file: copy.name)
        }
    }

    /// The document at `kind`'s current version, and the steps that took it there: every side
    /// is merged at the same version.
    private func current(_ value: SaveValue, of kind: SaveKind, copy: Copy) throws(SaveError) -> (value: SaveValue, steps: [String]) {
        let found = Migrator.Match(kind: kind, recognition: kind.recognise(value), evidence: .named)
        switch migrator.migrate(value, as: found, registry: registry) {
        case .migrated(_, let from, let to, let steps, let migrated): return (migrated, from == to ? steps : ["\(from)→\(to)"] + steps.filter { $0.contains(":") })
        case .unchanged: return (value, [])
        case .unrecognized: throw SaveError(.badData, file: copy.name, "no version field or fingerprint of \(kind.name) matches, expected a \(kind.name) save")
        // These may be a document held inside: named by its own kind, at its place.
        case .ambiguous(let ambiguousKind, let versions):
            let place = ambiguousKind == kind.name ? nil : embeddedDocument(in: value, of: kind) { $0.kind?.name == ambiguousKind && $0.recognition == .ambiguous(versions) }
            throw SaveError(
                .badData, file: copy.name, location: place?.displayText,
                "matches the fingerprints of \(ambiguousKind) versions \(versions.map(String.init).joined(separator: ", ")), expected exactly one")
        case .future(let futureKind, let version):
            let inner = migrator.kinds.first { $0.name == futureKind } ?? kind
            let place = inner.name == kind.name ? nil : embeddedDocument(in: value, of: kind) { $0.kind?.name == inner.name && $0.recognition == .future(version) }
            throw SaveError(.badData, file: copy.name, location: place?.displayText, "\(inner.describe(.future(version))); expected at most \(inner.currentVersion)")
        case .invalid(let invalidKind, let version, let violations):  // the embedded save's kind, when it is its schema
            throw SaveError(.badData, file: copy.name, location: violations.first?.at.displayText, "not a valid \(invalidKind) version \(version): \(violations.first?.message ?? "")")
        case .failed(_, _, let error): throw SaveError(.badData, file: copy.name, "cannot be migrated to \(kind.name) version \(kind.currentVersion): \(error)")
        }
    }

    /// The place of the first document held in `value` that `matches`.
    private func embeddedDocument(in value: SaveValue, of kind: SaveKind, where matches: (Migrator.EmbeddedDocumentFound) -> Bool) -> JSONPointer? {
        migrator.embeddedDocuments(in: value, of: kind, registry: registry).first(where: matches)?.pointer
    }

    /// The kind of the document held in `value` that `place` is inside, if any.
    private func embeddedKind(at place: JSONPointer, in value: SaveValue, of kind: SaveKind) -> String? {
        migrator.embeddedDocuments(in: value, of: kind, registry: registry)
            .first { place.tokens.starts(with: $0.pointer.tokens) }.map { $0.kind?.name ?? "" }
    }

    /// A place where the merged save breaks its schema, settled by the resolver: the value there
    /// becomes the side's it takes (none, where that side has none) or the value it gives.
    /// `nil` when nothing settles it, or the value cannot be put there.
    private func settleSchemaConflict(
        at place: JSONPointer, why: String, base: SaveValue?, local: SaveValue, remote: SaveValue, in merged: inout SaveValue
    ) -> MergeDecision? {
        func value(in side: SaveValue?) -> SaveValue? { try? side?.value(at: place, seeingThrough: registry) }
        let (baseValue, localValue, remoteValue) = (value(in: base), value(in: local), value(in: remote))
        let conflict = MergeConflict(path: place, base: baseValue, local: localValue, remote: remoteValue, reason: why)
        guard let (resolution, by) = resolve?(conflict) else { return nil }
        let chosen: SaveValue?
        switch resolution {
        case .take(.base) where base == nil: return nil
        case .take(let side): chosen = side == .local ? localValue : side == .remote ? remoteValue : baseValue
        case .value(let given): chosen = given
        }
        var edited = merged
        do {
            if let chosen { try edited.setValue(chosen, at: place, seeingThrough: registry) } else { try edited.removeValue(at: place, seeingThrough: registry) }
        } catch {
            return nil
        }
        merged = edited
        return MergeDecision(
            path: place, policy: "schema", base: baseValue, local: localValue, remote: remoteValue, result: chosen, why: "\(why); settled by \(by)", isConflict: false)
    }

    /// Two different files no kind claims: nothing tells how to merge them, so one is taken
    /// whole only when the base shows the other unchanged, or an answer says which.
    private func unrecognised(base: Copy?, local: Copy, remote: Copy) throws(SaveError) -> Result {
        if local.bytes == remote.bytes {
            return Result(
                output: local.bytes, kind: nil, decisions: [MergeDecision(path: .root, policy: "changedAlike", result: nil, why: "the same change on both sides", isConflict: false)],
                changesLocal: false)
        }
        if let base, base.bytes == local.bytes { return whole(.remote, base: base, local: local, remote: remote, why: "changed on the remote side only") }
        if let base, base.bytes == remote.bytes { return whole(.local, base: base, local: local, remote: remote, why: "changed on the local side only") }
        let reason = "no save kind recognises it and the two copies differ, so it cannot be merged value by value"
        let conflict = MergeConflict(path: .root, base: nil, local: nil, remote: nil, reason: reason)
        if let (resolution, by) = resolve?(conflict), case .take(let side) = resolution, side != .base || base != nil {
            let chosen = side == .local ? local : side == .remote ? remote : base!
            return Result(
                output: chosen.bytes, kind: nil,
                decisions: [MergeDecision(path: .root, policy: "answer", result: nil, why: "\(reason); the \(side.rawValue) copy, settled by \(by)", isConflict: false)],
                changesLocal: chosen.bytes != local.bytes)
        }
        return Result(output: local.bytes, kind: nil, decisions: [MergeDecision(path: .root, policy: "wholeFile", result: nil, why: reason, isConflict: true)], changesLocal: false)
    }

    private func whole(_ side: MergeSide, base: Copy, local: Copy, remote: Copy, why: String) -> Result {
        let chosen = side == .local ? local : remote
        return Result(
            output: chosen.bytes, kind: nil, decisions: [MergeDecision(path: .root, policy: "changedOnOneSide", result: nil, why: why, isConflict: false)],
            changesLocal: side == .remote)
    }
}

extension MergeDecision {
    /// A decision about a whole file, whose values are its bytes rather than shown.
    init(path: JSONPointer, policy: String, result: SaveValue?, why: String, isConflict: Bool) {
        self.init(path: path, policy: policy, base: nil, local: nil, remote: nil, result: result, why: why, isConflict: isConflict)
    }
}
