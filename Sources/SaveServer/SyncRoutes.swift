import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import SaveKit
import SaveSync

/// The API's routes: each request authenticated, its names checked, its space authorised, and
/// only then the store touched. Storage and merging run on thread pools, off the event loops;
/// a push that finds its slot in use waits for its turn without holding a thread.
struct SyncRoutes: Sendable {
    let configuration: SyncServerConfiguration
    let service: PushService
    let metrics: ServerMetrics
    let backups: DailyBackups?
    /// Pushes and restores to one slot, one after another, waiting off the pools.
    let turns = SlotTurns()
    /// The tokens file, followed as it changes.
    let tokenFile: TokenFile?

    init(configuration: SyncServerConfiguration, service: PushService, metrics: ServerMetrics, backups: DailyBackups?) {
        (self.configuration, self.service, self.metrics, self.backups) = (configuration, service, metrics, backups)
        if let file = configuration.tokensFile, let tokens = configuration.tokens {
            tokenFile = TokenFile(path: file, tokens: tokens, log: configuration.accessLog)
        } else {
            tokenFile = nil
        }
    }

    func add(to router: Router<BasicRequestContext>) {
        router.get("/healthz") { _, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok\n"))) }
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: metrics.text())))
        }
        router.post("/v1/admin/backup") { request, _ in
            do {
                // Every space's heads: an admin token that reaches every space.
                if let caller = try authenticate(request), caller.access != .admin || !caller.spaces.contains("*") {
                    throw APIError(.forbidden, "forbidden", "a backup of every space needs an admin token for the spaces *")
                }
                guard let backups else { throw APIError(.notFound, "notFound", "no backup repository: this server was started without one") }
                let report = try await blocking { try backups.run() }
                return json(.ok, .dictionary(["outcome": .string(report.outcome), "bundle": .string(report.bundle), "heads": .integer(Int64(report.heads))]))
            } catch let error as APIError {
                return error.response
            } catch let error as SaveError {
                let answer = APIError(error)
                if let detail = answer.detail { configuration.accessLog("store: \(detail)") }
                return answer.response
            } catch let failure as DailyBackups.RepositoryFailure {
                // Answered as a store's failure is, naming the backup repository instead.
                var answer = APIError(failure.error)
                answer.message = answer.message.replacingOccurrences(of: "the server's store", with: "the backup repository")
                if let detail = answer.detail { configuration.accessLog("backup repository: \(detail)") }
                return answer.response
            } catch {
                return APIError(.internalServerError, "internal", "the backup failed: \(error)").response
            }
        }
        for method in [HTTPRequest.Method.get, .put, .post, .delete, .patch, .head] {
            router.on("/v1/**", method: method) { request, _ in await respond(to: request) }
            // Outside the API too, an answer is JSON in its shape.
            for path in ["/", "/**"] {
                router.on(RouterPath(path), method: method) { _, _ in
                    APIError(.notFound, "notFound", "no such resource, expected /v1/spaces/{space}/slots…").response
                }
            }
        }
    }

    /// Every answer of the API, errors included, as JSON in the spec's shape.
    private func respond(to request: Request) async -> Response {
        do {
            return try await route(request)
        } catch let error as APIError {
            return error.response
        } catch let error as PushService.BaseMismatch {
            return APIError(.preconditionFailed, "preconditionFailed", error.message).response
        } catch let error as SaveError {
            let answer = APIError(error)
            if let detail = answer.detail { configuration.accessLog("store: \(detail)") }
            return answer.response
        } catch where (error as? HTTPError)?.status == .contentTooLarge || error is NIOTooManyBytesError {
            // A chunked body has no length to refuse it by: it is cut off as it passes the cap.
            return APIError(.contentTooLarge, "tooLarge", "a body of more than \(configuration.maxBody) bytes, expected at most that").response
        } catch {
            return APIError(.internalServerError, "internal", "the request failed: \(error)").response
        }
    }

    private func route(_ request: Request) async throws -> Response {
        let caller = try authenticate(request)
        let target = try Target(path: request.uri.path, method: request.method)
        // HEAD is GET without the body (the headers say what GET would give).
        if request.method == .head, case .slot(let address) = target {
            try authorise(caller, space: address.spaceName, .read)
            let answer = try await read(address, request)
            return Response(status: answer.status, headers: answer.headers, body: .init())
        }
        switch (target, request.method) {
        case (.slots(let space), .get):
            try authorise(caller, space: space, .read)
            return try await listing(space)
        case (.slot(let address), .get):
            try authorise(caller, space: address.spaceName, .read)
            return try await read(address, request)
        case (.history(let address), .get):
            try authorise(caller, space: address.spaceName, .read)
            return try await history(address)
        case (.slot(let address), .put):
            let forceValue = request.uri.queryParameters["force"].map(String.init)
            guard forceValue == nil || forceValue == "true" || forceValue == "false" else {
                throw APIError(.badRequest, "badForce", "force=\(forceValue!.prefix(40)), expected force=true (or no force)")
            }
            let force = forceValue == "true"
            try authorise(caller, space: address.spaceName, force ? .admin : .write)
            return try await push(address, request, force: force)
        case (.restore(let address), .post):
            try authorise(caller, space: address.spaceName, .admin)
            return try await restore(address, request)
        default:
            throw APIError(.methodNotAllowed, "method", "\(request.method) is not allowed here")
        }
    }

    // MARK: Who may do what

    private func authenticate(_ request: Request) throws -> TokenList.Entry? {
        guard let tokens = tokenFile?.current ?? configuration.tokens else { return nil }
        // The scheme's name is case-insensitive (RFC 9110): `bearer` is `Bearer`.
        guard let header = request.headers[.authorization], header.prefix(7).lowercased() == "bearer " else {
            throw APIError(.unauthorized, "unauthorized", "a missing or unknown token, expected Authorization: Bearer <token>")
        }
        let token = String(header.dropFirst(7))
        // A token unknown to the tokens in force may have been added a moment ago: the file is
        // looked at again at once (a `stat`; read only when it changed).
        guard let entry = tokens.entry(for: token) ?? tokenFile?.current(lookingNow: true).entry(for: token) else {
            throw APIError(.unauthorized, "unauthorized", "a missing or unknown token, expected Authorization: Bearer <token>")
        }
        return entry
    }

    /// The same answer whether or not the space exists: a token cannot probe for spaces.
    private func authorise(_ caller: TokenList.Entry?, space: String, _ needed: TokenList.Access) throws {
        guard let caller else { return }
        guard caller.covers(space) else { throw APIError(.forbidden, "forbidden", "this token does not reach that space") }
        guard caller.access >= needed else { throw APIError(.forbidden, "forbidden", "this token has \(caller.access.rawValue) access, expected \(needed.rawValue)") }
    }

    // MARK: Requests

    private func listing(_ space: String) async throws -> Response {
        let segments = space.split(separator: "/").map(String.init)
        let slots = try await blocking { try service.store.slots(in: segments) }
        let items = slots.map { slot, head -> SaveValue in
            var fields: [(String, SaveValue)] = [("slot", .string(slot)), ("head", .integer(Int64(head.version)))]
            if let kind = head.kind { fields.append(("kind", .string(kind))) }
            if let version = head.schemaVersion { fields.append(("version", .integer(Int64(version)))) }
            fields += [("size", .integer(Int64(head.size))), ("sha256", .string(head.sha256)), ("updatedAt", .string(RFC3339.format(head.createdAt)))]
            return .dictionary(.init(uniqueKeysWithValues: fields))
        }
        return json(.ok, .array(items))
    }

    private func read(_ address: SlotAddress, _ request: Request) async throws -> Response {
        if let name = request.uri.queryParameters["version"].map(String.init), name.hasPrefix("p") {
            return try await readParked(name, of: address)
        }
        let asked = try request.uri.queryParameters["version"].map { text -> Int in
            guard let number = Int(text), number >= 1, text.allSatisfy(\.isASCII) else {
                throw APIError(.badRequest, "badVersion", "version=\(text), expected a version number from 1, or a parked push's name (p…)")
            }
            return number
        }
        let stored = try await blocking { try asked.map { try service.store.version($0, of: address) } ?? service.store.head(of: address) }
        guard let stored else { throw APIError(.notFound, "notFound", asked.map { "no version \($0) of this slot" } ?? "no such slot") }
        let tag = "\"\(stored.record.version)\""
        // `*`, or a list of tags one of which is the head's (weak or not), compared as the opaque
        // strings RFC 9110 says they are (`"01"` is not `"1"`).
        let held = request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        if asked == nil, held.contains(where: { $0 == "*" || $0 == tag || $0 == "W/" + tag }) {
            return Response(status: .notModified, headers: [.eTag: tag])
        }
        return saveResponse(.ok, stored.record, bytes: stored.bytes, merged: nil)
    }

    /// A parked push's bytes, for settling a conflict by hand: no `ETag`, since it is no
    /// version a device may base a push on, and `Save-Parked` naming it.
    private func readParked(_ name: String, of address: SlotAddress) async throws -> Response {
        guard SlotStore.isParkedName(name) else {
            throw APIError(.badRequest, "badVersion", "version=\(name.prefix(40)), expected a version number from 1, or a parked push's name (p…)")
        }
        guard let stored = try await blocking({ try service.store.parked(name, of: address) }) else {
            throw APIError(.notFound, "notFound", "no parked push \(name) of this slot")
        }
        var response = saveResponse(.ok, stored.record, bytes: stored.bytes, merged: nil)
        response.headers[.eTag] = nil
        response.headers[HTTPField.Name("Save-Parked")!] = name
        return response
    }

    private func history(_ address: SlotAddress) async throws -> Response {
        let records = try await blocking { try service.store.history(of: address) }
        guard !records.isEmpty else { throw APIError(.notFound, "notFound", "no such slot") }
        return json(.ok, .array(records.map(\.value)))
    }

    private func push(_ address: SlotAddress, _ request: Request, force: Bool) async throws -> Response {
        let base: PushService.Base
        if force {
            base = .force
        } else if let match = request.headers[.ifMatch] {
            if VersionTag.version(in: match) == nil, match.count > 2, match.hasPrefix("\""), match.hasSuffix("\""), match.dropFirst().dropLast().allSatisfy(\.isNumber) {
                throw PushService.BaseMismatch(message: "no version \(match.prefix(40)) of this slot")  // past any version there can be
            }
            guard let number = VersionTag.version(in: match) else {
                throw APIError(.badRequest, "badIfMatch", "If-Match: \(match.prefix(40)), expected the quoted version this copy is based on, such as \"3\"")
            }
            base = number == 0 ? .unknown : .version(number)
        } else if request.headers[.ifNoneMatch] == "*" {
            base = .none
        } else {
            throw APIError(
                .preconditionRequired, "preconditionRequired",
                "a push without If-Match or If-None-Match: *, expected the version it is based on (a blind overwrite is never done; ?force=true stores it as a new head)")
        }
        let body = try await readBody(request)
        let device = request.headers[HTTPField.Name("Device-Id")!].map { String($0.prefix(128)) }
        let started = ContinuousClock.now
        // Checked by the pipeline first, alongside other pushes to the slot; then stored in turn,
        // on the same thread when the slot is free (each hand-over between threads showed as
        // the largest cost of a lone device's push).
        let first = try await durably { () throws -> CheckedPush in
            let checked = try service.check(body, slot: address)
            guard turns.tryTake(address) else { return .waiting(checked) }
            defer { turns.give(address) }
            return .stored(try service.push(checked, to: address, base: base, device: device), checked)
        }
        let outcome: PushService.Outcome
        let checked: PushService.Checked
        switch first {
        case .stored(let stored, let pushed):
            (outcome, checked) = (stored, pushed)
        case .waiting(let pushed):
            outcome = try await turns.inTurn(address) { try await durably { try service.push(pushed, to: address, base: base, device: device) } }
            checked = pushed
        }
        metrics.pushed(outcome, bytes: body.count, took: ContinuousClock.now - started)
        switch outcome {
        case .stored(let record, let bytes):
            var answer = saveResponse(.ok, record, bytes: bytes, merged: record.how == .merged || record.how == .mergedWithoutBase)
            // The push went through the pipeline's migration before it was stored.
            if let migratedFrom = checked.migratedFrom {
                answer.headers[HTTPField.Name("Save-Migrated-From")!] = String(migratedFrom)
                // Percent-encoded: a step names pointers, whose keys may be any UTF-8, and `→`.
                let steps = checked.migrationSteps.joined(separator: ", ")
                if let encoded = steps.addingPercentEncoding(withAllowedCharacters: Self.headerSafe) {
                    answer.headers[HTTPField.Name("Save-Migration-Steps")!] = encoded
                }
            }
            return answer
        case .alreadyHead(let record, let bytes):
            // Save-Merged tells of this push: the head's own history is in …/history.
            return saveResponse(.ok, record, bytes: bytes, merged: false)
        case .conflict(let head, let conflicts, let parked):
            return json(.conflict, .dictionary([
                "error": .dictionary([
                    "code": .string("conflict"),
                    "message": .string("\(conflicts.count) place\(conflicts.count == 1 ? "" : "s") changed on both sides that no rule settles; the push is kept as \(parked)"),
                    "pointer": .string(conflicts.first?.path.description ?? ""),
                ]),
                "head": .integer(Int64(head)),
                "parked": .string(parked),
                "conflicts": .array(conflicts.map(\.syncConflict)),
            ]), headers: [.eTag: "\"\(head)\""])
        }
    }

    private func restore(_ address: SlotAddress, _ request: Request) async throws -> Response {
        let body = try await readBody(request)
        guard let document = try? JSONCodec().decode(body), case .integer(let number)? = document.dictionaryValue?["version"], number >= 1 else {
            throw APIError(.badRequest, "badRestore", "a body that is not {\"version\": N}, expected the version to restore")
        }
        let device = request.headers[HTTPField.Name("Device-Id")!].map { String($0.prefix(128)) }
        let record = try await turns.inTurn(address) { try await durably { try service.restore(Int(number), of: address, device: device) } }
        return json(.ok, record.value, headers: [.eTag: "\"\(record.version)\""])
    }

    // MARK: -

    /// The body, refused with 413 before it is read when it says it is too large, and with
    /// 408 when it has not all come in within the body timeout.
    private func readBody(_ request: Request) async throws -> [UInt8] {
        // A compressed body would reach the codecs as bytes no save has: said as what it is.
        if let encoding = request.headers[.contentEncoding], encoding.lowercased() != "identity" {
            throw APIError(.unsupportedMediaType, "encoded", "a body with Content-Encoding: \(encoding.prefix(40)), expected the save's own bytes (no Content-Encoding)")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maxBody {
            throw APIError(.contentTooLarge, "tooLarge", "a body of \(length) bytes, expected at most \(configuration.maxBody)")
        }
        let limit = configuration.maxBody
        let timeout = configuration.bodyTimeout
        // A body that has not all come in when the timer fires is cancelled, not left reading:
        // the connection's own loop reads what is left of it once the answer is written, and
        // two readers of one body stop the server (swift-nio allows one iterator). Cancelled,
        // the body ends at once, so a client that stops half-way gets its 408 at once, and the
        // connection is closed.
        let timedOut = TimedOut()
        let reading = Task { try await request.body.collect(upTo: limit) }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            timedOut.fire()
            reading.cancel()
        }
        defer { timer.cancel() }
        let buffer: ByteBuffer
        do {
            buffer = try await withTaskCancellationHandler { try await reading.value } onCancel: { reading.cancel() }
        } catch where timedOut.fired {
            throw APIError(.requestTimeout, "timeout", "the body did not all arrive within \(timeout)")
        } catch where !(error is NIOTooManyBytesError) && (error as? HTTPError)?.status != .contentTooLarge && !(error is CancellationError) {
            // The client stopped sending (a half-closed connection) before the body was whole.
            throw APIError(.badRequest, "truncated", "a body cut short, expected \(request.headers[.contentLength].map { "the \($0) bytes its Content-Length says" } ?? "all of it")")
        }
        // A cancelled body may end as if it were whole: what came in time is never taken for all,
        // nor what came before the request itself was cancelled (a client gone, a shutdown).
        guard !timedOut.fired else { throw APIError(.requestTimeout, "timeout", "the body did not all arrive within \(timeout)") }
        try Task.checkCancellation()
        if let length = request.headers[.contentLength].flatMap(Int.init), length != buffer.readableBytes {
            throw APIError(.badRequest, "truncated", "a body of \(buffer.readableBytes) bytes, expected the \(length) its Content-Length says")
        }
        BodyBytes.current?.count = buffer.readableBytes
        return Array(buffer.readableBytesView)
    }

    private func saveResponse(_ status: HTTPResponse.Status, _ record: VersionRecord, bytes: [UInt8], merged: Bool?) -> Response {
        var headers: HTTPFields = [.eTag: "\"\(record.version)\"", .contentType: Self.contentType(record.codec)]
        if let kind = record.kind { headers[HTTPField.Name("Save-Kind")!] = kind }
        if let version = record.schemaVersion { headers[HTTPField.Name("Save-Version")!] = String(version) }
        if let merged {
            headers[HTTPField.Name("Save-Merged")!] = merged ? "true" : "false"
            if merged { headers[HTTPField.Name("Save-Merge-Report")!] = "\(record.decisions.count) decisions; GET …/history for them" }
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    private func json(_ status: HTTPResponse.Status, _ value: SaveValue, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        var options = EncodingOptions()
        options.pretty = false
        let bytes = (try? JSONCodec().encode(value, options: options)) ?? Array("{}\n".utf8)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    private static func contentType(_ codec: String) -> String {
        switch codec {
        case "json": "application/json"
        case "xml-plist": "application/x-plist"
        default: "application/octet-stream"
        }
    }

    private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// A push or restore, from its check to its flush: a thread waits on the disk there, and the
    /// decoding it does takes turns by core (``DecodingTurns``).
    private func durably<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Self.flushingPool.runIfActive(body)
    }

    /// Threads for pushes and restores, which end in a flush. NIO's shared pool has one thread
    /// per core, so at most two flushes were in flight on two cores and every other device's
    /// push queued behind them, while the file system can commit many waiting flushes at once
    /// (a thread per connection, as the Python peer has, measured faster on disk for that
    /// reason). The pool lives as long as the process, as NIO's own does.
    private static let flushingPool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 64)
        pool.start()
        return pool
    }()
}

extension SyncRoutes {
    /// What a header value holds as it is: printable ASCII but `%`, which encodes the rest.
    static let headerSafe = CharacterSet(charactersIn: Unicode.Scalar(0x20)...Unicode.Scalar(0x7E)).subtracting(CharacterSet(charactersIn: "%"))
}

/// A push after its check: stored already, or waiting for its slot's turn.
private enum CheckedPush: Sendable {
    case stored(PushService.Outcome, PushService.Checked)
    case waiting(PushService.Checked)
}

/// Whether a request's body timer fired.
private final class TimedOut: @unchecked Sendable {
    private let lock = NSLock()
    private var state = false
    func fire() { lock.withLock { state = true } }
    var fired: Bool { lock.withLock { state } }
}

/// What a request's path names.
enum Target: Sendable {
    case slots(space: String)
    case slot(SlotAddress)
    case history(SlotAddress)
    case restore(SlotAddress)

    /// `/v1/spaces/{space}/slots[/{slot}[/history|/restore]]`, the space ending at its first
    /// `slots` segment. Names never need percent-encoding, so a `%` is refused outright: an
    /// encoded slash or NUL cannot slip through. Every name refused is `badName`, whatever the
    /// rule it breaks, so that a client tells a bad name by one code.
    init(path: String, method: HTTPRequest.Method) throws {
        do {
            try self.init(checking: path, method: method)
        } catch let error as SaveError where error.category == .usage {
            var refused = APIError(error)
            refused.code = "badName"
            throw refused
        }
    }

    private init(checking path: String, method: HTTPRequest.Method) throws {
        guard !path.utf8.contains(UInt8(ascii: "%")) else { throw APIError(.badRequest, "badName", "a percent-encoded path, expected names of A-Z a-z 0-9 . _ - only") }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 4, segments[0].isEmpty, segments[1] == "v1", segments[2] == "spaces" else {
            throw APIError(.notFound, "notFound", "no such resource, expected /v1/spaces/{space}/slots…")
        }
        segments.removeFirst(3)
        guard let separator = segments.dropFirst().firstIndex(of: "slots") else {
            throw APIError(.notFound, "notFound", "no /slots in the path, expected /v1/spaces/{space}/slots…")
        }
        let space = segments[..<separator].joined(separator: "/")
        var slot = Array(segments[(separator + 1)...])
        if slot.isEmpty {
            self = .slots(space: try SlotAddress.space(space))
            return
        }
        // A slot's history and restore take one method each; any other is that method's fault,
        // not the name's (the names `history` and `restore` are reserved for them).
        for (action, allowed) in [("history", HTTPRequest.Method.get), ("restore", .post)] where slot.count > 1 && slot.last == action {
            guard method == allowed else {
                throw APIError(.methodNotAllowed, "method", "\(method) is not allowed on a slot's \(action), expected \(allowed)")
            }
        }
        if slot.count > 1, slot.last == "history", method == .get {
            slot.removeLast()
            self = .history(try SlotAddress(space: space, slot: slot.joined(separator: "/")))
        } else if slot.count > 1, slot.last == "restore", method == .post {
            slot.removeLast()
            self = .restore(try SlotAddress(space: space, slot: slot.joined(separator: "/")))
        } else {
            self = .slot(try SlotAddress(space: space, slot: slot.joined(separator: "/")))
        }
    }
}

/// An answer that is not a save: `{"error": {"code", "message", "pointer"?}}` with its status.
struct APIError: Error {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var pointer: String?
    var retryAfter: Int?

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String, pointer: String? = nil) {
        (self.status, self.code, self.message, self.pointer) = (status, code, message, pointer)
    }

    /// The one table from an error's category to a status.
    init(_ error: SaveError) {
        let message = [error.file, error.location].compactMap { $0 }.joined(separator: ":") + (error.file == nil && error.location == nil ? "" : ": ") + error.message
        let pointer = error.location.flatMap { $0.hasPrefix("/") ? $0 : nil }
        switch error.category {
        case .usage: self.init(.badRequest, "badRequest", message, pointer: pointer)
        case .badData: self.init(.unprocessableContent, "badData", message, pointer: pointer)
        case .notFound: self.init(.notFound, "notFound", message)
        case .conflict: self.init(.conflict, "conflict", message)
        // The store's own words (its paths, bucket, endpoint) are the operator's, for the
        // server's log (``detail``), not for every client: an answer says what happened.
        case .permissionDenied: self.init(.serviceUnavailable, "storageRefused", "the server's store refused its credentials")
        case .busy:
            self.init(.serviceUnavailable, "unavailable", "the server's store did not answer")
            retryAfter = 1
        case .io, .cannotCreate:
            // The storage's messages name a full disk or quota the same way everywhere (FileError.reason).
            let full = ["no space left", "disk quota exceeded", "file too large"].contains { message.contains($0) }
            self.init(
                full ? HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage") : .serviceUnavailable, full ? "storageFull" : "storage",
                full ? "the server's store is full" : "the server's store failed")
            if !full { retryAfter = 1 }
        }
        if status.code >= 500 { detail = message }
    }

    /// For a failure of the server's store: what the store said, for the server's log.
    var detail: String?

    var response: Response {
        var fields: [(String, SaveValue)] = [("code", .string(code)), ("message", .string(message))]
        if let pointer { fields.append(("pointer", .string(pointer))) }
        var options = EncodingOptions()
        options.pretty = false
        let body = (try? JSONCodec().encode(.dictionary(["error": .dictionary(.init(uniqueKeysWithValues: fields))]), options: options)) ?? []
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
