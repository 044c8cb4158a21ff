import Crypto
import Foundation
import SaveKit
import SaveSync
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `savetool serve` as an operator and an attacker meet it: tokens and spaces, names checked
/// before storage, hostile traffic, a full disk, a store that is down, and kills under load.
@Suite("savetool serve", .serialized)
struct SyncServerTests {
    static let save = Array(try! Data(contentsOf: URL(fileURLWithPath: CLI.tournament)))
    static let slot = "Documents/current_tournament.json"

    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    // MARK: Who may do what

    @Test func tokensReachTheirSpacesOnly() throws {
        let root = try Processes.temporaryDirectory("sync-tokens")
        defer { try? FileManager.default.removeItem(at: root) }
        let tokens = root.appendingPathComponent("tokens.json").path
        func add(_ spaces: String, _ access: String) throws -> String {
            let made = try CLI.run("serve", "token", "add", "--tokens", tokens, "--spaces", spaces, "--access", access)
            #expect(made.status == 0, "\(made.errors)")
            return made.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let (writer, reader, admin, other) = (try add("kape/*", "write"), try add("kape/*", "read"), try add("kape/*", "admin"), try add("blocks/*", "write"))
        let file = try String(contentsOfFile: tokens, encoding: .utf8)
        for token in [writer, reader, admin, other] { #expect(!file.contains(token), "only hashes are kept") }
        var mode = stat()
        #expect(stat(tokens, &mode) == 0 && mode.st_mode & 0o777 == 0o600)
        // A name already taken, a pattern no space can match, an access that does not exist:
        // refused in one line each (64), and the file is left as it was.
        let named = try CLI.run("serve", "token", "add", "--tokens", tokens, "--spaces", "kape/*", "--name", "qa")
        #expect(named.status == 0, "\(named.errors)")
        let before = try Data(contentsOf: URL(fileURLWithPath: tokens))
        let refusals: [([String], String)] = [
            (["--spaces", "kape/*", "--name", "qa"], "savetool: \(tokens): a token named \"qa\" is there already, expected a name of its own\n"),
            (["--spaces", "bad space"], "savetool: --spaces: the pattern \"bad space\" has a space, which no space name has (A-Z a-z 0-9 . _ - and /, with * for any) (see savetool serve token --help)\n"),
            (["--spaces", "kape/*", "--name", ""], "savetool: --name '', expected a name for people to tell the token by (see savetool serve token --help)\n"),
            (["--spaces", "kape/*", "--access", "root"], "savetool: The value 'root' is invalid for '--access <access>'. Please provide one of 'read', 'write' or 'admin'. (see savetool serve token --help)\n"),
        ]
        for (arguments, message) in refusals {
            let refused = try Processes.run([CLI.executable, "serve", "token", "add", "--tokens", tokens] + arguments)
            #expect(refused.status == 64 && refused.errors == message, "\(arguments): \(refused.errors)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: tokens)) == before)

        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store, arguments: ["--tokens", tokens])
        let space = "kape/player-1"
        #expect(try SyncAPI(server.url, token: writer).push(space, Self.slot, Self.save, base: nil).status == 200)

        let anonymous = try SyncAPI(server.url).get(space, Self.slot)
        #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate") == "Bearer")
        #expect(try SyncAPI(server.url, token: "st_not-a-token").get(space, Self.slot).status == 401)
        // Another space: the same answer whether it exists or not, so probing tells nothing.
        let existing = try SyncAPI(server.url, token: other).get(space, Self.slot)
        let missing = try SyncAPI(server.url, token: other).get("kape/nobody", Self.slot)
        #expect(existing.status == 403 && missing.status == 403 && existing.text == missing.text)
        #expect(try SyncAPI(server.url, token: other).push(space, Self.slot, Self.save, base: 1).status == 403)
        // Read may read; write may push but not force or restore; admin may.
        #expect(try SyncAPI(server.url, token: reader).get(space, Self.slot).status == 200)
        #expect(try SyncAPI(server.url, token: reader).push(space, Self.slot, Self.save, base: 1).status == 403)
        let changed = Array(String(decoding: Self.save, as: UTF8.self).replacingOccurrences(of: "\"round\": 2", with: "\"round\": 3").utf8)
        #expect(changed != Self.save)
        let forced = "/v1/spaces/\(space)/slots/\(Self.slot)?force=true"
        #expect(try SyncAPI(server.url, token: writer).request("PUT", forced, body: changed).status == 403)
        #expect(try SyncAPI(server.url, token: admin).request("PUT", forced, body: changed).version == 2)
        let restore = SyncAPI.slot(space, Self.slot) + "/restore"
        #expect(try SyncAPI(server.url, token: writer).request("POST", restore, body: Array(#"{"version": 1}"#.utf8)).status == 403)
        let restored = try SyncAPI(server.url, token: admin).request("POST", restore, body: Array(#"{"version": 1}"#.utf8))
        #expect(restored.status == 200 && restored.version == 3)
        #expect(try SyncAPI(server.url, token: reader).get(space, Self.slot).bytes == Self.save)
        // A blind overwrite is never done.
        let blind = try SyncAPI(server.url, token: writer).request("PUT", SyncAPI.slot(space, Self.slot), body: changed)
        #expect(blind.status == 428)
        // force takes true; any other value is a clear 400, never a quiet 428.
        let yes = try SyncAPI(server.url, token: admin).request("PUT", SyncAPI.slot(space, Self.slot) + "?force=yes", body: changed)
        #expect(yes.status == 400 && yes.text.contains("badForce") && yes.text.contains("expected force=true"), "\(yes.status) \(yes.text)")
        // The scheme's name is case-insensitive.
        let lower = try SyncAPI(server.url).request("GET", SyncAPI.slot(space, Self.slot), headers: [("Authorization", "bearer \(reader)")])
        #expect(lower.status == 200, "\(lower.status) \(lower.text)")
        // The access log names requests, never a token.
        let log = server.log
        #expect(log.contains("PUT kape/player-1 Documents/current_tournament.json 200"))
        for token in [writer, reader, admin, other] { #expect(!log.contains(token)) }
        // /metrics counts the requests by status: one series each, however many requests had it.
        let metrics = try SyncAPI(server.url).request("GET", "/metrics").text
        let forbidden = metrics.split(separator: "\n").filter { $0.hasPrefix(#"savetool_requests_total{status="403"}"#) }
        #expect(forbidden.count == 1 && (forbidden.first?.split(separator: " ").last.flatMap { Int($0) } ?? 0) >= 4, "\(forbidden)")

        // The file is read again as it changes: a token added while the server runs counts at
        // once (an unknown token has the server look at the file again), one removed from the
        // file by hand (revoked) no longer does, and a file broken meanwhile leaves the tokens
        // read before in force.
        func status(_ token: String) throws -> Int { try SyncAPI(server.url, token: token).get(space, Self.slot).status }
        #expect(try status(reader) == 200)  // the file looked at a moment ago, as it is
        let late = try add("kape/*", "read")
        #expect(try status(late) == 200, "a token added while the server runs, at once")
        let deadline = Date().addingTimeInterval(10)
        var listed = try Codecs.json.decode(Array(try Data(contentsOf: URL(fileURLWithPath: tokens)))).arrayValue ?? []
        let readerHash = SHA256.hash(data: Array(reader.utf8)).map { String(format: "%02x", $0) }.joined()
        listed.removeAll { $0["sha256"]?.stringValue == readerHash }
        try Data(try Codecs.json.encode(.array(listed))).write(to: URL(fileURLWithPath: tokens))
        while try status(reader) != 401, Date() < deadline { usleep(200_000) }
        #expect(try status(reader) == 401, "a token removed from the file")
        try Data("[{".utf8).write(to: URL(fileURLWithPath: tokens))
        usleep(1_200_000)
        #expect(try status(late) == 200, "the tokens read before stay in force")
        #expect(server.log.contains("the tokens read before stay in force"), "\(server.log)")

        // A device that sends no token is told to give one, by its flag.
        let device = root.appendingPathComponent("current_tournament.json").path
        try Data(Self.save).write(to: URL(fileURLWithPath: device))
        let tokenless = try CLI.run("sync", device, "--server", server.url, "--space", "kape/player-1")
        #expect(tokenless.status == 77, "\(tokenless.errors)")
        #expect(tokenless.errors.contains("the server asks for a token, and none was given") && tokenless.errors.contains("--token-file names a file holding one"), "\(tokenless.errors)")
        // A pattern that token add refuses is refused in a hand-written file too.
        let handwritten = root.appendingPathComponent("hand.json").path
        try Data(#"[{"sha256": "\#(String(repeating: "a", count: 64))", "spaces": ["kape/*", "bad space"], "access": "read"}]"#.utf8).write(to: URL(fileURLWithPath: handwritten))
        let badPattern = try CLI.run("serve", "--store", store, "--tokens", handwritten)
        #expect(badPattern.status == 65 && badPattern.errors.contains("\(handwritten):/0/spaces/1: the pattern \"bad space\" has a space"), "\(badPattern.errors)")

        // Without tokens, only a loopback address is served.
        let open = try CLI.run("serve", "--store", store, "--host", "0.0.0.0", "--port", "0")
        #expect(open.status == 64 && open.errors.contains("without --tokens"), "\(open.errors)")
    }

    // MARK: Hostile traffic

    /// Sends raw bytes on a new connection and reads the answer's status (0: none came).
    static func raw(_ port: Int, _ request: [UInt8], closeWrite: Bool = false) -> Int {
        guard let socket = MotoServer.connectToLoopback(port) else { return -1 }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if closeWrite { shutdown(socket, Int32(SHUT_WR)) }
        var answer = [UInt8](repeating: 0, count: 64)
        let count = recv(socket, &answer, answer.count, 0)
        guard count >= 12, answer.starts(with: Array("HTTP/1.1 ".utf8)) else { return 0 }
        return Int(String(decoding: answer[9..<12], as: UTF8.self)) ?? 0
    }

    static func request(_ method: String, _ target: String, headers: [String] = [], body: [UInt8] = []) -> [UInt8] {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"] + headers
        if !body.isEmpty, !headers.contains(where: { $0.lowercased().hasPrefix("content-length") || $0.lowercased().hasPrefix("transfer-encoding") }) {
            lines.append("Content-Length: \(body.count)")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
    }

    @Test func malformedRequestsGetA4xxAndTheServerStaysUp() throws {
        let root = try Processes.temporaryDirectory("sync-hostile")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store, arguments: ["--max-body", "65536", "--timeout", "2"])
        let port = server.port
        #expect(try SyncAPI(server.url).push("blocks/p1", Self.slot, Self.save, base: nil).status == 200)
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        let put = { (target: String, body: [UInt8]) in Self.request("PUT", target, headers: ["If-None-Match: *"], body: body) }
        let slots = "/v1/spaces/blocks/p1/slots/"
        // Each case: the request, and what it must not be answered with.
        var cases: [(String, [UInt8])] = [
            ("dot-dot", Self.request("GET", "/v1/spaces/blocks/../slots/x.json")),
            ("dot", Self.request("GET", "/v1/spaces/blocks/./slots/x.json")),
            ("dot-dot slot", Self.request("GET", slots + "../../etc/passwd")),
            ("encoded slash", Self.request("GET", "/v1/spaces/blocks%2Fp1/slots/x.json")),
            ("encoded dot-dot", Self.request("GET", slots + "%2E%2E/x.json")),
            ("encoded NUL", Self.request("GET", slots + "x%00.json")),
            ("empty segment", Self.request("GET", "/v1/spaces/blocks//p1/slots/x.json")),
            ("five space segments", Self.request("GET", "/v1/spaces/a/b/c/d/e/slots/x.json")),
            ("seventeen slot segments", Self.request("GET", slots + Array(repeating: "a", count: 17).joined(separator: "/"))),
            ("long segment", Self.request("GET", slots + String(repeating: "a", count: 129))),
            ("bad character", Self.request("GET", slots + "a~b.json")),
            ("space in name", Self.request("GET", slots + "a%20b.json")),
            ("non-ASCII name", Array("GET \(slots)café.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)),
            ("huge header", Self.request("GET", slots + "x.json", headers: ["X-Big: " + String(repeating: "a", count: 200_000)])),
            ("many headers", Self.request("GET", slots + "x.json", headers: (0..<2000).map { "X-\($0): 1" })),
            ("bad content length", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Content-Length: ten"], body: Self.save)),
            ("two content lengths", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Content-Length: 3", "Content-Length: 4"], body: Self.save)),
            ("negative content length", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Content-Length: -1"], body: Self.save)),
            ("declared too large", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Content-Length: 100000000"])),
            ("chunked too large", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Transfer-Encoding: chunked"],
                body: Array((String(repeating: "10000\r\n" + String(repeating: "a", count: 65536) + "\r\n", count: 2) + "0\r\n\r\n").utf8))),
            ("truncated body", Self.request("PUT", slots + "x.json", headers: ["If-None-Match: *", "Content-Length: 5000"], body: Array(Self.save.prefix(100)))),
            ("not JSON", put(slots + "x.json", Array("{\"round\": ".utf8))),
            ("binary plist in a .json slot", put(slots + "y.json", Array("bplist00".utf8) + [UInt8](repeating: 0, count: 40))),
            ("not a save at all", put(slots + "z.json", Array("hello".utf8))),
            ("a lone number", put(slots + "n.json", Array("5".utf8))),
            ("a lone string", put(slots + "s.json", Array(#""level 7""#.utf8))),
            ("deep nesting", put(slots + "deep.json", deep)),
            ("invalid tournament", put(slots + "Documents/current_tournament.json", Array(#"{"schemaVersion": 3, "round": "two"}"#.utf8))),
            ("blind overwrite", Self.request("PUT", slots + Self.slot, body: Self.save)),
            ("bad If-Match", Self.request("PUT", slots + Self.slot, headers: ["If-Match: banana"], body: Self.save)),
            ("future base", Self.request("PUT", slots + Self.slot, headers: ["If-Match: \"99\""], body: Self.save)),
            ("version zero", Self.request("GET", slots + Self.slot + "?version=0")),
            ("restore without a body", Self.request("POST", slots + Self.slot + "/restore", body: Array("{}".utf8))),
            ("unknown method", Self.request("DELETE", slots + Self.slot)),
            ("not the API", Self.request("GET", "/etc/passwd")),
            ("garbage request line", Array("\u{01}\u{02} nonsense\r\n\r\n".utf8)),
        ]
        // Random bytes in names and bodies fill the rest.
        var generator = SystemRandomNumberGenerator()
        while cases.count < 1000 {
            let junk = (0..<Int.random(in: 1...24, using: &generator)).map { _ in UInt8.random(in: 0x21...0x7E, using: &generator) }
            let name = String(decoding: junk.filter { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") && $0 != UInt8(ascii: "/") }, as: UTF8.self)
            // A name the rule would take is made one it refuses.
            let named = (try? SlotAddress(space: "blocks/p1", slot: name)) != nil ? name + "%" : name
            cases.append(("random name \(named)", Self.request("GET", slots + named)))
            let body = (0..<Int.random(in: 1...256, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            cases.append(("random body \(body.prefix(40))", put(slots + "r\(cases.count).json", body)))
        }
        let before = server.residentKiB
        var wrong: [String] = []
        for (name, bytes) in cases {
            let status = Self.raw(port, bytes)
            if !(400..<500).contains(status) { wrong.append("\(name): \(status)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of \(cases.count) not answered 4xx: \(wrong.prefix(10))")
        #expect(try SyncAPI(server.url).request("GET", "/healthz").status == 200, "still up")
        let growth = server.residentKiB - before
        #expect(growth < 64 * 1024, "memory stays flat: grew \(growth) KiB over \(cases.count) requests")
        // Nothing of it was stored: the one slot pushed at the start is all there is.
        let listed = try Codecs.json.decode(try SyncAPI(server.url).request("GET", "/v1/spaces/blocks/p1/slots").bytes)
        #expect(listed.arrayValue?.count == 1, "\(listed)")
        // Every answer is JSON in the API's shape, outside the API too; a slot's history and
        // restore refuse another method by that method (405), not by the name.
        for (method, path, status, code) in [
            ("GET", "/", 404, "notFound"), ("GET", "/v2/anything", 404, "notFound"), ("PUT", "/x", 404, "notFound"),
            ("GET", slots + Self.slot + "/restore", 405, "method"), ("PUT", slots + Self.slot + "/history", 405, "method"),
        ] {
            let answer = try SyncAPI(server.url).request(method, path)
            let error = try? Codecs.json.decode(answer.bytes)
            #expect(answer.status == status && error?["error"]?["code"]?.stringValue == code, "\(method) \(path): \(answer.status) \(String(decoding: answer.bytes, as: UTF8.self))")
        }
    }

    /// A body that stops coming in gets 408 after `--timeout`, and the server stays up, on a
    /// connection kept alive too: the connection's own loop then reads what is left of the body,
    /// and a second reader of it stopped the whole server (SIGILL).
    @Test func aBodyThatStallsIs408AndTheServerStaysUp() throws {
        let root = try Processes.temporaryDirectory("sync-stall")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store, arguments: ["--timeout", "1"])
        let head = "PUT /v1/spaces/blocks/p1/slots/slow.json HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: *\r\n"
        for (name, request) in [
            ("a short body", head + "Content-Length: 100\r\n\r\n{\"a\""),
            ("no body at all", head + "Content-Length: 100\r\n\r\n"),
            ("a chunked body that stalls", head + "Transfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n"),
        ] {
            #expect(Self.raw(server.port, Array(request.utf8)) == 408, "\(name)")
            #expect(try SyncAPI(server.url).request("GET", "/healthz").status == 200, "still up after \(name)")
        }
        #expect(try SyncAPI(server.url).get("blocks/p1", "slow.json").status == 404, "nothing stored")
        // A body that ends (the client half-closes) before its Content-Length: 400, not 500.
        let cut = Self.raw(server.port, Array((head + "Content-Length: 100\r\n\r\n{\"a\": 1}").utf8), closeWrite: true)
        #expect(cut == 400, "\(cut)")
        // The log counts the bytes read whole, not those a Content-Length claims.
        #expect(server.log.contains("PUT blocks/p1 slow.json 408 in=0 "), "\(server.log)")
        #expect(try SyncAPI(server.url).push("blocks/p1", Self.slot, Self.save, base: nil).status == 200)
        #expect(server.log.contains("PUT blocks/p1 \(Self.slot) 200 version=1 in=\(Self.save.count) "), "\(server.log)")
    }

    /// Names that the store's own markers once shared: every one is a slot of its own.
    @Test func slotsNamedLikeTheStoresMarkersAreSlotsLikeAnyOther() throws {
        let root = try Processes.temporaryDirectory("sync-names")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let api = SyncAPI(server.url, device: "phone")
        for (space, slot) in [("a", "a.json"), ("a", "slot-a.json"), ("space-a", "a.json"), ("a", "v0000000001.json"), ("a", "floor")] {
            let body = space == "a" && slot == "floor" ? Array(#"{"n": 1}"#.utf8) : Self.save
            let pushed = try api.push(space, slot, body, base: nil)
            #expect(pushed.status == 200, "\(space) \(slot): \(pushed.text)")
            #expect(try api.get(space, slot).bytes == body, "\(space) \(slot)")
        }
        let listed = try Codecs.json.decode(try api.request("GET", "/v1/spaces/a/slots").bytes).arrayValue ?? []
        #expect(listed.compactMap { $0["slot"]?.stringValue } == ["a.json", "floor", "slot-a.json", "v0000000001.json"])
    }

    // MARK: Daily bundles of the heads

    /// `--backup-repo`: the heads of every space go into the day's bundle (made at start, and
    /// now through the admin route); restoring it is the plain `import`.
    @Test func theHeadsGoIntoADailyBundleThatImportRestores() throws {
        let root = try Processes.temporaryDirectory("sync-backups")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let repo = root.appendingPathComponent("daily").path
        let server = try SyncServerProcess(store: store, arguments: ["--backup-repo", repo])
        let api = SyncAPI(server.url, device: "phone")
        let blocks = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.blocks)))
        #expect(try api.push("kape/p1", Self.slot, Self.save, base: nil).status == 200)
        #expect(try api.push("blocks/p2", "Library/Preferences/com.example.blocks.plist", blocks, base: nil).status == 200)
        let changed = Array(String(decoding: Self.save, as: UTF8.self).replacingOccurrences(of: "\"round\": 2", with: "\"round\": 3").utf8)
        #expect(try api.push("kape/p1", Self.slot, changed, base: 1).version == 2)
        // A space named like another space's slot: both heads have a place of their own. So do
        // a slot and another under its name (`Documents` and `Documents/…`): the second flat.
        #expect(try api.push("kape/p1/Documents", "current_tournament.json", Self.save, base: nil).status == 200)
        #expect(try api.push("kape/p1", "Documents", Self.save, base: nil).status == 200)

        let made = try api.request("POST", "/v1/admin/backup")
        #expect(made.status == 200, "\(made.text)")
        let report = try Codecs.json.decode(made.bytes)
        #expect(report["heads"] == 4 && report["outcome"] != "unchanged", "\(made.text)")
        let again = try Codecs.json.decode(try api.request("POST", "/v1/admin/backup").bytes)
        #expect(again["outcome"] == "unchanged", "nothing changed since: \(again)")

        guard let bundle = report["bundle"]?.stringValue else { Issue.record("no bundle"); return }
        let restored = root.appendingPathComponent("restored").path
        let imported = try CLI.run("import", bundle, "--into", restored, "--no-migrate")
        #expect(imported.status == 0, "\(imported.errors)")
        let named = restored + "/kape/p1/slots/" + Self.slot, flat = restored + "/kape/p1/%slots/Documents%2Fcurrent_tournament.json"
        let tournament = FileManager.default.fileExists(atPath: named) ? named : flat
        #expect(try Data(contentsOf: URL(fileURLWithPath: tournament)) == Data(changed), "the head, not version 1")
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored + "/kape/p1/Documents/slots/current_tournament.json")) == Data(Self.save))
        let staged = ["/kape/p1/slots/Documents", "/kape/p1/%slots/Documents", "/kape/p1/%slots/Documents%2Fcurrent_tournament.json"]
        #expect(staged.filter { FileManager.default.fileExists(atPath: restored + $0) }.count == 2, "one of the two as it is named, the other flat")
        // The blocks sample was migrated on its way in: the head is what the server holds.
        let head = try api.get("blocks/p2", "Library/Preferences/com.example.blocks.plist").bytes
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored + "/blocks/p2/slots/Library/Preferences/com.example.blocks.plist")) == Data(head))
    }

    /// `If-None-Match` as RFC 9110 reads it (`*`, a list, weak tags), and HEAD as GET without
    /// its body.
    @Test func conditionalReadsAndHEADAreAnsweredAsHTTPSays() throws {
        let root = try Processes.temporaryDirectory("sync-conditional")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let api = SyncAPI(server.url)
        #expect(try api.push("kape/p1", Self.slot, Self.save, base: nil).status == 200)
        let path = SyncAPI.slot("kape/p1", Self.slot)
        for (tags, status) in [("\"1\"", 304), ("*", 304), ("\"5\", \"1\"", 304), ("W/\"1\"", 304), ("\"2\"", 200), ("\"2\", \"3\"", 200), ("\"01\"", 200)] {
            #expect(try api.request("GET", path, headers: [("If-None-Match", tags)]).status == status, "If-None-Match: \(tags)")
        }
        let head = try api.request("HEAD", path)
        #expect(head.status == 200 && head.bytes.isEmpty && head.header("ETag") == "\"1\"" && head.header("Content-Length") == String(Self.save.count))
        #expect(try api.request("HEAD", SyncAPI.slot("kape/p1", "nope.json")).status == 404)
        // A compressed body is said to be one, not decoded as a broken save.
        let encoded = try api.request("PUT", path, headers: [("If-Match", "\"1\""), ("Content-Encoding", "gzip")], body: Self.save)
        #expect(encoded.status == 415 && encoded.text.contains("Content-Encoding: gzip"), "\(encoded.status) \(encoded.text)")
        // A body that does not read names its place as every other error does: file:place: message.
        let broken = try api.push("kape/p1", "Documents/current_tournament.json", Array("{\"round\": ".utf8), base: nil)
        let error = try Codecs.json.decode(broken.bytes)["error"]
        #expect(broken.status == 422 && error?["code"] == "badData", "\(broken.status) \(broken.text)")
        #expect(error?["message"]?.stringValue?.hasPrefix("Documents/current_tournament.json:1:11: the end of the input, expected") == true, "\(broken.text)")
        // A name refused is badName, whatever rule it breaks.
        for name in ["a%20b.json", "a//b.json", "a:b.json", String(repeating: "n", count: 200) + ".json"] {
            let refused = try api.request("GET", "/v1/spaces/kape/p1/slots/" + name)
            #expect(refused.status == 400 && (try? Codecs.json.decode(refused.bytes))?["error"]?["code"] == "badName", "\(name): \(refused.text)")
        }
        let lone = try api.push("kape/p1", "n.json", Array("5".utf8), base: nil)
        #expect(try Codecs.json.decode(lone.bytes)["error"]?["message"] == "n.json:byte 0: a lone integer at the top, expected an object or array", "\(lone.text)")
    }

    /// A backup repository that does not answer is named as such, not as the server's store.
    @Test func aBackupRepositoryThatIsDownIsNamed() throws {
        let root = try Processes.temporaryDirectory("sync-backup-down")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        var environment = ProcessInfo.processInfo.environment
        (environment["AWS_ACCESS_KEY_ID"], environment["AWS_SECRET_ACCESS_KEY"], environment["AWS_REGION"]) = ("key", "secret", "us-east-1")
        environment["AWS_ENDPOINT_URL"] = "http://127.0.0.1:\(try MotoServer.freePort())"  // nothing listens there
        let server = try SyncServerProcess(store: store, arguments: ["--backup-repo", "s3://daily/heads"], environment: environment)
        #expect(try SyncAPI(server.url).push("kape/p1", Self.slot, Self.save, base: nil).status == 200, "the store itself is fine")
        let made = try SyncAPI(server.url).request("POST", "/v1/admin/backup")
        #expect(made.status == 503 && made.text.contains("the backup repository did not answer"), "\(made.status) \(made.text)")
    }

    /// `--keep-versions`: old versions go, the head and the last ones stay, and a server
    /// started again finds the head above the thinned ones.
    @Test func oldVersionsAreThinned() throws {
        let root = try Processes.temporaryDirectory("sync-thin")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        var server: SyncServerProcess? = try SyncServerProcess(store: store, arguments: ["--keep-versions", "5"])
        var api = SyncAPI(server!.url, device: "phone")
        #expect(try api.push("kape/p1", Self.slot, Self.save, base: nil).version == 1)
        let text = String(decoding: Self.save, as: UTF8.self)
        for version in 2...30 {
            let body = Array(text.replacingOccurrences(of: "\"deckId\": \"", with: "\"deckId\": \"v\(version)-").utf8)
            #expect(try api.push("kape/p1", Self.slot, body, base: version - 1).version == version)
        }
        let history = try Codecs.json.decode(try api.request("GET", SyncAPI.slot("kape/p1", Self.slot) + "/history").bytes).arrayValue ?? []
        #expect(history.compactMap { $0["version"]?.int64Value } == [30, 29, 28, 27, 26])
        #expect(try api.request("GET", SyncAPI.slot("kape/p1", Self.slot) + "?version=3").status == 404)
        // A new process finds the head from the floor, and a push from a thinned base is merged
        // without one.
        server = nil
        server = try SyncServerProcess(store: store, arguments: ["--keep-versions", "5"])
        api = SyncAPI(server!.url, device: "tablet")
        #expect(try api.get("kape/p1", Self.slot).version == 30)
        let further = Array(text.replacingOccurrences(of: "\"round\": 2", with: "\"round\": 3").utf8)
        let stale = try api.push("kape/p1", Self.slot, further, base: 3)
        #expect(stale.status == 200 && stale.version == 31, "\(stale.status) \(stale.text)")
    }

    // MARK: Faults

    /// A server that cannot start says why, naming the address or the folder, with cli.md's
    /// exit code, and says nothing of listening first.
    @Test func aServerThatCannotStartSaysWhy() throws {
        let root = try Processes.temporaryDirectory("sync-start")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        // A port another process holds.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        #expect(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, length) } } == 0)
        #expect(listen(holder, 1) == 0)
        #expect(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(holder, $0, &length) } } == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let taken = try CLI.run("serve", "--store", store, "--port", String(port))
        #expect(taken.status == 75, "\(taken.errors)")
        #expect(taken.errors.contains("savetool: 127.0.0.1:\(port): in use by another process, expected a free port"))
        #expect(taken.outputText.isEmpty)
        // `--listen host:port` is the same address in one (cli.md's form).
        let takenToo = try CLI.run("serve", "--store", store, "--listen", "127.0.0.1:\(port)")
        #expect(takenToo.status == 75 && takenToo.errors.contains("savetool: 127.0.0.1:\(port): in use by another process, expected a free port"), "\(takenToo.errors)")
        for (listen, extra) in [("127.0.0.1", [String]()), ("::1:8787", []), ("[::1:8787", []), ("[]:8787", []), (":8787", []), ("127.0.0.1:70000", []), ("127.0.0.1:0", ["--port", "0"])] {
            let refused = try Processes.run([CLI.executable, "serve", "--store", store, "--listen", listen] + extra)
            #expect(refused.status == 64, "\(listen): \(refused.errors)")
            #expect(refused.errors.hasPrefix(extra.isEmpty ? "savetool: --listen \(listen), expected host:port, such as 127.0.0.1:8787 or [::1]:8787" : "savetool: --listen with --host or --port"), "\(refused.errors)")
        }
        let openToo = try CLI.run("serve", "--store", store, "--listen", "0.0.0.0:0")
        #expect(openToo.status == 64 && openToo.errors.hasPrefix("savetool: listening on 0.0.0.0 without --tokens"), "\(openToo.errors)")

        let open = try CLI.run("serve", "--store", store, "--host", "0.0.0.0")
        #expect(open.status == 64)
        #expect(open.errors == "savetool: listening on 0.0.0.0 without --tokens, expected a tokens file (savetool serve token add) or a loopback address (127.0.0.1)\n")
        let tokens = root.appendingPathComponent("tokens.json").path
        #expect(try CLI.run("serve", "token", "add", "--tokens", tokens, "--spaces", "kape/*").status == 0)
        let nowhere = try CLI.run("serve", "--store", store, "--tokens", tokens, "--host", "nonsense.invalid", "--port", "8099")
        #expect(nowhere.status == 64, "\(nowhere.errors)")
        #expect(nowhere.errors == "savetool: nonsense.invalid:8099: no such host, expected an address or a name of this machine (127.0.0.1, 0.0.0.0, …)\n")
        let file = root.appendingPathComponent("a-file").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let notAFolder = try CLI.run("serve", "--store", file)
        #expect(notAFolder.status == 66)
        #expect(notAFolder.errors == "savetool: \(file): a file, expected the folder versions are kept in\n")
        // A bucket that does not exist, or credentials the store refuses: before listening.
        let moto = try MotoServer.shared()
        let noBucket = try Processes.run([CLI.executable, "serve", "--store", "s3://no-such-bucket-anywhere/sync"], environment: moto.variables)
        #expect(noBucket.status == 66, "\(noBucket.errors)")
        #expect(noBucket.errors == "savetool: s3://no-such-bucket-anywhere: no such bucket (NoSuchBucket), expected an existing bucket the credentials may use\n")
        // So does a backup repository's: a server whose daily backups would all fail does not start.
        let noBackupBucket = try Processes.run([CLI.executable, "serve", "--store", store, "--port", "0", "--backup-repo", "s3://no-such-bucket-anywhere/daily"], environment: moto.variables)
        #expect(noBackupBucket.status == 66 && !noBackupBucket.outputText.contains("listening"), "\(noBackupBucket.errors)")
        #expect(noBackupBucket.errors == "savetool: s3://no-such-bucket-anywhere: no such bucket (NoSuchBucket), expected an existing bucket the credentials may use\n")
        var wrongSecret = moto.variables
        wrongSecret["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        let refused = try Processes.run([CLI.executable, "serve", "--store", "s3://\(try moto.makeBucket())/sync"], environment: wrongSecret)
        #expect(refused.status == 77, "\(refused.errors)")
        #expect(refused.outputText.isEmpty && !refused.errors.contains("listening"))
    }

    @Test func aFullDiskIs507WithNothingHalfWritten() throws {
        let root = try Processes.temporaryDirectory("sync-full")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        // 16 blocks of 512 bytes: the tournament fits, a 20 KB save does not.
        let server = try SyncServerProcess(store: store, limitBlocks: 16)
        let api = SyncAPI(server.url)
        #expect(try api.push("kape/p1", Self.slot, Self.save, base: nil).status == 200)
        let big = Array(("{\"notes\": \"" + String(repeating: "x", count: 20_000) + "\"}").utf8)
        let full = try api.push("kape/p1", "Documents/notes.json", big, base: nil)
        #expect(full.status == 507, "\(full.status) \(full.text)")
        #expect(full.text.contains("storageFull"))
        #expect(try api.get("kape/p1", "Documents/notes.json").status == 404, "no half version is served")
        let leftovers = Files.regularFiles(under: store).filter { $0.contains(".savetool-") || $0.contains("tmp") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        #expect(try api.get("kape/p1", Self.slot).bytes == Self.save)
    }

    @Test func aStoreThatIsDownIs503AndTheClientGivesUpWith75() throws {
        let root = try Processes.temporaryDirectory("sync-down")
        defer { try? FileManager.default.removeItem(at: root) }
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = "key"
        environment["AWS_SECRET_ACCESS_KEY"] = "secret"
        environment["AWS_REGION"] = "us-east-1"
        environment["AWS_ENDPOINT_URL"] = "http://127.0.0.1:\(try MotoServer.freePort())"  // nothing listens there
        let server = try SyncServerProcess(store: "s3://saves/sync", environment: environment)
        let answer = try SyncAPI(server.url).push("kape/p1", Self.slot, Self.save, base: nil)
        #expect(answer.status == 503 && answer.header("Retry-After") != nil, "\(answer.status) \(answer.text)")
        // The store's place is the operator's to know, in the server's log, not every client's.
        #expect(answer.text.contains("the server's store did not answer") && !answer.text.contains("s3://") && !answer.text.contains("127.0.0.1"), "\(answer.text)")
        #expect(((try? String(contentsOfFile: server.logFile, encoding: .utf8)) ?? "").contains("store: s3://saves/sync"))
        let device = root.appendingPathComponent("current_tournament.json").path
        try Data(Self.save).write(to: URL(fileURLWithPath: device))
        let synced = try CLI.run("sync", device, "--server", server.url, "--space", "kape/p1")
        #expect(synced.status == 75, "\(synced.errors)")
        #expect(synced.errors.contains("tried 4 times"), "\(synced.errors)")
        // No server at all: the same, without waiting for answers.
        let nobody = try CLI.run("sync", device, "--server", "http://127.0.0.1:\(try MotoServer.freePort())", "--space", "kape/p1")
        #expect(nobody.status == 75, "\(nobody.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: device)) == Data(Self.save))
        // A folder stops at the first file the server did not answer for: every other file,
        // and the listing of the space, would wait through the same tries.
        let folder = root.appendingPathComponent("device")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        for name in ["a.json", "b.json", "c.json"] { try Data(Self.save).write(to: folder.appendingPathComponent(name)) }
        let whole = try CLI.run("sync", folder.path, "--server", "http://127.0.0.1:\(try MotoServer.freePort())", "--space", "kape/p1")
        #expect(whole.status == 75, "\(whole.errors)")
        #expect(whole.errors.split(separator: "\n").count == 1, "\(whole.errors)")
        #expect(whole.errors.hasPrefix("savetool: \(folder.path)/a.json: cannot reach"), "\(whole.errors)")
        // A server whose store does not answer (503 to every try) stops it the same way.
        let stopped = try CLI.run("sync", folder.path, "--server", server.url, "--space", "kape/p1")
        #expect(stopped.status == 75, "\(stopped.errors)")
        #expect(stopped.errors.split(separator: "\n").count == 1 && stopped.errors.contains("a.json: the server answered 503"), "[\(stopped.errors)]")
    }

    /// A folder's files that no slot can hold (a readme beside the saves, a name with a space)
    /// are left out, each said on its line, and the rest syncs with exit 0: such a file made every
    /// run of an hourly job fail (65, or 64). Named alone, the same file is an error that says why.
    @Test func aFolderLeavesOutWhatNoSlotCanHold() throws {
        let root = try Processes.temporaryDirectory("sync-left-out")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let folder = root.appendingPathComponent("device")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        try Data(Self.save).write(to: folder.appendingPathComponent(Self.slot))
        try Data("Saves are in Documents.\n".utf8).write(to: folder.appendingPathComponent("readme.txt"))
        try Data(Self.save).write(to: folder.appendingPathComponent("Documents/my save.json"))
        // A name that is not UTF-8, and one holding U+EF80: neither can be a slot's.
        let latin = try Processes.run(["python3", "-c", "import sys; open(sys.argv[1].encode() + b'/caf\\xe9.json', 'wb').write(open(sys.argv[2], 'rb').read())",
                                       folder.appendingPathComponent("Documents").path, folder.appendingPathComponent(Self.slot).path])
        #expect(latin.status == 0, "\(latin.errors)")
        try Data(Self.save).write(to: folder.appendingPathComponent("Documents/pua\u{EF80}.json"))
        let synced = try CLI.run("sync", folder.path, "--server", server.url, "--space", "kape/p1")
        #expect(synced.status == 0, "\(synced.errors)")
        #expect(synced.outputText.contains("\(folder.path)/Documents/caf\\xE9.json: left out: a name that is not UTF-8 (a byte that is not UTF-8 shown as \\x and two hex digits), expected UTF-8 names"), "\(synced.outputText)")
        #expect(synced.outputText.contains("\(folder.path)/Documents/pua\u{EF80}.json: left out: the slot name \"Documents/pua?.json\": the character U+EF80, expected only A-Z a-z 0-9 . _ -"), "\(synced.outputText)")
        let json = try CLI.run("--json", "sync", folder.path, "--server", server.url, "--space", "kape/p1")
        #expect(json.status == 0 && json.outputText.contains(#""file":"\#(folder.path)/Documents/caf\\xE9.json","slot":"","action":"leftOut""#), "\(json.outputText)")
        #expect(synced.outputText.contains("\(folder.path)/readme.txt: left out: not a save document, expected JSON or a property list\n"), "\(synced.outputText)")
        #expect(synced.outputText.contains("\(folder.path)/Documents/my save.json: left out: the slot name"), "\(synced.outputText)")
        #expect(synced.outputText.contains("\(folder.path)/\(Self.slot): pushed as the slot's first version"), "\(synced.outputText)")
        let listing = try Codecs.json.decode(try SyncAPI(server.url).request("GET", "/v1/spaces/kape/p1/slots").bytes).arrayValue ?? []
        #expect(listing.compactMap { $0["slot"]?.stringValue } == [Self.slot])
        let alone = try CLI.run("sync", folder.appendingPathComponent("readme.txt").path, "--server", server.url, "--space", "kape/p1")
        #expect(alone.status == 65, "\(alone.errors)")
        #expect(alone.errors.contains("not a save document"), "\(alone.errors)")
        // A save synced before that no longer reads is said (65), never passed over.
        try Data("{ cut sho".utf8).write(to: folder.appendingPathComponent(Self.slot))
        let broken = try CLI.run("sync", folder.path, "--server", server.url, "--space", "kape/p1")
        #expect(broken.status == 65, "\(broken.outputText)\(broken.errors)")
        #expect(broken.errors.contains("\(folder.path)/\(Self.slot)"), "\(broken.errors)")
    }

    /// A server that takes the connection and never answers: each try waits the whole timeout,
    /// so the client gives up after two such tries, not after all four.
    @Test func aServerThatNeverAnswersIsGivenUpAfterTwoTimeouts() throws {
        let root = try Processes.temporaryDirectory("sync-silent")
        defer { try? FileManager.default.removeItem(at: root) }
        let silent = try SilentListener()
        defer { silent.close() }
        let client = try SyncClient(server: "http://127.0.0.1:\(silent.port)", space: "kape/p1", token: nil, device: nil, registry: CodecRegistry.builtIn, timeout: 1)
        let file = root.appendingPathComponent("current_tournament.json").path
        try Data(Self.save).write(to: URL(fileURLWithPath: file))
        var entry: SyncState.Entry?
        let started = Date()
        #expect { _ = try client.sync(file: file, slot: Self.slot, entry: &entry) } throws: { error in
            let error = error as? SaveError
            return error?.category == .busy && error?.cause is SyncClient.Unreachable && error?.message.contains("(tried 2 times)") == true
        }
        // Each try ends at the idle timeout, or at the total one (4×) when the push's bytes keep
        // curl's measure of speed above its floor: two tries, never four.
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 1.5 && waited < 9.5, "\(waited) s")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(Self.save))
    }

    // MARK: Kills under load

    /// Twenty SIGKILLs at spread moments while devices push: after a restart, every push that
    /// was answered 200 is in the history with its bytes, and every version served is whole.
    @Test(arguments: SyncStore.allCases)
    func killedUnderLoadLosesNothingAcknowledged(_ kind: SyncStore) throws {
        let root = try Processes.temporaryDirectory("sync-kill")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, environment) = try kind.make(in: root)
        // Every version kept: each acknowledged one is looked for below.
        var server = try SyncServerProcess(store: store, arguments: ["--keep-versions", "0"], environment: environment)
        let port = server.port
        #expect(try SyncAPI(server.url).push("kape/p1", Self.slot, Self.save, base: nil).status == 200)
        final class Acknowledged: @unchecked Sendable {
            let lock = NSLock()
            var versions: [Int: String] = [:]
            var running = true
        }
        let acknowledged = Acknowledged()
        let load = DispatchGroup()
        for device in 0..<4 {
            DispatchQueue.global().async(group: load) {
                let api = SyncAPI("http://127.0.0.1:\(port)", device: "device-\(device)")
                var round = 0
                while acknowledged.lock.withLock({ acknowledged.running }) {
                    round += 1
                    guard let head = try? api.get("kape/p1", Self.slot), head.status == 200, let version = head.version else {
                        Thread.sleep(forTimeInterval: 0.02)
                        continue
                    }
                    var text = String(decoding: head.bytes, as: UTF8.self)
                    text = text.replacingOccurrences(of: "\"deckId\": \"", with: "\"deckId\": \"d\(device)-\(round)-")
                    guard let answer = try? api.push("kape/p1", Self.slot, Array(text.utf8), base: version), answer.status == 200, let stored = answer.version else { continue }
                    acknowledged.lock.withLock { acknowledged.versions[stored] = Self.hex(answer.bytes) }
                }
            }
        }
        for _ in 0..<20 {
            // Each kill comes after a push got through since the last restart, so every one is
            // under load, however slow the store (moto, on a busy machine).
            let before = acknowledged.lock.withLock { acknowledged.versions.count }
            let deadline = Date().addingTimeInterval(30)
            while acknowledged.lock.withLock({ acknowledged.versions.count }) == before, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.3))
            server.kill()
            server = try SyncServerProcess(store: store, arguments: ["--keep-versions", "0"], port: port, environment: environment)
        }
        Thread.sleep(forTimeInterval: 0.2)
        acknowledged.lock.withLock { acknowledged.running = false }
        load.wait()

        let api = SyncAPI(server.url)
        let answered = acknowledged.lock.withLock { acknowledged.versions }
        #expect(answered.count >= 20, "the load got through between kills: \(answered.count) pushes")
        for (version, sha256) in answered {
            let stored = try api.request("GET", SyncAPI.slot("kape/p1", Self.slot) + "?version=\(version)")
            #expect(stored.status == 200 && Self.hex(stored.bytes) == sha256, "version \(version) was answered 200")
        }
        let history = try Codecs.json.decode(try api.request("GET", SyncAPI.slot("kape/p1", Self.slot) + "/history").bytes).arrayValue ?? []
        for record in history where record["state"] == "version" {
            guard case .integer(let version)? = record["version"] else { continue }
            let stored = try api.request("GET", SyncAPI.slot("kape/p1", Self.slot) + "?version=\(version)")
            #expect(stored.status == 200 && .string(Self.hex(stored.bytes)) == record["sha256"], "version \(version) is whole")
            #expect((try? Codecs.json.decode(stored.bytes)) != nil)
        }
        let numbers = history.compactMap { record -> Int? in if case .integer(let n)? = record["version"], record["state"] == "version" { Int(n) } else { nil } }
        #expect(numbers.sorted() == Array(1...(numbers.max() ?? 1)), "versions 1 to the head, none missing")
    }
}
