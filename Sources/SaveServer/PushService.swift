import Foundation
import SaveKit
import SaveSync

/// What a push does, whatever carries it (HTTP here): the body through SaveKit's per-file
/// pipeline (decode, recognise, migrate, validate), then stored as the next version — on top
/// of the head it was based on, or merged three ways with the head by the kind's policies,
/// against the version the device last synced. A merge that leaves conflicts is parked.
///
/// Synchronous and blocking (storage, fsync): the server calls it off its event loops.
public struct PushService: Sendable {
    public let store: SlotStore
    public let pipeline: SavePipeline
    public let merger: SaveMerger
    /// How many times a push is merged again when another process took the next version first
    /// (with a short random pause growing each time, so that two busy processes take turns).
    public var attempts = 40
    /// Versions kept per slot (`--keep-versions`), thinned every ``thinningInterval(_:)`` versions; `nil` keeps all.
    public var keepVersions: Int? = 100
    /// Of the thinned versions, each of this many last days' last version stays.
    public var keepDays = 7
    /// Bounds the checks and merges running at once (not the flushes).
    let decoding = DecodingTurns()

    public init(store: SlotStore, kinds: [SaveKind], registry: CodecRegistry) throws(SaveError) {
        self.store = store
        pipeline = try SavePipeline(kinds: kinds, registry: registry)
        var merger = try SaveMerger(kinds: kinds, registry: registry)
        // A push is checked before it is merged, and the versions it meets were checked when
        // they were stored: only the merged save needs its check.
        merger.checksCopies = false
        self.merger = merger
    }

    /// Which version the device says its copy is based on.
    public enum Base: Sendable, Equatable {
        /// `If-None-Match: *`: the slot's first push.
        case none
        /// `If-Match: "0"`: a device that never synced this slot.
        case unknown
        /// `If-Match: "N"`.
        case version(Int)
        /// `?force=true`: stored as the new head whatever it is (history kept).
        case force
    }

    /// The version a push says it is based on does not fit the slot (the HTTP API's 412).
    public struct BaseMismatch: CategorizedError, Sendable {
        public var message: String
        public var category: ErrorCategory { .usage }
        public var description: String { message }
    }

    public enum Outcome: Sendable {
        /// Stored: the version, and the bytes the device should hold.
        case stored(VersionRecord, bytes: [UInt8])
        /// Nothing stored: the push holds what the head does already.
        case alreadyHead(VersionRecord, bytes: [UInt8])
        /// The merge left conflicts; the push is kept under `parked`, and the head is unchanged.
        case conflict(head: Int, conflicts: [MergeDecision], parked: String)
    }

    public func push(_ body: [UInt8], to address: SlotAddress, base: Base, device: String?) throws -> Outcome {
        try push(try check(body, slot: address), to: address, base: base, device: device)
    }

    /// Stores a push that passed ``check(_:slot:)``.
    func push(_ checked: Checked, to address: SlotAddress, base: Base, device: String?) throws -> Outcome {
        try store.exclusively(address) {
            var lost = 0
            for _ in 1...attempts {
                do {
                    let outcome = try attempt(checked, to: address, base: base, device: device)
                    if case .stored(let record, _) = outcome, let keep = keepVersions, record.version % Self.thinningInterval(keep) == 0, record.version > keep {
                        // The push is durable already; a failed thinning is tried again an interval on.
                        try? store.thin(address, keep: keep, days: keepDays)
                    }
                    return outcome
                } catch let error as SaveError where error.category == .conflict {
                    // Another process took the version: its head is read again, and merged with.
                    lost += 1
                    Thread.sleep(forTimeInterval: Double.random(in: 0.001...0.005) * Double(min(lost, 10)))
                    continue
                }
            }
            throw SaveError(.busy, file: address.description, "the slot changed \(attempts) times while this push was merged; try again")
        }
    }

    /// How many versions a slot gains between two thinnings: each lists the slot's folder, so a
    /// slot that keeps many is thinned seldom (it holds up to `keep` plus the larger of `keep`/2 and 10).
    static func thinningInterval(_ keep: Int) -> Int { max(10, keep / 2) }

    /// A new head equal to version `number`.
    public func restore(_ number: Int, of address: SlotAddress, device: String?) throws -> VersionRecord {
        try store.exclusively(address) {
            for _ in 1...attempts {
                guard let old = try store.version(number, of: address) else {
                    throw SaveError(.notFound, file: address.description, "no version \(number) of this slot")
                }
                guard let head = try store.head(of: address) else { throw SaveError(.notFound, file: address.description, "no such slot") }
                var record = old.record
                (record.version, record.device, record.createdAt, record.how) = (head.record.version + 1, device, Date(), .restored)
                (record.restoredFrom, record.base, record.mergedWith, record.decisions) = (number, nil, nil, [])
                do {
                    try store.create(record, bytes: old.bytes, at: address)
                    return record
                } catch let error as SaveError where error.category == .conflict { continue }
            }
            throw SaveError(.busy, file: address.description, "the slot changed \(attempts) times during the restore; try again")
        }
    }

    /// A push's body after the pipeline: what to store.
    struct Checked: Sendable {
        /// The SHA-256 of the body as it came.
        var pushed: String
        var bytes: [UInt8]
        var codec: String
        var kind: String?
        var schemaVersion: Int?
        /// The version the pipeline migrated the push from, if it did, and its steps
        /// (`1→2`, or `/gameSave: blocks.gamesave 1→2` for an embedded save).
        var migratedFrom: Int?
        var migrationSteps: [String] = []
    }

    /// Bad data is refused before anything is stored: a body that does not decode, is not in
    /// the codec the slot's name says, or is a save of a kind that fails its schema.
    func check(_ body: [UInt8], slot address: SlotAddress) throws -> Checked {
        let name = address.slotName
        let registry = pipeline.registry
        guard let codec = registry.saveDocumentCodec(for: body, named: name) else {
            throw SaveError(.badData, file: name, location: "byte 0", CodecRegistry.notASaveDocument)
        }
        if let named = registry.codec(forPath: name), !Self.sameFamily(named.id, codec.id) {
            throw SaveError(.badData, file: name, location: "byte 0", "\(codec.id) data, expected \(named.id) as the slot's name says")
        }
        let result = decoding.inTurn { pipeline.process(body, path: name) }
        // The pipeline decodes what a kind may claim; a body no kind claims is decoded here, so
        // that only save documents are stored.
        if result.status == .unrecognized {
            let value: SaveValue
            do { value = try decoding.inTurn { try codec.decode(body) } } catch {
                throw SaveError(reading: error, file: name)
            }
            // `5` or `"text"` is JSON, but no app keeps its state in a lone number or string.
            switch value {
            case .dictionary, .array: break
            default: throw SaveError(.badData, file: name, location: "byte 0", "a lone \(value.typeName) at the top, expected an object or array")
            }
        }
        switch result.status {
        case .migrated, .unchanged, .unrecognized:
            return Checked(
                pushed: result.sha256Before, bytes: result.output ?? body, codec: codec.id, kind: result.kind, schemaVersion: result.to ?? result.from,
                migratedFrom: result.status == .migrated ? result.from : nil, migrationSteps: result.status == .migrated ? result.steps : [])
        case .ambiguous, .future, .invalid, .failed:
            if let decoding = result.decodingError { throw SaveError(reading: decoding, file: name) }
            throw SaveError(.badData, file: name, location: result.violations.first?.at.displayText, result.problem ?? "not a valid save")
        }
    }

    /// A `.plist` slot takes either property list codec: devices write XML or binary alike.
    static func sameFamily(_ first: String, _ second: String) -> Bool {
        first == second || (first.hasSuffix("plist") && second.hasSuffix("plist"))
    }

    private func record(
        _ version: Int, _ bytes: [UInt8], _ pushed: Checked, device: String?, how: VersionRecord.Origin, base: Int? = nil, mergedWith: Int? = nil,
        kind: String? = nil, decisions: [MergeDecision] = []
    ) -> VersionRecord {
        VersionRecord(
            version: version, sha256: Checksum.sha256(bytes), size: bytes.count, codec: pipeline.registry.codec(sniffing: bytes)?.id ?? pushed.codec,
            kind: kind ?? pushed.kind, schemaVersion: pushed.schemaVersion, device: device, createdAt: Date(), how: how, base: base, mergedWith: mergedWith,
            pushed: pushed.pushed, decisions: decisions)
    }

    private func attempt(_ pushed: Checked, to address: SlotAddress, base: Base, device: String?) throws -> Outcome {
        let head = try store.head(of: address)
        func record(_ version: Int, _ bytes: [UInt8], how: VersionRecord.Origin, base: Int? = nil) -> VersionRecord {
            self.record(version, bytes, pushed, device: device, how: how, base: base)
        }
        func keep(_ made: VersionRecord, _ bytes: [UInt8]) throws -> Outcome {
            try self.store.create(made, bytes: bytes, at: address)
            return .stored(made, bytes: bytes)
        }
        guard let head else {
            switch base {
            case .version(let number):
                throw BaseMismatch(message: "no version \(number): the slot has none yet; push it as new (If-None-Match: *)")
            case .none, .unknown, .force:
                return try keep(record(1, pushed.bytes, how: .first), pushed.bytes)
            }
        }
        let next = head.record.version + 1
        switch base {
        case .none:
            throw BaseMismatch(message: "the slot exists already (version \(head.record.version)), expected If-Match with the version this copy is based on")
        case .force:
            return try keep(record(next, pushed.bytes, how: .forced), pushed.bytes)
        case .version(let number) where number > head.record.version || number < 1:
            throw BaseMismatch(message: "no version \(number) of this slot, expected a version up to its head, \(head.record.version)")
        case .version(let number) where number == head.record.version:
            // Nothing new: the device's copy is the head already.
            if pushed.bytes == head.bytes { return .alreadyHead(head.record, bytes: head.bytes) }
            return try keep(record(next, pushed.bytes, how: .fastForward, base: number), pushed.bytes)
        case .version(let number):
            if let known = try knownPush(pushed, device: device, base: number, head: head, at: address) { return known }
            // A base thinned away since is treated as none: every difference reaches a rule.
            let baseBytes = try self.store.version(number, of: address)?.bytes
            return try merge(pushed, base: baseBytes, baseNumber: number, head: head, address: address, device: device)
        case .unknown:
            if pushed.bytes == head.bytes { return .alreadyHead(head.record, bytes: head.bytes) }
            if let known = try knownPush(pushed, device: device, base: nil, head: head, at: address) { return known }
            return try merge(pushed, base: nil, baseNumber: nil, head: head, address: address, device: device)
        }
    }

    /// The answer to a push the server has seen before, looked for among the versions since its
    /// base (the last 64):
    /// - the version this very push made already (the same bytes, base and device): a device
    ///   sends a push again when it never got the answer, and merging it twice would count its
    ///   counters twice;
    /// - the head, when the push is, byte for byte, a version made since its base in answer to
    ///   this device's own push: the device wrote that answer and was stopped before it could
    ///   remember so. It changed nothing since; merged against the older base, each change
    ///   between the two would count twice. (Another device's version, equal by chance, is not
    ///   this: two devices that each earned 10 coins from one base both count.)
    ///
    /// Only for pushes that name their device: two devices' equal pushes cannot be told from one
    /// sent twice otherwise.
    private func knownPush(_ pushed: Checked, device: String?, base: Int?, head: SlotStore.Stored, at address: SlotAddress) throws -> Outcome? {
        guard device != nil else { return nil }
        let newest = head.record.version
        var held = false
        for number in stride(from: newest, to: max(base ?? 0, newest - 64), by: -1) {
            guard let origin = try store.origin(of: number, at: address), origin.device == device else { continue }
            if origin.base == base, origin.pushed == pushed.pushed, let stored = try store.version(number, of: address) {
                return .stored(stored.record, bytes: stored.bytes)
            }
            held = held || origin.sha256 == pushed.pushed
        }
        return held ? .alreadyHead(head.record, bytes: head.bytes) : nil
    }

    private func merge(
        _ pushed: Checked, base: [UInt8]?, baseNumber: Int?, head: SlotStore.Stored, address: SlotAddress, device: String?
    ) throws -> Outcome {
        let name = address.slotName
        let result = try decoding.inTurn {
            try merger.merge(
                base: base.map { .init(bytes: $0, path: name, name: "version \(baseNumber ?? 0)") },
                local: .init(bytes: pushed.bytes, path: name, name: "the push"),
                remote: .init(bytes: head.bytes, path: name, name: "version \(head.record.version)"))
        }
        let how: VersionRecord.Origin = base == nil ? .mergedWithoutBase : .merged
        guard result.conflicts.isEmpty else {
            var parked = record(
                head.record.version, pushed.bytes, pushed, device: device, how: .conflicted, base: baseNumber, mergedWith: head.record.version,
                decisions: result.decisions)
            parked.state = .parked
            let name = try store.park(parked, bytes: pushed.bytes, at: address, headMadeAt: head.record.createdAt)
            return .conflict(head: head.record.version, conflicts: result.conflicts, parked: name)
        }
        let made = record(
            head.record.version + 1, result.output, pushed, device: device, how: how, base: baseNumber, mergedWith: head.record.version,
            kind: result.kind, decisions: result.decisions)
        try store.create(made, bytes: result.output, at: address)
        return .stored(made, bytes: result.output)
    }
}
