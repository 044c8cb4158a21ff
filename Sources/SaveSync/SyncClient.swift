import Foundation
import SaveHTTP
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The device's side of sync (`savetool sync`): for each file, push it when it changed since
/// its last sync (the server merges it with what other devices pushed), pull the head when it
/// did not, and write what the server answers atomically, in the file's own codec. A conflict
/// leaves the file untouched.
public final class SyncClient: Sendable {
    /// `http://host:port`, without a trailing slash.
    public let server: String
    public let space: String
    public let token: String?
    public let device: String?
    public let registry: CodecRegistry
    /// Tries per request while the server cannot be reached or answers 5xx.
    public let attempts: Int
    /// Merges a file's newer changes with the server's copy here, by the kinds' rules, when
    /// the app saved the file again while its push was out (see ``SyncState``).
    public let merger: SaveMerger
    /// On a conflict, write the server's head over the file, once the server has parked the
    /// push (so the file as it was is kept there): the way out of a conflict a player settles by
    /// taking the other device's progress.
    public let takesServerCopyOnConflict: Bool
    private let connections: HTTPConnections

    /// `trustedCertificates`: a PEM file of the certificates that an `https` server's is checked
    /// against instead of the system's CAs (a private CA, or the server's own self-signed one).
    public init(
        server: String, space: String, token: String?, device: String?, registry: CodecRegistry, kinds: [SaveKind] = [], attempts: Int = 4,
        timeout: TimeInterval = 30, trustedCertificates: String? = nil, takesServerCopyOnConflict: Bool = false
    ) throws(SaveError) {
        self.takesServerCopyOnConflict = takesServerCopyOnConflict
        var server = server
        while server.hasSuffix("/") { server.removeLast() }
        // A URL's scheme is case-insensitive (RFC 3986): HTTP:// is http://.
        if let colon = server.firstIndex(of: ":") { server = server[..<colon].lowercased() + server[colon...] }
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw SaveError(.usage, "the server \"\(server)\", expected http://host:port or https://host")
        }
        (self.server, self.space, self.token, self.device, self.registry) = (server, try SlotAddress.space(space), token, device, registry)
        self.attempts = max(1, attempts)
        merger = try SaveMerger(kinds: kinds, registry: registry)
        if let trustedCertificates {
            var info = stat()
            guard stat(trustedCertificates, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(trustedCertificates, R_OK) == 0 else {
                throw SaveError(.notFound, file: trustedCertificates, "cannot be read as a file, expected a PEM file of trusted certificates")
            }
        }
        connections = HTTPConnections(idleTimeout: timeout, totalTimeout: timeout * 4, trustedCertificates: trustedCertificates)
    }

    /// What happened to one file.
    public struct Outcome: Sendable {
        public enum Action: String, Sendable {
            /// The server had nothing newer, and the file had not changed.
            case upToDate
            /// The file was the server's first copy of the slot.
            case created
            /// The file's changes went on top of the head.
            case pushed
            /// The file's changes were merged with other devices' and the result written here.
            case merged
            /// The server's newer head was written here.
            case pulled
            /// Changes on both sides that no rule settles: nothing was written here.
            case conflict
            /// A conflict settled by taking the server's head (``SyncClient/takesServerCopyOnConflict``):
            /// written here, this file's copy parked on the server (``Outcome/parked``).
            case tookServerCopy
            /// A file of a folder that no slot can hold (see ``Outcome/reason``): not sent.
            case leftOut
        }

        public var file: String
        public var slot: String
        public var action: Action
        public var version: Int
        /// The merge's decisions, when the server merged (their number: the server's history has them).
        public var decisions: Int = 0
        /// For a conflict: each place, with the base's, the head's and this file's values.
        public var conflicts: [SaveValue] = []
        /// For a conflict: the name the server kept the push under.
        public var parked: String?
        /// For a file left out: why.
        public var reason: String?
        /// For a conflict or a merge: it is between what the file changed since its last push
        /// (which the server took while the app saved again) and the server's copy, found here
        /// (a merge made here is not in the server's history: the push after it is).
        public var sincePush = false
        /// For a merge: its result is this file as it is, so nothing was written here.
        public var unchangedHere = false
        /// For a push the server migrated before it stored it (`kape.tournament version 3`):
        /// what was written here in its place.
        public var migratedTo: String?

        /// A file of a folder that was not sent, and why (a name that is not UTF-8, found by the walk).
        public static func leftOut(_ file: String, reason: String) -> Outcome {
            Outcome(file: file, slot: "", action: .leftOut, version: 0, reason: reason)
        }
    }

    /// Syncs one file as `slot`, with `entry` the state of its last sync (updated on success).
    /// `links` says where an answer is written when the file is a symbolic link: a file named
    /// alone is written through it; one found in a folder only within the folder.
    ///
    /// With `leavingOut`, for the files a folder's walk meets, a file that no slot can hold is
    /// not sent and comes back as ``Outcome/Action/leftOut``: a name no slot can have, or bytes
    /// that are no save document (a readme beside the saves), which the server would refuse on
    /// every sync. A file synced before (`entry` set) is never left out: if it no longer reads,
    /// that is an error. Without `leavingOut` (a file named alone), such a file is an error too.
    ///
    /// `remember` is called with `entry` at each step that must survive a failure or a kill of
    /// what follows (the bytes about to be pushed; the pushed bytes kept as a pending base; the
    /// merge of them written here), before that next step: the caller saves it. Otherwise a
    /// push the server took could be pushed again from the old base and merged twice.
    public func sync(
        file: String, slot: String, entry: inout SyncState.Entry?, links: LinkPolicy = .follow, leavingOut: Bool = false,
        remember: (SyncState.Entry?) throws -> Void = { _ in }
    ) throws -> Outcome {
        let address: SlotAddress
        do {
            address = try SlotAddress(space: space, slot: slot)
        } catch {
            guard leavingOut else { throw error }
            return Outcome(file: file, slot: slot, action: .leftOut, version: 0, reason: error.message)
        }
        // A link leading out of a synced folder is refused before it is read: its file would
        // be sent to the server.
        do { _ = try FileIO.destination(of: file, links: links) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
        let (local, mode) = try readLocal(file)
        // A file synced before is a save, whatever it holds now: if it no longer reads, that is
        // said (65), never passed over.
        if leavingOut, entry == nil, registry.saveDocumentCodec(for: local, named: slot) == nil {
            return Outcome(file: file, slot: slot, action: .leftOut, version: 0, reason: CodecRegistry.notASaveDocument)
        }
        let sha256 = Checksum.sha256(local)
        let remembered = entry.flatMap { $0.server == server && $0.space == space && $0.slot == slot ? $0 : nil }
        let url = server + "/v1/spaces/" + address.spaceName + "/slots/" + address.slotName

        /// The answer written here; `pending` says it went through ``mergePending``, whose
        /// outcome stands as it is.
        func finish(_ response: HTTPResponse, _ action: Outcome.Action, pushed: Bool) throws -> (outcome: Outcome, pending: Bool) {
            let version = try Self.version(of: response, url: url)
            guard let written = try write(Array(response.body), over: pushing, to: file, mode: mode, links: links) else {
                guard pushed else { throw Self.changedWhileSyncing(file) }
                // The server took the push, and the app has saved again since: its new changes
                // are relative to what was pushed, which is now part of `version`.
                entry = SyncState.Entry(server: server, space: space, slot: slot, version: version, sha256: "", pendingBase: pushing)
                try remember(entry)
                let outcome = try mergePending(
                    file: file, slot: slot, url: url, entry: &entry, links: links, head: (version, Array(response.body)), remember: remember)
                return (outcome, true)
            }
            entry = SyncState.Entry(server: server, space: space, slot: slot, version: version, sha256: Checksum.sha256(written))
            let merged = response.header("Save-Merged") == "true"
            let decisions = response.header("Save-Merge-Report").flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
            var outcome = Outcome(file: file, slot: slot, action: merged ? .merged : action, version: version, decisions: decisions)
            // A push the server's pipeline migrated before it stored it.
            if pushed, !merged, let from = response.header("Save-Migrated-From").flatMap({ Int($0) }), let kind = response.header("Save-Kind"),
                let schema = response.header("Save-Version").flatMap({ Int($0) })
            {
                // A holder whose own version stays (its embedded save moves on) names what moved.
                let steps = response.header("Save-Migration-Steps")?.removingPercentEncoding ?? ""
                outcome.migratedTo = from == schema && !steps.isEmpty ? "\(kind) \(steps)" : "\(kind) version \(from) to \(schema)"
            }
            return (outcome, false)
        }

        // What this run pushes: the file, or a push whose answer an earlier run never got (it was
        // stopped, or lost the connection), sent again first. The server knows a push sent
        // again (same bytes, base and device) and answers with what it made of it.
        var pushing = local
        if let inFlight = remembered?.inFlight {
            pushing = inFlight
        } else if let remembered, remembered.pendingBase != nil {
            return try mergePending(file: file, slot: slot, url: url, entry: &entry, links: links, head: nil, remember: remember)
        } else if let remembered, remembered.sha256 == sha256 {
            // Unchanged here since the last sync: only a newer head comes down.
            let response = try send("GET", url, headers: [("If-None-Match", "\"\(remembered.version)\"")], file: file)
            switch response.status {
            case 304: return Outcome(file: file, slot: slot, action: .upToDate, version: remembered.version)
            case 200:
                let outcome = try finish(response, .pulled, pushed: false).outcome
                return outcome.version == remembered.version ? Outcome(file: file, slot: slot, action: .upToDate, version: outcome.version) : outcome
            case 404: break  // gone from the server: pushed again as new, below
            default: throw failure(response, url: url, file: file)
            }
        }
        var condition = remembered.map { $0.version == 0 ? ("If-None-Match", "*") : ("If-Match", "\"\($0.version)\"") } ?? ("If-None-Match", "*")
        // Remembered before it is sent: a run stopped before it learns what the server did with
        // the push sends it again, rather than the file's later state from the same base.
        let original = entry
        let resending = remembered?.inFlight != nil
        if !resending {
            entry = SyncState.Entry(
                server: server, space: space, slot: slot, version: remembered?.version ?? 0, sha256: remembered?.sha256 ?? "", inFlight: pushing,
                inFlightDevice: device)
            try remember(entry)
        }
        /// The file's state once this push is known to be in no version: as the caller gave it
        /// (another server's, even), or, for a push sent again, without it.
        func withoutThePush() -> SyncState.Entry? {
            guard resending else { return original }
            var settled = remembered
            settled?.inFlight = nil
            return settled
        }
        /// Nothing of this sending was stored (the server refused it, or it never left). A push
        /// first sent by an earlier run stays in flight all the same, since that sending may have
        /// been stored, unless the server refused its very content (400, 413, 422), which it
        /// would have refused then too.
        func refused(_ error: SaveError, content: Bool = false) throws -> SaveError {
            guard !resending || content else { return error }
            entry = withoutThePush()
            try remember(entry)
            return error
        }
        for _ in 1...3 {
            let response: HTTPResponse
            do {
                response = try send("PUT", url, headers: [condition], body: pushing, file: file, device: resending ? remembered?.inFlightDevice ?? device : device)
            } catch let error as SaveError where (error.cause as? Unreachable)?.neverSent == true {
                throw try refused(error)  // it never left: nothing to send again
            }
            switch response.status {
            case 200, 201:
                let finished = try finish(response, condition.0 == "If-None-Match" ? .created : .pushed, pushed: true)
                if finished.pending { return finished.outcome }
                var outcome = finished.outcome
                // The server had this very copy already (a device joining a slot it holds, or a
                // push of the version it is based on): nothing new was stored.
                let merged = response.header("Save-Merged") == "true"
                let joined = condition == ("If-Match", "\"0\"") && !merged && Array(response.body) == pushing
                if joined || outcome.version == remembered?.version { return Outcome(file: file, slot: slot, action: .upToDate, version: outcome.version) }
                // Merged into a new version that is this very file (each place changed on both
                // sides kept as here): nothing written here, but a merge all the same.
                if merged && Array(response.body) == pushing { outcome.unchangedHere = true }
                return outcome
            case 409:
                // Parked, not merged: the file stays based on the version it was.
                entry = withoutThePush()
                try remember(entry)
                // A push sent again, parked, while the app has saved since: the file as it is now
                // is pushed in its turn (parked too if it conflicts), and said as it is.
                if resending, (try? FileIO.read(file)) != pushing {
                    return try sync(file: file, slot: slot, entry: &entry, links: links, leavingOut: leavingOut, remember: remember)
                }
                let answer = (try? JSONCodec().decode(Array(response.body))) ?? .null
                let head = answer.dictionaryValue?["head"].flatMap { if case .integer(let n) = $0 { Int(n) } else { nil } } ?? remembered?.version ?? 0
                var outcome = Outcome(
                    file: file, slot: slot, action: .conflict, version: head, conflicts: answer.dictionaryValue?["conflicts"]?.arrayValue ?? [],
                    parked: answer.dictionaryValue?["parked"]?.stringValue)
                // The file as pushed is parked on the server: the head may take its place here.
                if takesServerCopyOnConflict, outcome.parked != nil {
                    let current = try send("GET", url, file: file)
                    guard current.status == 200 else { throw failure(current, url: url, file: file) }
                    let version = try Self.version(of: current, url: url)
                    guard let written = try write(Array(current.body), over: pushing, to: file, mode: mode, links: links) else {
                        throw Self.changedWhileSyncing(file)
                    }
                    entry = SyncState.Entry(server: server, space: space, slot: slot, version: version, sha256: Checksum.sha256(written))
                    (outcome.action, outcome.version) = (.tookServerCopy, version)
                }
                return outcome
            case 412:
                // The slot exists though this device never synced it, or the server no longer
                // has the version remembered: merged with the head without a base.
                guard condition != ("If-Match", "\"0\"") else { throw try refused(failure(response, url: url, file: file)) }
                condition = ("If-Match", "\"0\"")
            default:
                throw try refused(failure(response, url: url, file: file), content: [400, 413, 422].contains(response.status))
            }
        }
        throw try refused(SaveError(.busy, file: file, "the server kept refusing the push's base; try again"))
    }

    /// The space's slots, as the server lists them.
    public func slots() throws -> [String] {
        let url = server + "/v1/spaces/" + space + "/slots"
        let response = try send("GET", url, file: url)
        guard response.status == 200 else { throw failure(response, url: url, file: url) }
        guard let listed = (try? JSONCodec().decode(Array(response.body)))?.arrayValue else {
            throw SaveError(.badData, file: url, "a listing that is not a JSON array, expected the space's slots")
        }
        // Names are checked as the server checks them: a listing cannot name a place outside
        // the folder, or one no slot could have.
        return listed.compactMap { $0.dictionaryValue?["slot"]?.stringValue }.filter { (try? SlotAddress(space: space, slot: $0)) != nil }
    }

    /// Writes the head of a slot this device has no file for, as the new file `file` under
    /// `folder` (a new device joining a space). Nothing is written where a file appeared
    /// meanwhile, or where a folder on the way is a link or not a folder: a pulled save never
    /// lands outside `folder`.
    public func pull(slot: String, to file: String, in folder: String, entry: inout SyncState.Entry?) throws -> Outcome {
        let address = try SlotAddress(space: space, slot: slot)
        let url = server + "/v1/spaces/" + address.spaceName + "/slots/" + address.slotName
        var place = folder
        for name in address.slot.dropLast() {
            place += "/" + name
            var found = stat()
            if lstat(place, &found) != 0 {
                do { try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: false) } catch {
                    throw SaveError(.cannotCreate, file: place, "cannot be created: \(FileError.reason(of: error))")
                }
            } else if found.st_mode & S_IFMT != S_IFDIR {
                throw SaveError(.cannotCreate, file: place, "\(FileIO.describeType(found.st_mode)), expected a folder for the slot \(slot)")
            }
        }
        var found = stat()
        if lstat(file, &found) == 0 {
            throw SaveError(.cannotCreate, file: file, "\(FileIO.describeType(found.st_mode)) is there, expected nothing where the slot \(slot) is pulled to")
        }
        let response = try send("GET", url, file: file)
        guard response.status == 200 else { throw failure(response, url: url, file: file) }
        let version = try Self.version(of: response, url: url)
        let bytes = Array(response.body)
        // Created exclusively: a file the app made meanwhile is never replaced by a pull.
        do {
            let output = try AtomicFileOutput(path: file, mode: FileIO.newFileMode)
            try bytes.withUnsafeBytes { try output.write($0) }
            try output.commit(replacing: false)
        } catch let error as FileError {
            throw SaveError(error.category, file: file, error.description, cause: error)
        }
        entry = SyncState.Entry(server: server, space: space, slot: slot, version: version, sha256: Checksum.sha256(bytes))
        return Outcome(file: file, slot: slot, action: .pulled, version: version)
    }

    /// The file's changes since its pending base (what it last pushed), merged here with the
    /// server's copy (`head`, else the slot's head as the server gives it now), which holds what
    /// was pushed: written over the file, then pushed as any change. A conflict leaves the file
    /// and the pending base as they are.
    private func mergePending(
        file: String, slot: String, url: String, entry: inout SyncState.Entry?, links: LinkPolicy, head given: (version: Int, bytes: [UInt8])?,
        remember: (SyncState.Entry?) throws -> Void
    ) throws -> Outcome {
        guard let pending = entry, let base = pending.pendingBase else { preconditionFailure("no pending base") }
        let (local, mode) = try readLocal(file)
        var head = given
        if head == nil {
            let response = try send("GET", url, file: file)
            if response.status == 404 {
                // The slot is gone from the server: nothing to merge with; the file is pushed as new.
                entry = nil
                try remember(entry)
                return try sync(file: file, slot: slot, entry: &entry, links: links, remember: remember)
            }
            guard response.status == 200 else { throw failure(response, url: url, file: file) }
            let version = try Self.version(of: response, url: url)
            head = (version, Array(response.body))
        }
        let (version, remote) = head!
        let result = try merger.merge(
            base: SaveMerger.Copy(bytes: base, path: slot, name: file + " (as last pushed)"), local: SaveMerger.Copy(bytes: local, path: slot, name: file),
            remote: SaveMerger.Copy(bytes: remote, path: slot, name: url))
        guard result.conflicts.isEmpty else {
            var outcome = Outcome(file: file, slot: slot, action: .conflict, version: version, conflicts: result.conflicts.map(\.syncConflict))
            outcome.sincePush = true
            return outcome
        }
        // Written as any answer is, in the file's codec, unless the app saved yet again.
        guard try write(result.output, over: local, to: file, mode: mode, links: links) != nil else {
            throw Self.changedWhileSyncing(file)
        }
        // Then pushed on top of the server's copy, as any change: the server stores what the
        // file adds to it, or nothing if it adds nothing. Remembered first: the file now derives
        // from `version`, whatever becomes of the push.
        entry = SyncState.Entry(server: server, space: space, slot: slot, version: version, sha256: "")
        try remember(entry)
        var outcome = try sync(file: file, slot: slot, entry: &entry, links: links, remember: remember)
        if outcome.action == .upToDate || outcome.action == .pushed {
            outcome.action = .merged
            outcome.decisions = result.decisions.count
            outcome.sincePush = true
        }
        return outcome
    }

    // MARK: -

    /// The app saved the file while the sync was under way: its save is not overwritten.
    private static func changedWhileSyncing(_ file: String) -> SaveError {
        SaveError(.busy, file: file, "changed while it synced; nothing was written here, sync again")
    }

    /// The version an answer is, from its ETag.
    private static func version(of response: HTTPResponse, url: String) throws(SaveError) -> Int {
        guard let version = response.header("ETag").flatMap(VersionTag.version(in:)) else {
            throw SaveError(.badData, file: url, "an answer without a version (ETag), expected one")
        }
        return version
    }

    private func readLocal(_ file: String) throws -> ([UInt8], mode_t) {
        do { return try FileIO.readFile(file) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
    }

    /// Writes what the server holds in the local file's codec (a device that writes binary
    /// plists keeps binary plists, whatever another device pushed); returns the bytes written
    /// (or found there already), or `nil` when the file no longer holds `local`: the app saved
    /// while the request was out, and its save is not overwritten.
    private func write(_ answer: [UInt8], over local: [UInt8], to file: String, mode: mode_t, links: LinkPolicy) throws -> [UInt8]? {
        var bytes = answer
        if let localCodec = registry.codec(sniffing: local) ?? registry.codec(forPath: file), let answerCodec = registry.codec(sniffing: answer),
            localCodec.id != answerCodec.id
        {
            do {
                // A fraction of a second that the local codec cannot hold (an XML plist, where another
                // device wrote a binary one) is dropped, as the app's own writer drops it.
                var options = EncodingOptions.keepingLayout(of: local, codec: localCodec)
                options.subsecondDatePolicy = .truncate
                bytes = try localCodec.encode(try answerCodec.decode(answer), options: options)
            } catch {
                throw SaveError(.badData, file: file, "the server's copy cannot be written as \(localCodec.id): \(error)", cause: error)
            }
        }
        let current = try? FileIO.read(file)
        // Written by a run stopped before it could remember so.
        if current == bytes { return bytes }
        guard current == local else { return nil }
        do { try FileIO.writeAtomically(bytes, to: file, mode: mode, links: links) } catch { throw SaveError(error.category, file: file, error.description, cause: error) }
        return bytes
    }

    /// One request, tried again with backoff while the server cannot be reached or answers
    /// 5xx (waiting as long as its Retry-After asks, up to 5 s).
    /// `device` is this client's, unless a push sent again was first sent as another.
    private func send(_ method: String, _ url: String, headers: [(String, String)] = [], body: [UInt8] = [], file: String, device: String? = nil) throws -> HTTPResponse {
        var all = headers
        if let token { all.append(("Authorization", "Bearer " + token)) }
        if let device = device ?? self.device { all.append(("Device-Id", device)) }
        var problem = ""
        var tries = 0, timeouts = 0, unreachable = false, connected = false
        // A 503 (the server's store did not answer) is the whole server's state, not this
        // file's: no other file of the run would do better.
        trying: for attempt in 1...attempts {
            tries = attempt
            switch connections.perform(HTTPRequest(method: method, url: url, headers: all, body: Data(body), sendsBody: method == "PUT" || method == "POST")) {
            case .success(let response) where response.status < 500:
                return response
            case .success(let response):
                connected = true
                unreachable = response.status == 503
                problem = "the server answered \(response.status)" + (Self.message(response).map { ": " + $0 } ?? "")
                if attempt < attempts {
                    let asked = response.header("Retry-After").flatMap(Double.init) ?? 0
                    Thread.sleep(forTimeInterval: min(5, max(asked, 0.25 * pow(2, Double(attempt - 1)))))
                }
            case .failure(let error as HTTPConnections.Unavailable):
                throw SaveError(.io, file: file, "cannot reach the server: \(error.reason)", cause: Unreachable(neverSent: true))
            case .failure(var error as SaveError) where error.category == .badData:
                // The trusted certificates' file: no use trying again, for this file or another.
                error.cause = Unreachable()
                throw error
            case .failure(let error as HTTPConnections.Untrusted):
                throw SaveError(
                    .permissionDenied, file: file, "\(server) is not trusted: \(error.reason), expected a certificate that the trusted ones vouch for",
                    hint: error.withOwnCertificates ? nil : .trustTheCertificate)
            case .failure(let error as HTTPConnections.TimedOut):
                // Each such try waits the whole timeout: a few are enough to tell a silent server.
                problem = "no answer from \(server): \(error.reason)"
                unreachable = true
                connected = true
                timeouts += 1
                if timeouts == HTTPConnections.TimedOut.triesBeforeGivingUp { break trying }
            case .failure(let error):
                problem = "cannot reach \(server): \(error)"
                unreachable = true
                connected = connected || !(error is HTTPConnections.NotConnected)
                if attempt < attempts { Thread.sleep(forTimeInterval: 0.25 * pow(2, Double(attempt - 1))) }
            }
        }
        // A server that answered, even with 5xx, may do better for the next file; one that did
        // not answer will not.
        throw SaveError(.busy, file: file, "\(problem) (tried \(tries) times); try again later", cause: unreachable ? Unreachable(neverSent: !connected) : nil)
    }

    /// The cause of an error that no file of this run can do better on: the server did not
    /// answer after the tries (or answered 503 to each), cannot be reached at all, or its
    /// trusted certificates cannot be read.
    public struct Unreachable: Error, Sendable {
        /// No connection was made: the request cannot have reached the server.
        public var neverSent = false
    }

    /// A 4xx answer as an error of its category (cli.md's exit codes follow).
    private func failure(_ response: HTTPResponse, url: String, file: String) -> SaveError {
        let message = Self.message(response) ?? "the server answered \(response.status)"
        switch response.status {
        case 401 where token == nil:
            return SaveError(.permissionDenied, file: file, "the server asks for a token, and none was given: \(message)", hint: .giveAToken)
        case 401: return SaveError(.permissionDenied, file: file, "the server refused the token: \(message)")
        case 403: return SaveError(.permissionDenied, file: file, "the token does not allow this: \(message)")
        case 413, 422: return SaveError(.badData, file: file, "the server refused the file: \(message)")
        case 404: return SaveError(.notFound, file: url, message)
        case 507: return SaveError(.io, file: file, "the server answered 507: \(message)")
        case 408: return SaveError(.busy, file: file, "the server gave up waiting for the file: \(message); try again")
        default: return SaveError(.usage, file: url, "the server answered \(response.status): \(message)")
        }
    }

    private static func message(_ response: HTTPResponse) -> String? {
        guard let answer = try? JSONCodec().decode(Array(response.body)) else { return nil }
        return answer.dictionaryValue?["error"]?.dictionaryValue?["message"]?.stringValue
    }

}

/// A version as an entity tag: `"3"` (a weak `W/"3"` is read alike).
public enum VersionTag {
    public static func version(in tag: String) -> Int? {
        // Foundation's trimming only where there is something to trim (a tag is read per push).
        let padded = tag.unicodeScalars.first.map(CharacterSet.whitespaces.contains) == true || tag.unicodeScalars.last.map(CharacterSet.whitespaces.contains) == true
        var text = Substring(padded ? tag.trimmingCharacters(in: .whitespaces) : tag)
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        guard text.count >= 3, text.first == "\"", text.last == "\"", let number = Int(text.dropFirst().dropLast()), number >= 0 else { return nil }
        return number
    }
}
