import Crypto
import Foundation
import SaveKit
import SaveStorage
import SaveSync

/// The versions of every slot, in a ``SaveStorage`` (a local folder or an S3 prefix).
///
/// Layout: a folder per space, a folder per slot in it, and in that one object per version
/// (`v0000000007`) and per parked push (`p<milliseconds>-<random>`). Each object is the
/// version's record as one line of JSON, a newline, then the save's bytes, so that a version
/// appears whole or not at all. The store's top holds a marker per space (`~space-<name>`), and
/// a space's folder one per slot (`~slot-<name>`), that list them. Names join segments with `~` (never in a segment, and left as it is in a
/// URL, so that every object store signs it alike); a name too long for a file system is
/// replaced by `~` and its SHA-256, and the record keeps the real one.
///
/// Version N+1 is created with `ifAbsent`: that is the compare-and-swap. Two processes on one
/// store that race for it both try; one gets `conflict`, reads the new head and merges again.
public final class SlotStore: @unchecked Sendable {
    public let storage: any SaveStorage
    private let lock = NSLock()
    /// The last head seen per slot: a hint, checked by looking for the version after it.
    private var knownHeads: [SlotAddress: Int] = [:]
    private var slotLocks: [SlotAddress: NSLock] = [:]
    /// Who made each recent version from what, per slot (versions never change once written):
    /// a push looking for its own earlier answer rarely reads versions again.
    private var recentOrigins: [SlotAddress: [Int: Origin]] = [:]
    /// Versions seen lately, whole: a push's head and base are seldom read from storage twice.
    private let recent = RecentVersions(budget: 16 << 20)

    /// What tells a push tried again from a new one, and a device that holds a version already.
    public struct Origin: Sendable, Equatable {
        public var base: Int?
        public var pushed: String?
        public var device: String?
        /// The version's own bytes' SHA-256.
        public var sha256: String

        init(_ record: VersionRecord) {
            (base, pushed, device, sha256) = (record.base, record.pushed, record.device, record.sha256)
        }
    }

    public init(storage: any SaveStorage) { self.storage = storage }

    /// One stored version (or parked push): its record and the save's bytes.
    public struct Stored: Sendable {
        public var record: VersionRecord
        public var bytes: [UInt8]
    }

    // MARK: Reading

    /// The highest version, or `nil` for a slot never pushed.
    public func head(of address: SlotAddress) throws -> Stored? {
        let folder = try slotFolder(address)
        var known = lock.withLock { knownHeads[address] }
        // Another process may have thinned past the head this one knows: one below the floor is
        // looked for again from there.
        if let cached = known, try cached < floor(in: folder) { known = nil }
        if known == nil { known = try lastVersion(in: folder) }
        guard var number = known else { return nil }
        // Another process may have gone further: the versions after the one known are looked for.
        var stored = try recent[address, number] ?? read(versionName(number), in: folder)
        while let next = try read(versionName(number + 1), in: folder) {
            (number, stored) = (number + 1, next)
        }
        guard let stored else {
            // The known head is gone (a store emptied under a running server): list again.
            lock.withLock { knownHeads[address] = nil }
            guard let listed = try lastVersion(in: folder) else { return nil }
            return try read(versionName(listed), in: folder)
        }
        remember(number, of: address)
        recent.keep(stored, of: address)
        return stored
    }

    public func version(_ number: Int, of address: SlotAddress) throws -> Stored? {
        guard number >= 1 else { return nil }
        if let known = recent[address, number] { return known }
        let stored = try read(versionName(number), in: try slotFolder(address))
        if let stored {
            keep(stored.record, of: address)
            recent.keep(stored, of: address)
        }
        return stored
    }

    /// Where version `number` came from, from memory when it was seen lately.
    public func origin(of number: Int, at address: SlotAddress) throws -> Origin? {
        if let known = lock.withLock({ recentOrigins[address]?[number] }) { return known }
        return try version(number, of: address).map { Origin($0.record) }
    }

    private func keep(_ record: VersionRecord, of address: SlotAddress) {
        lock.withLock {
            // Changed in place: a copy of the slot's table per push showed in profiles.
            recentOrigins[address, default: [:]][record.version] = Origin(record)
            if recentOrigins[address]!.count > 64, let oldest = recentOrigins[address]!.keys.min() { recentOrigins[address]![oldest] = nil }
        }
    }

    /// Every version and parked push, newest first.
    public func history(of address: SlotAddress) throws -> [VersionRecord] {
        let folder = try slotFolder(address)
        var records: [VersionRecord] = []
        for object in try objects(in: folder) where object.name.hasPrefix("v") || object.name.hasPrefix("p") {
            if let stored = try read(object.name, in: folder) { records.append(stored.record) }
        }
        return records.sorted { ($0.createdAt, $0.version, $0.state == .parked ? 1 : 0) > ($1.createdAt, $1.version, $1.state == .parked ? 1 : 0) }
    }

    /// Every space, by name.
    public func spaces() throws -> [String] {
        try objects(in: storage).filter { $0.name.hasPrefix(Self.spaceMarkerPrefix) }
            .map { String(decoding: try storage.read($0.name), as: UTF8.self) }.sorted()
    }

    /// The slots of a space with their heads, by name.
    public func slots(in space: [String]) throws -> [(slot: String, head: VersionRecord)] {
        let folder = try storage.child(Self.folderName(space))
        var slots: [(String, VersionRecord)] = []
        for object in try objects(in: folder) where object.name.hasPrefix(Self.markerPrefix) {
            let slot = String(decoding: try folder.read(object.name), as: UTF8.self)
            guard let address = try? SlotAddress(space: space.joined(separator: "/"), slot: slot), let head = try head(of: address) else { continue }
            slots.append((slot, head.record))
        }
        return slots.sorted { $0.0 < $1.0 }
    }

    // MARK: Writing

    /// Stores version `record.version` of the slot, only if no such version exists: a
    /// `conflict` error means another push took the number first.
    public func create(_ record: VersionRecord, bytes: [UInt8], at address: SlotAddress) throws {
        let folder = try slotFolder(address)
        if record.version == 1 {
            // The markers first: a slot listed before its first version is harmless, one
            // missing from the list is not.
            try storage.write(Array(address.spaceName.utf8), to: Self.spaceMarkerPrefix + Self.folderName(address.space), ifAbsent: true)
            let space = try storage.child(Self.folderName(address.space))
            try space.write(Array(address.slotName.utf8), to: Self.markerPrefix + Self.folderName(address.slot), ifAbsent: true)
        }
        try folder.write(Self.object(record, bytes: bytes, slot: address.slotName), to: versionName(record.version), ifAbsent: true)
        remember(record.version, of: address)
        keep(record, of: address)
        recent.keep(Stored(record: record, bytes: bytes), of: address)
    }

    /// Keeps a push that could not be merged; returns its name in the history. The same push
    /// against the same head (its bytes, base and device), parked already, is kept once and
    /// its name returned: a device that syncs again before its conflict is settled, every hour
    /// from cron, would otherwise add a copy each time.
    public func park(_ record: VersionRecord, bytes: [UInt8], at address: SlotAddress, headMadeAt: Date? = nil) throws -> String {
        let folder = try slotFolder(address)
        // Without a Device-Id, two devices' equal pushes could not be told from one sent again.
        if record.device != nil {
            // Names are `p<milliseconds>-…`: by name is by age. Only pushes parked since the head
            // was made can have met it, and the newest few are enough: a device's next sync of
            // the same conflict comes before others pile up.
            let since = headMadeAt.map { Int64($0.timeIntervalSince1970 * 1000) } ?? 0
            let parked = try objects(in: folder).map(\.name).filter { $0.hasPrefix("p") && (Self.parkedAt($0) ?? .max) >= since }.sorted().suffix(32)
            for name in parked.reversed() {
                guard let earlier = try read(name, in: folder)?.record else { continue }
                if (earlier.pushed, earlier.base, earlier.device, earlier.mergedWith) == (record.pushed, record.base, record.device, record.mergedWith) { return name }
            }
        }
        let name = "p" + String(Int64(record.createdAt.timeIntervalSince1970 * 1000)) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var record = record
        (record.state, record.parked) = (.parked, name)
        try folder.write(Self.object(record, bytes: bytes, slot: address.slotName), to: name, ifAbsent: true)
        return name
    }

    /// A parked push by its name (`p<milliseconds>-<hex>`, as the 409 answer and the history
    /// give it), or `nil` when there is none: what an operator or an app reads to settle by hand.
    public func parked(_ name: String, of address: SlotAddress) throws -> Stored? {
        guard Self.isParkedName(name) else { return nil }
        guard let stored = try read(name, in: try slotFolder(address)), stored.record.state == .parked else { return nil }
        return stored
    }

    /// Whether `name` is a parked push's: checked before it reaches the store.
    static func isParkedName(_ name: String) -> Bool {
        let parts = name.dropFirst().split(separator: "-", omittingEmptySubsequences: false)
        return name.hasPrefix("p") && name.count <= 40 && parts.count == 2 && parkedAt(name) != nil
            && !parts[1].isEmpty && parts[1].allSatisfy(\.isHexDigit) && parts[0].allSatisfy(\.isASCII)
    }

    /// When a parked push was parked, in milliseconds, from its name (`p<milliseconds>-…`).
    static func parkedAt(_ name: String) -> Int64? {
        Int64(name.dropFirst().prefix { $0 != "-" })
    }

    /// Runs `body` with the slot to itself in this process: pushes to one slot are merged one
    /// after another, never two against the same head.
    public func exclusively<T>(_ address: SlotAddress, _ body: () throws -> T) rethrows -> T {
        let slotLock = lock.withLock {
            if let existing = slotLocks[address] { return existing }
            let made = NSLock()
            slotLocks[address] = made
            return made
        }
        return try slotLock.withLock(body)
    }

    // MARK: -

    /// A folder's name starts with a segment's character, or is `~` and hexadecimal digits:
    /// `~slot-` starts none, so a marker never takes a folder's name (and `~` is left as it
    /// is in a URL, which every object store signs alike).
    static let markerPrefix = "~slot-"
    static let spaceMarkerPrefix = "~space-"

    private func remember(_ number: Int, of address: SlotAddress) {
        lock.withLock { knownHeads[address] = max(knownHeads[address] ?? 0, number) }
    }

    private func slotFolder(_ address: SlotAddress) throws -> any SaveStorage {
        try storage.child(Self.folderName(address.space)).child(Self.folderName(address.slot))
    }

    private func versionName(_ number: Int) -> String {
        let digits = String(number)
        return "v" + String(repeating: "0", count: max(0, 10 - digits.count)) + digits
    }

    /// The highest version, found by reading rather than listing (an object store lists a
    /// whole prefix to find one slot's): from the floor (the lowest version thinning keeps in an
    /// unbroken run up to the head; 1 before any thinning), versions floor + 1, 2, 4 … until one
    /// is missing, then a binary search between the last two.
    private func lastVersion(in folder: any SaveStorage) throws -> Int? {
        func exists(_ number: Int) throws -> Bool { try read(versionName(number), in: folder) != nil }
        var floor = try self.floor(in: folder)
        // Thinning moves the floor up before it removes what is below: a floor read just before
        // is read again.
        while try !exists(floor) {
            let now = try self.floor(in: folder)
            guard now != floor else { return nil }
            floor = now
        }
        var (present, step) = (floor, 1)
        while try exists(present + step) { (present, step) = (present + step, step * 2) }
        var missing = present + step
        while missing - present > 1 {
            let middle = (present + missing) / 2
            if try exists(middle) { present = middle } else { missing = middle }
        }
        return present
    }

    private static let floorName = "floor"

    private func floor(in folder: any SaveStorage) throws -> Int {
        do { return Int(String(decoding: try folder.read(Self.floorName), as: UTF8.self)) ?? 1 } catch let error as SaveError where error.category == .notFound { return 1 }
    }

    /// Removes old versions of a slot, keeping the last `keep` (the head among them), each
    /// day's last version of the last `days` days, and parked pushes younger than 30 days.
    /// The floor moves up first, so that a reader never looks for the head below it.
    public func thin(_ address: SlotAddress, keep: Int, days: Int = 7, now: Date = Date()) throws {
        let folder = try slotFolder(address)
        let names = try objects(in: folder).map(\.name)
        let versions = names.compactMap { $0.hasPrefix("v") ? Int($0.dropFirst()) : nil }.sorted()
        guard let head = versions.last, versions.count > keep else { return }
        let newFloor = max(1, head - keep + 1)
        var keeping = Set(versions.filter { $0 >= newFloor })
        // Each day's last version, for the last `days` days (UTC). Versions come in time order,
        // so a day that reaches the floor has its last version above it, kept already.
        let oldest = now.addingTimeInterval(-Double(days) * 86_400)
        let floorDay = try version(newFloor, of: address).map { Self.utcDay($0.record.createdAt) } ?? Self.utcDay(now)
        let below = versions.filter { $0 < newFloor }
        for (recorded, last) in try lastOfEachDay(below, of: address) where recorded.day < floorDay && recorded.createdAt >= oldest {
            keeping.insert(last)
        }
        try folder.write(Array(String(newFloor).utf8), to: Self.floorName, ifAbsent: false)
        let thinned = versions.filter { !keeping.contains($0) }
        recent.forget(thinned, of: address)
        let oldParked = names.filter { name in
            guard name.hasPrefix("p") else { return false }
            let millis = Int64(name.dropFirst().prefix { $0 != "-" }) ?? Int64.max
            return Double(millis) / 1000 < now.timeIntervalSince1970 - 30 * 86_400
        }
        try folder.delete(thinned.map(versionName) + oldParked)
    }

    /// A version's UTC day (days since 1970) and time.
    private typealias Dated = (day: Int, createdAt: Date)

    private static func utcDay(_ date: Date) -> Int { Int((date.timeIntervalSince1970 / 86_400).rounded(.down)) }

    /// The last of `versions` on each UTC day, with its time, read by halving: versions are
    /// numbered in time order, so a run whose first and last versions share a day is that day's
    /// whole. A thinning reads a few versions per day, not every one below the floor (reading
    /// each was 6% of a busy server's time). A run whose last version is dated before its first
    /// (servers sharing a store whose clocks differ) is read version by version. A missing
    /// version counts for no day.
    private func lastOfEachDay(_ versions: [Int], of address: SlotAddress) throws -> [(day: Dated, version: Int)] {
        func dated(_ index: Int) throws -> Dated? {
            try version(versions[index], of: address).map { (Self.utcDay($0.record.createdAt), $0.record.createdAt) }
        }
        // Runs are met in order, so a later run's last of a day replaces an earlier one's.
        var lastOfDay: [Int: (day: Dated, version: Int)] = [:]
        func found(_ day: Dated?, _ index: Int) {
            if let day { lastOfDay[day.day] = (day, versions[index]) }
        }
        func split(_ low: Int, _ high: Int, _ first: Dated?, _ last: Dated?) throws {
            if low == high {
                found(first, low)
            } else if let first, let last, first.day > last.day {
                for index in low...high { found(try dated(index), index) }
            } else if let first, let last, first.day == last.day {
                found(last, high)
            } else if high == low + 1 {
                found(first, low)
                found(last, high)
            } else {
                let middle = (low + high) / 2
                try split(low, middle, first, try dated(middle))
                try split(middle + 1, high, try dated(middle + 1), last)
            }
        }
        guard !versions.isEmpty else { return [] }
        let first = try dated(0)
        try split(0, versions.count - 1, first, versions.count == 1 ? first : try dated(versions.count - 1))
        return Array(lastOfDay.values)
    }

    /// A folder's objects; one that was never written is empty.
    private func objects(in folder: any SaveStorage) throws -> [StoredObject] {
        do { return try folder.list() } catch let error as SaveError where error.category == .notFound { return [] }
    }

    private func read(_ name: String, in folder: any SaveStorage) throws -> Stored? {
        let object: [UInt8]
        do { object = try folder.read(name) } catch let error as SaveError where error.category == .notFound { return nil }
        guard let newline = object.firstIndex(of: 0x0A) else {
            throw SaveError(.badData, file: folder.location + "/" + name, "no record line, expected a version of a slot")
        }
        let header: SaveValue
        do { header = try JSONCodec().decode(Array(object[..<newline])) } catch {
            throw SaveError(.badData, file: folder.location + "/" + name, "a record line that is not JSON: \(error)", cause: error)
        }
        return Stored(record: try VersionRecord(header), bytes: Array(object[(newline + 1)...]))
    }

    static func object(_ record: VersionRecord, bytes: [UInt8], slot: String) -> [UInt8] {
        var header = record.value
        if case .dictionary(var fields) = header {
            fields["slot"] = .string(slot)
            header = .dictionary(fields)
        }
        var options = EncodingOptions()
        options.pretty = false
        var object = (try? JSONCodec().encode(header, options: options)) ?? []
        while object.last == 0x0A { object.removeLast() }
        return object + [0x0A] + bytes
    }

    /// A folder's name for a space's or slot's segments.
    static func folderName(_ segments: [String]) -> String {
        let joined = segments.joined(separator: "~")
        guard joined.utf8.count > 200 else { return joined }
        return "~" + Checksum.hex(SHA256.hash(data: Array(joined.utf8)))
    }
}
