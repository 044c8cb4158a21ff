import Foundation
import SaveKit
import SaveSync
import TestSupport
import Testing

/// Where a test's server keeps versions: a local folder, or a bucket of moto's S3 server.
enum SyncStore: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case local, s3
    var testDescription: String { rawValue }

    /// The `--store` argument and the environment the server needs.
    func make(in root: URL) throws -> (store: String, environment: [String: String]?) {
        switch self {
        case .local:
            let folder = root.appendingPathComponent("store")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return (folder.path, nil)
        case .s3:
            let moto = try MotoServer.shared()
            return ("s3://\(try moto.makeBucket())/sync", moto.variables)
        }
    }
}

/// The issue's seeds end to end: two device folders, `savetool sync` on each, against a real
/// `savetool serve`, on a local store and on S3.
@Suite("savetool sync: the seeds", .serialized)
struct SyncSeedTests {
    /// A device's save folder: the puzzle game's defaults (a JSON save inside a binary plist),
    /// a sudoku game, the location game's player defaults (kingdoms inside) and a tournament.
    struct Device {
        let root: URL
        let name: String
        let server: String

        init(_ root: URL, name: String, server: String, from other: Device? = nil) throws {
            (self.root, self.name, self.server) = (root, name, server)
            let files = [
                ("Library/Preferences/com.example.blocks.plist", CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist")),
                ("Documents/games/daily.json", CLI.sample("sudoku/Documents/games/v2-in-progress.json")),
                ("Library/Preferences/com.example.kingdoms.plist", CLI.kingdoms),
                ("Documents/current_tournament.json", CLI.tournament),
            ]
            for (relative, source) in files {
                try FileManager.default.createDirectory(at: root.appendingPathComponent(relative).deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: other?.file(relative) ?? source, toPath: file(relative))
            }
        }

        func file(_ relative: String) -> String { root.appendingPathComponent(relative).path }

        func set(_ relative: String, _ pointer: String, _ value: String) throws {
            let result = try CLI.run("set", file(relative), pointer, value)
            #expect(result.status == 0, "\(result.errors)")
        }

        func get(_ relative: String, _ pointer: String) throws -> String {
            try CLI.run("get", file(relative), pointer).outputText.trimmingCharacters(in: .newlines)
        }

        @discardableResult
        func sync(expecting status: Int32 = 0) throws -> ProcessResult {
            let result = try CLI.run("sync", root.path, "--server", server, "--space", "games/player-42", "--device", name)
            #expect(result.status == status, "\(name): \(result.outputText) \(result.errors)")
            return result
        }
    }

    /// A folder with a server on a local store and two devices, the tablet a copy of the
    /// phone, both synced once. The caller removes `root`.
    static func twoSyncedDevices(_ label: String) throws -> (root: URL, server: SyncServerProcess, phone: Device, tablet: Device) {
        let root = try Processes.temporaryDirectory(label)
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let phone = try Device(root.appendingPathComponent("phone"), name: "phone", server: server.url)
        try phone.sync()
        let tablet = try Device(root.appendingPathComponent("tablet"), name: "tablet", server: server.url, from: phone)
        try tablet.sync()
        return (root, server, phone, tablet)
    }

    static let blocks = "Library/Preferences/com.example.blocks.plist"
    static let sudoku = "Documents/games/daily.json"
    static let kingdoms = "Library/Preferences/com.example.kingdoms.plist"
    static let tournament = "Documents/current_tournament.json"

    @Test(arguments: SyncStore.allCases)
    func twoDevicesPlayOfflineThenSync(_ kind: SyncStore) throws {
        let root = try Processes.temporaryDirectory("sync-seeds")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, environment) = try kind.make(in: root)
        let server = try SyncServerProcess(store: store, environment: environment)
        let phone = try Device(root.appendingPathComponent("phone"), name: "phone", server: server.url)
        let first = try phone.sync()
        #expect(first.outputText.components(separatedBy: "pushed as the slot's first version").count == 5, "\(first.outputText)")
        // The tablet starts from the same saves: its first sync finds the slots, and joins them.
        let tablet = try Device(root.appendingPathComponent("tablet"), name: "tablet", server: server.url, from: phone)
        let joined = try tablet.sync()
        #expect(joined.outputText.components(separatedBy: "up to date (version 1)").count == 5, "\(joined.outputText)")

        let coins = Int(try phone.get(Self.blocks, "/gameSave/coins"))!
        // Played offline on both.
        #expect(try phone.get(Self.blocks, "/gameSave/player/level") == "31")
        try phone.set(Self.blocks, "/gameSave/player/level", "32")
        try phone.set(Self.blocks, "/gameSave/player/xp", "120")
        try phone.set(Self.blocks, "/gameSave/coins", String(coins + 30))
        try phone.set(Self.blocks, "/gameSave/unlockedThemes/-", #""lava""#)
        try tablet.set(Self.blocks, "/gameSave/player/xp", "99999")  // a lower level with more XP: never mixed with the phone's level
        try tablet.set(Self.blocks, "/gameSave/coins", String(coins - 15))
        try tablet.set(Self.blocks, "/gameSave/unlockedThemes/-", #""ocean""#)

        try tablet.set(Self.sudoku, "/completed", "true")
        try tablet.set(Self.sudoku, "/timer/elapsedSeconds", "200")
        try phone.set(Self.sudoku, "/timer/elapsedSeconds", "400")  // still in progress, played longer

        let castle = "/kingdoms_local_state/kingdoms/Arbëria/buildings/0"
        #expect(try phone.get(Self.kingdoms, castle + "/type") == #""castle""#)
        try phone.set(Self.kingdoms, castle + "/level", "4")  // upgraded on the phone
        try tablet.set(Self.kingdoms, "/kingdoms_local_state/kingdoms/Dardania/buildings/-", #"{"type": "tower", "level": 1}"#)
        try tablet.set(Self.kingdoms, "/kingdoms_local_state/savedAt", #""2026-11-23T10:00:00Z""#)

        try phone.set(Self.tournament, "/round", "3")
        try tablet.set(Self.tournament, "/players/0/score", "4")

        // The tablet syncs first; the phone later, then the tablet again to pull the result.
        try tablet.sync()
        let merged = try phone.sync()
        #expect(merged.outputText.contains("\(phone.file(Self.blocks)): merged with other devices' changes"), "\(merged.outputText)")
        try tablet.sync()

        for device in [phone, tablet] {
            // Puzzle game: the higher level with its own XP, themes united, coins from the base.
            #expect(try device.get(Self.blocks, "/gameSave/player/level") == "32", "\(device.name)")
            #expect(try device.get(Self.blocks, "/gameSave/player/xp") == "120", "\(device.name)")
            #expect(try device.get(Self.blocks, "/gameSave/coins") == String(coins + 30 - 15), "\(device.name): counted from the base, never doubled")
            let themes = try device.get(Self.blocks, "/gameSave/unlockedThemes")
            #expect(themes.contains("lava") && themes.contains("ocean"), "\(device.name): \(themes)")
            // Sudoku: the completed game wins whole, its time with it.
            #expect(try device.get(Self.sudoku, "/completed") == "true", "\(device.name)")
            #expect(try device.get(Self.sudoku, "/timer/elapsedSeconds") == "200", "\(device.name)")
            // Location game: the upgrade survives the other device's new kingdom data.
            #expect(try device.get(Self.kingdoms, castle + "/level") == "4", "\(device.name)")
            #expect(try device.get(Self.kingdoms, "/kingdoms_local_state/kingdoms/Dardania/buildings/2/type") == #""tower""#, "\(device.name)")
            // Tournament: the copy further along wins.
            #expect(try device.get(Self.tournament, "/round") == "3", "\(device.name)")
            #expect(try device.get(Self.tournament, "/players/0/score") == "3", "\(device.name): the other copy's score went with it")
            // Binary plists stay binary on the device.
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: device.file(Self.blocks))).prefix(8)) == Array("bplist00".utf8))
        }
        // Both devices hold the same bytes now, and a further sync changes nothing.
        for file in [Self.blocks, Self.sudoku, Self.kingdoms, Self.tournament] {
            #expect(FileManager.default.contentsEqual(atPath: phone.file(file), andPath: tablet.file(file)), "\(file)")
        }
        let again = try phone.sync()
        #expect(again.outputText.components(separatedBy: "up to date").count == 5, "\(again.outputText)")

        // The server's history says what each merge decided.
        let api = SyncAPI(server.url)
        let history = try api.request("GET", SyncAPI.slot("games/player-42", Self.blocks) + "/history")
        #expect(history.status == 200)
        let records = try Codecs.json.decode(history.bytes).arrayValue ?? []
        #expect(records.first?["how"] == "merged" && records.first?["device"] == "phone", "\(history.text.prefix(300))")
        let decisions = records.first?["decisions"]?.arrayValue ?? []
        #expect(decisions.contains { $0["pointer"] == "/gameSave/coins" && $0["policy"] == "counter" }, "\(decisions)")
    }

    /// A new device's empty folder gets every save of the space, each as its codec was pushed;
    /// a save deleted here after its sync is not brought back.
    @Test func aNewDevicesEmptyFolderGetsTheSpacesSaves() throws {
        let root = try Processes.temporaryDirectory("sync-new-device")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let phone = try Device(root.appendingPathComponent("phone"), name: "phone", server: server.url)
        try phone.sync()
        let laptop = root.appendingPathComponent("laptop")
        try FileManager.default.createDirectory(at: laptop, withIntermediateDirectories: false)
        let syncLaptop = { try CLI.run("sync", laptop.path, "--server", server.url, "--space", "games/player-42", "--device", "laptop") }
        let first = try syncLaptop()
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.outputText.components(separatedBy: ": pulled version 1").count == 5, "\(first.outputText)")
        for relative in [Self.blocks, Self.sudoku, Self.kingdoms, "Documents/current_tournament.json"] {
            #expect(try Data(contentsOf: laptop.appendingPathComponent(relative)) == Data(contentsOf: URL(fileURLWithPath: phone.file(relative))), "\(relative)")
        }
        let again = try syncLaptop()
        #expect(again.outputText.components(separatedBy: "up to date (version 1)").count == 5, "\(again.outputText)")
        try FileManager.default.removeItem(at: laptop.appendingPathComponent(Self.sudoku))
        let deleted = try syncLaptop()
        #expect(deleted.status == 0)
        #expect(deleted.outputText.contains("\(laptop.path)/\(Self.sudoku): deleted here since version 1; left deleted (the server keeps the slot)"))
        #expect(!FileManager.default.fileExists(atPath: laptop.appendingPathComponent(Self.sudoku).path))

        // A link leading out of the folder is refused before its file is read: it is never sent.
        let secret = root.appendingPathComponent("secret.json")
        try Data(#"{"token": "not for the server"}"#.utf8).write(to: secret)
        try FileManager.default.createSymbolicLink(atPath: laptop.appendingPathComponent("Documents/secret.json").path, withDestinationPath: secret.path)
        let refused = try syncLaptop()
        #expect(refused.status == 73, "\(refused.errors)")
        #expect(refused.errors.contains("Documents/secret.json: cannot create: a symbolic link leading out of \(laptop.path)"), "\(refused.errors)")
        // With --json, every file has its line on standard output: the one deleted here and the
        // one that failed too, not only on standard error.
        let json = try CLI.run("--json", "sync", laptop.path, "--server", server.url, "--space", "games/player-42", "--device", "laptop")
        #expect(json.status == 73, "\(json.errors)")
        let lines = json.outputText.split(separator: "\n").compactMap { try? Codecs.json.decode(Array($0.utf8)) }
        #expect(lines.count == 5, "\(json.outputText)")
        #expect(lines.contains { $0["file"]?.stringValue == "\(laptop.path)/\(Self.sudoku)" && $0["action"]?.stringValue == "deletedHere" && $0["version"] == .integer(1) }, "\(json.outputText)")
        #expect(lines.contains {
            $0["file"]?.stringValue?.hasSuffix("Documents/secret.json") == true && $0["action"]?.stringValue == "failed" && $0["exitCode"] == .integer(73)
                && $0["error"]?.stringValue?.contains("a symbolic link leading out of") == true
        }, "\(json.outputText)")
        let listed = try CLI.run("sync", phone.root.path, "--server", server.url, "--space", "games/player-42", "--device", "phone")
        #expect(!listed.outputText.contains("secret.json"), "the server never got it: \(listed.outputText)")
        #expect(!FileManager.default.fileExists(atPath: phone.file("Documents/secret.json")))
    }

    /// A proxy that, once `ARM` exists, holds the next PUT until told to let it go: the app
    /// saves while the push is out. (`HOLD` is made when the PUT arrives; `RELEASE`, made by
    /// the test, lets it on.) Once `ARM_ANSWER` exists, it passes the next PUT on and holds
    /// its answer instead (`HOLD` is made once the server answered). While `FAIL` exists,
    /// every other PUT is answered 503, and while `FORBID` exists, every PUT 403.
    static let holdingProxy = #"""
        import http.server, os, sys, time, urllib.request
        upstream, folder = sys.argv[1], sys.argv[2]
        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "PUT" and os.path.exists(folder + "/ARM") and not os.path.exists(folder + "/HOLD"):
                    open(folder + "/HOLD", "w").close()
                    while not os.path.exists(folder + "/RELEASE"): time.sleep(0.02)
                elif self.command == "PUT" and os.path.exists(folder + "/FORBID"):
                    self.send_response(403); self.send_header("Content-Length", "0"); self.end_headers()
                    return
                elif self.command == "PUT" and os.path.exists(folder + "/FAIL"):
                    self.send_response(503); self.send_header("Retry-After", "0"); self.send_header("Content-Length", "0"); self.end_headers()
                    return
                request = urllib.request.Request(upstream + self.path, data=body, method=self.command)
                for key, value in self.headers.items():
                    if key.lower() not in ("host", "content-length", "connection"): request.add_header(key, value)
                try:
                    answer = urllib.request.urlopen(request); status, headers, data = answer.status, answer.headers, answer.read()
                except urllib.error.HTTPError as error:
                    status, headers, data = error.code, error.headers, error.read()
                if self.command == "PUT" and os.path.exists(folder + "/ARM_ANSWER") and not os.path.exists(folder + "/HOLD"):
                    open(folder + "/HOLD", "w").close()
                    while not os.path.exists(folder + "/RELEASE"): time.sleep(0.02)
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"): self.send_header(key, value)
                self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
            do_GET = do_PUT = do_POST = handle_one
            def log_message(self, *arguments): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// The app saves again while a push is out, and the server merges and takes the push: the
    /// file is not overwritten, and its newer change is merged here with the server's copy and
    /// pushed on top of it. The change that was pushed is counted once, never twice.
    /// The set-up of the tests of a push held on its way: a server, the proxy above before it,
    /// and two synced devices, the phone's sync going through the proxy. The tablet took 30 of
    /// the 40 coins and synced; the phone found 25 since, not synced yet. The caller removes
    /// `root` and kills the proxy's process group.
    static func pushAboutToBeHeld(_ label: String) throws -> (root: URL, server: SyncServerProcess, proxy: Process, phone: Device, tablet: Device) {
        let root = try Processes.temporaryDirectory(label)
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let script = root.appendingPathComponent("proxy.py")
        try Data(Self.holdingProxy.utf8).write(to: script)
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        proxy.arguments = ["python3", script.path, server.url, root.path]
        let proxyOutput = Pipe()
        proxy.standardOutput = proxyOutput
        try proxy.run()
        let port = try #require(Int(String(decoding: proxyOutput.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        let phone = try Device(root.appendingPathComponent("phone"), name: "phone", server: "http://127.0.0.1:\(port)")
        try phone.sync()
        let tablet = try Device(root.appendingPathComponent("tablet"), name: "tablet", server: server.url, from: phone)
        try tablet.sync()
        #expect(try phone.get(Self.blocks, "/gameSave/coins") == "40")
        try tablet.set(Self.blocks, "/gameSave/coins", "10")  // -30
        try tablet.sync()
        try phone.set(Self.blocks, "/gameSave/coins", "65")  // +25
        return (root, server, proxy, phone, tablet)
    }

    /// Starts the phone's sync through the proxy once `arm` is made, and waits until the
    /// proxy holds it (only the blocks file changed: its push is the one held).
    static func startHeldSync(of phone: Device, root: URL, arm: String) throws -> (sync: Process, errors: Pipe) {
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent(arm).path, contents: nil)
        let sync = Process()
        sync.executableURL = URL(fileURLWithPath: CLI.executable)
        sync.arguments = ["sync", phone.root.path, "--server", phone.server, "--space", "games/player-42", "--device", "phone"]
        let errors = Pipe()
        sync.standardError = errors
        sync.standardOutput = FileHandle.nullDevice
        try sync.run()
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: root.appendingPathComponent("HOLD").path), Date() < deadline { usleep(20_000) }
        return (sync, errors)
    }

    @Test(arguments: [false, true])
    func aSaveDuringAPushIsMergedOnTopNotCountedTwice(_ followUpFails: Bool) throws {
        let (root, server, proxy, phone, tablet) = try Self.pushAboutToBeHeld("sync-race")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { kill(-proxy.processIdentifier, SIGKILL) }
        defer { withExtendedLifetime(server) {} }
        let (sync, errors) = try Self.startHeldSync(of: phone, root: root, arm: "ARM")
        try phone.set(Self.blocks, "/hasSeenTutorial", "false")  // the app saves meanwhile
        // The push of the merge made here fails (the server is down a moment): the sync says
        // so (75), and remembers the merge, so that the next sync pushes it from its new base.
        if followUpFails { _ = FileManager.default.createFile(atPath: root.appendingPathComponent("FAIL").path, contents: nil) }
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("RELEASE").path, contents: nil)
        sync.waitUntilExit()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(sync.terminationStatus == (followUpFails ? 75 : 0), "\(said)")
        if followUpFails {
            try FileManager.default.removeItem(at: root.appendingPathComponent("FAIL"))
            try phone.sync()
        }

        // Merged here (the push's +25 and the tablet's -30), the app's save kept, and pushed.
        #expect(try phone.get(Self.blocks, "/gameSave/coins") == "35")
        #expect(try phone.get(Self.blocks, "/hasSeenTutorial") == "false")
        try phone.sync()
        try tablet.sync()
        #expect(try tablet.get(Self.blocks, "/gameSave/coins") == "35", "never 60: the +25 counted once")
        #expect(try tablet.get(Self.blocks, "/hasSeenTutorial") == "false")
        let bases = (try? FileManager.default.contentsOfDirectory(atPath: phone.root.appendingPathComponent(".savetool-sync/bases").path)) ?? []
        #expect(bases.isEmpty, "no pending base is left once merged: \(bases)")
    }

    /// A device whose app writes XML plists, where another writes binary ones with a fraction of
    /// a second in a date, which XML cannot hold: the fraction is dropped where an XML plist is
    /// written (as the app's own writer drops it), and nothing is stuck or lost.
    @Test func anXMLPlistDeviceTakesADateWithAFractionFromABinaryOne() throws {
        let root = try Processes.temporaryDirectory("sync-fraction")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let phone = root.appendingPathComponent("phone"), tablet = root.appendingPathComponent("tablet")
        for device in [phone, tablet] { try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true) }
        let name = "com.example.kingdoms.plist"
        try FileManager.default.copyItem(atPath: CLI.kingdoms, toPath: phone.appendingPathComponent(name).path)
        #expect(try CLI.run("convert", CLI.kingdoms, "--to", "plist", "-o", tablet.appendingPathComponent(name).path).status == 0)
        func sync(_ device: URL) throws -> ProcessResult {
            try CLI.run("sync", device.path, "--server", server.url, "--space", "kingdom/drita", "--device", device.lastPathComponent)
        }
        for device in [phone, tablet] { #expect(try sync(device).status == 0) }
        #expect(try CLI.run("set", phone.appendingPathComponent(name).path, "/cooldowns/raid", #"{"$date": "2026-11-21T07:30:00.5Z"}"#).status == 0)
        #expect(try sync(phone).status == 0)
        let pulled = try sync(tablet)
        #expect(pulled.status == 0, "\(pulled.errors)")
        #expect(try CLI.run("get", tablet.appendingPathComponent(name).path, "/cooldowns/raid").outputText == "{\"$date\": \"2026-11-21T07:30:00Z\"}\n")
        // Changed on the tablet since: merged with the binary head, written as XML.
        #expect(try CLI.run("set", tablet.appendingPathComponent(name).path, "/gold", "5000").status == 0)
        #expect(try CLI.run("set", phone.appendingPathComponent(name).path, "/level", "10").status == 0)
        #expect(try sync(phone).status == 0)
        let merged = try sync(tablet)
        #expect(merged.status == 0 && merged.outputText.contains("merged with other devices' changes"), "\(merged.outputText) \(merged.errors)")
        #expect(try sync(phone).status == 0)
        for device in [phone, tablet] {
            #expect(try CLI.run("get", device.appendingPathComponent(name).path, "/gold").outputText == "5000\n", "\(device.lastPathComponent)")
            #expect(try CLI.run("get", device.appendingPathComponent(name).path, "/level").outputText == "10\n", "\(device.lastPathComponent)")
        }
        #expect(try Data(contentsOf: tablet.appendingPathComponent(name)).starts(with: Data("<?xml".utf8)), "the tablet keeps XML")
    }

    /// A sync killed after the server took its push, before it learnt so; the app then saves
    /// again. The next sync sends the push again first (the server answers with what it made of
    /// it), then merges the newer save on top: the push's +25 counted once.
    @Test func aSyncKilledBeforeItsAnswerSendsThePushAgainNotItsLaterSave() throws {
        let (root, server, proxy, phone, tablet) = try Self.pushAboutToBeHeld("sync-killed")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { kill(-proxy.processIdentifier, SIGKILL) }
        defer { withExtendedLifetime(server) {} }
        let (sync, _) = try Self.startHeldSync(of: phone, root: root, arm: "ARM_ANSWER")
        kill(sync.processIdentifier, SIGKILL)
        sync.waitUntilExit()
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("RELEASE").path, contents: nil)
        #expect(try SyncAPI(server.url).get("games/player-42", Self.blocks).version == 3, "the server took the push")
        // A sync refused meanwhile (a token revoked a moment) proves nothing of the first
        // sending: the push stays in flight.
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("FORBID").path, contents: nil)
        try phone.sync(expecting: 77)
        try FileManager.default.removeItem(at: root.appendingPathComponent("FORBID"))
        try phone.set(Self.blocks, "/gameSave/coins", "70")  // +5 more
        try phone.set(Self.blocks, "/hasSeenTutorial", "false")
        try phone.sync()
        try tablet.sync()
        for device in [phone, tablet] {
            #expect(try device.get(Self.blocks, "/gameSave/coins") == "40", "\(device.name): 40 - 30 + 25 + 5, never 65")
            #expect(try device.get(Self.blocks, "/hasSeenTutorial") == "false", "\(device.name)")
        }
    }

    /// A push left in flight (the server answered 503), then the app saved again elsewhere in
    /// the file: the push sent again is taken, the new save is merged with it here and pushed in
    /// its turn, and the line says so (not "merged with other devices' changes": no other
    /// device was involved, and the server's history has no merge of it).
    @Test func aSaveMadeWhileAPushWasInFlightIsMergedHereAndSaidSo() throws {
        let (root, server, proxy, phone, _) = try Self.pushAboutToBeHeld("sync-inflight-merge")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { kill(-proxy.processIdentifier, SIGKILL) }
        defer { withExtendedLifetime(server) {} }
        try phone.sync()
        try phone.set(Self.kingdoms, "/player_name", #""Drita P1""#)
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("FAIL").path, contents: nil)
        try phone.sync(expecting: 75)
        try FileManager.default.removeItem(at: root.appendingPathComponent("FAIL"))
        try phone.set(Self.kingdoms, "/gold", "4321")
        let merged = try CLI.run("sync", phone.root.path, "--server", phone.server, "--space", "games/player-42", "--device", "phone")
        #expect(merged.status == 0, "\(merged.outputText) \(merged.errors)")
        #expect(merged.outputText.contains("\(phone.file(Self.kingdoms)): saved again while it synced; its new changes merged here with the server's copy ("), "\(merged.outputText)")
        #expect(!merged.outputText.contains("other devices"), "\(merged.outputText)")
        #expect(try phone.get(Self.kingdoms, "/player_name") == #""Drita P1""#)
        #expect(try phone.get(Self.kingdoms, "/gold") == "4321")
    }

    /// A push left in flight (the server answered 503), then the app saved again, then the
    /// other device changed the same place: the push sent again is parked, the file as it is now
    /// is pushed in its turn, and --take-server settles it, all in one run.
    @Test func aConflictAfterAPushInFlightIsSettledInOneRun() throws {
        let (root, server, proxy, phone, tablet) = try Self.pushAboutToBeHeld("sync-inflight-conflict")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { kill(-proxy.processIdentifier, SIGKILL) }
        defer { withExtendedLifetime(server) {} }
        try phone.sync()  // the coins first: only the kingdom's push is left in flight below
        try phone.set(Self.kingdoms, "/player_name", #""Drita P1""#)
        _ = FileManager.default.createFile(atPath: root.appendingPathComponent("FAIL").path, contents: nil)
        try phone.sync(expecting: 75)
        try FileManager.default.removeItem(at: root.appendingPathComponent("FAIL"))
        try tablet.set(Self.kingdoms, "/player_name", #""Drita T""#)
        try tablet.sync()
        try phone.set(Self.kingdoms, "/player_name", #""Drita P2""#)
        let settled = try CLI.run("sync", phone.root.path, "--server", phone.server, "--space", "games/player-42", "--device", "phone", "--take-server")
        #expect(settled.status == 0, "\(settled.outputText) \(settled.errors)")
        #expect(settled.outputText.contains("\(phone.file(Self.kingdoms)): conflict settled by taking version"), "\(settled.outputText)")
        #expect(try phone.get(Self.kingdoms, "/player_name") == #""Drita T""#)
        let history = try Codecs.json.decode(try SyncAPI(server.url).request("GET", SyncAPI.slot("games/player-42", Self.kingdoms) + "/history").bytes).arrayValue ?? []
        #expect(history.filter { $0["state"]?.stringValue == "parked" }.count == 2, "both copies kept: \(history.map { "\($0["state"]?.stringValue ?? "") \($0["device"]?.stringValue ?? "") \($0["base"]?.compactText ?? "")" }) \(settled.outputText) \(settled.errors)")
    }

    /// A sync stopped after it wrote the merged answer, before it remembered it: the file holds
    /// the server's head, and its state the older base. Pushed again from that base, the
    /// tablet's -30 and the phone's +25 would count twice; the server knows the head's bytes.
    @Test func aSyncStoppedBeforeItRememberedItsAnswerCountsNothingTwice() throws {
        let (root, server, phone, tablet) = try Self.twoSyncedDevices("sync-unremembered")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { withExtendedLifetime(server) {} }
        try tablet.set(Self.blocks, "/gameSave/coins", "10")  // -30
        try tablet.sync()
        try phone.set(Self.blocks, "/gameSave/coins", "65")  // +25
        let state = phone.root.appendingPathComponent(".savetool-sync/state.json")
        let remembered = try Data(contentsOf: state)
        let merged = try phone.sync()
        #expect(merged.outputText.contains("merged with other devices' changes, version 3 written here"), "\(merged.outputText)")
        try remembered.write(to: state)  // as if stopped before the state was saved
        try phone.sync()
        try tablet.sync()
        for device in [phone, tablet] { #expect(try device.get(Self.blocks, "/gameSave/coins") == "35", "\(device.name): 40 - 30 + 25") }
        let history = try Codecs.json.decode(try SyncAPI(server.url).request("GET", SyncAPI.slot("games/player-42", Self.blocks) + "/history").bytes).arrayValue ?? []
        #expect(history.count == 3, "nothing new stored: \(history.count) versions")
    }

    /// A merge whose result is this very file (each place changed on both sides kept as here)
    /// is still said to be a merge, with its decisions, not a plain push.
    @Test func aMergeThatKeepsThisFileIsSaidToBeOne() throws {
        let (root, server, phone, tablet) = try Self.twoSyncedDevices("sync-kept")
        defer { try? FileManager.default.removeItem(at: root) }
        defer { withExtendedLifetime(server) {} }
        try phone.set(Self.blocks, "/musicVolume", "0.1")
        try phone.sync()
        try tablet.set(Self.blocks, "/musicVolume", "0.9")
        let result = try tablet.sync()
        #expect(result.outputText.contains("\(tablet.file(Self.blocks)): merged with other devices' changes, version 3, which is this file as it is (1 decision"), "\(result.outputText)")
        #expect(try tablet.get(Self.blocks, "/musicVolume") == "0.9")
    }

    /// A save of an older version is migrated by the server before it is stored, and the
    /// migrated copy written here: sync says so, rather than "pushed" alone.
    @Test func aPushTheServerMigratedIsSaidToBeOne() throws {
        let root = try Processes.temporaryDirectory("sync-migrated")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let file = root.appendingPathComponent("daily.json").path
        try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v1-in-progress.json"), toPath: file)
        let synced = try CLI.run("sync", file, "--server", server.url, "--space", "sudoku/p1", "--slot", "Documents/games/daily.json")
        #expect(synced.status == 0, "\(synced.errors)")
        #expect(synced.outputText == "\(file): pushed as the slot's first version; the server migrated it (sudoku.game version 1 to 2), written here\n", "\(synced.outputText)")
        #expect(try CLI.run("get", file, "/version").outputText == "2\n")
        // A holder whose own version stays names the embedded save that moved, not "version 1".
        let blocks = root.appendingPathComponent("blocks").path
        try FileManager.default.createDirectory(atPath: blocks, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: CLI.sample("blocks/Library/Preferences/com.example.blocks.plist"), toPath: blocks + "/com.example.blocks.plist")
        let held = try CLI.run("sync", blocks + "/com.example.blocks.plist", "--server", server.url, "--space", "blocks/p1", "--slot", "Library/Preferences/com.example.blocks.plist")
        #expect(held.status == 0, "\(held.errors)")
        #expect(held.outputText == "\(blocks)/com.example.blocks.plist: pushed as the slot's first version; the server migrated it (blocks.defaults /gameSave: blocks.gamesave 1→2), written here\n", "\(held.outputText)")
    }

    /// A sync that fails on a mistyped server (no such host) leaves what the file remembers of
    /// its own server as it was: the next sync there is up to date, not a merge without a base.
    @Test func aFailedSyncElsewhereForgetsNothing() throws {
        let root = try Processes.temporaryDirectory("sync-typo")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let file = root.appendingPathComponent("current_tournament.json").path
        try FileManager.default.copyItem(atPath: CLI.tournament, toPath: file)
        #expect(try CLI.run("sync", file, "--server", server.url, "--space", "games/p1").status == 0)
        let typo = try CLI.run("sync", file, "--server", "http://no-such-host.invalid:8080", "--space", "games/p1")
        #expect(typo.status == 75 || typo.status == 74, "\(typo.errors)")
        let state = try Codecs.json.decode(Array(try Data(contentsOf: root.appendingPathComponent(".savetool-sync/state.json"))))
        #expect(state["files"]?["current_tournament.json"]?["server"]?.stringValue == server.url, "\(state)")
        #expect(state["files"]?["current_tournament.json"]?["version"] == 1, "\(state)")
        let again = try CLI.run("sync", file, "--server", server.url, "--space", "games/p1")
        #expect(again.status == 0 && again.errors.isEmpty, "\(again.errors)")
        #expect(again.outputText.contains("up to date (version 1)"), "\(again.outputText)")
    }

    /// Without --device, two copies of a folder on one machine are two devices (the host name
    /// and each folder's own mark), so that the server never takes one's push for the other's.
    @Test func copiesOfAFolderAreDevicesOfTheirOwn() throws {
        let root = try Processes.temporaryDirectory("sync-device-mark")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        var devices: [String] = []
        for name in ["one", "two"] {
            let folder = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: CLI.tournament, toPath: folder.appendingPathComponent("Documents/current_tournament.json").path)
            let synced = try CLI.run("sync", folder.path, "--server", server.url, "--space", "kape/p1")
            #expect(synced.status == 0, "\(synced.errors)")
            let mark = try Self.deviceMark(of: folder)
            #expect(mark.count == 8 && mark.allSatisfy(\.isHexDigit), "\(mark)")
            devices.append(ProcessInfo.processInfo.hostName + "-" + mark)
        }
        #expect(devices[0] != devices[1])
        #expect(try CLI.run("set", root.appendingPathComponent("two/Documents/current_tournament.json").path, "/round", "3").status == 0)
        #expect(try CLI.run("sync", root.appendingPathComponent("two").path, "--server", server.url, "--space", "kape/p1").status == 0)
        let history = try Codecs.json.decode(try SyncAPI(server.url).request("GET", SyncAPI.slot("kape/p1", "Documents/current_tournament.json") + "/history").bytes).arrayValue ?? []
        #expect(Set(history.compactMap { $0["device"]?.stringValue }) == [devices[0], devices[1]], "\(history)")
    }

    static func deviceMark(of folder: URL) throws -> String {
        String(try String(contentsOf: folder.appendingPathComponent(".savetool-sync/device-id"), encoding: .utf8).prefix(8))
    }

    /// A folder copied with its sync state (`cp -a`, a QA farm cloning a device) is a device of
    /// its own: two equal pushes, the original's and the copy's, both count. The copy kept the
    /// original's mark, and its push was taken for the original's sent again: coins +10, not +20.
    @Test func aCopiedFolderIsAnotherDevice() throws {
        let root = try Processes.temporaryDirectory("sync-copied-folder")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let tablet = root.appendingPathComponent("tablet"), copy = root.appendingPathComponent("copy")
        let blocks = tablet.appendingPathComponent(Self.blocks)
        try FileManager.default.createDirectory(at: blocks.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.sample("blocks-2026/" + Self.blocks), toPath: blocks.path)
        func sync(_ folder: URL) throws -> ProcessResult {
            let result = try CLI.run("sync", folder.path, "--server", server.url, "--space", "games/p1")
            #expect(result.status == 0, "\(result.outputText)\(result.errors)")
            return result
        }
        _ = try sync(tablet)
        #expect(try Processes.run(["cp", "-a", tablet.path, copy.path]).status == 0)
        let coins = Int(try CLI.run("get", blocks.path, "/gameSave/coins").outputText.trimmingCharacters(in: .newlines))!
        for folder in [tablet, copy] {
            #expect(try CLI.run("set", folder.appendingPathComponent(Self.blocks).path, "/gameSave/coins", String(coins + 10)).status == 0)
        }
        _ = try sync(tablet)
        let merged = try sync(copy)
        #expect(merged.outputText.contains("merged"), "\(merged.outputText)")
        #expect(try Self.deviceMark(of: tablet) != Self.deviceMark(of: copy), "the copy made a mark of its own at its first sync")
        _ = try sync(tablet)
        #expect(try CLI.run("get", blocks.path, "/gameSave/coins").outputText == "\(coins + 20)\n")
        // The original keeps its mark, sync after sync, and moved within its file system too.
        let mark = try Self.deviceMark(of: tablet)
        _ = try sync(tablet)
        #expect(try Self.deviceMark(of: tablet) == mark)
        let moved = root.appendingPathComponent("moved")
        try FileManager.default.moveItem(at: tablet, to: moved)
        _ = try sync(moved)
        #expect(try Self.deviceMark(of: moved) == mark)
        // A mark an earlier savetool wrote (the mark alone) is kept, and written with its folder.
        let markFile = moved.appendingPathComponent(".savetool-sync/device-id")
        try Data("0badc0de\n".utf8).write(to: markFile)
        _ = try sync(moved)
        let written = try String(contentsOf: markFile, encoding: .utf8)
        #expect(written.hasPrefix("0badc0de ") && written.split(separator: " ").count == 2, "\(written)")
    }

    /// A push whose answer was lost is sent again as the device it was first sent as: the state
    /// keeps that name beside the push, whatever the device is called by the next run.
    @Test func aPushInFlightKeepsItsDevice() throws {
        let root = try Processes.temporaryDirectory("sync-in-flight-device")
        defer { try? FileManager.default.removeItem(at: root) }
        var state = try SyncState(folder: root.path)
        try state.prepare()
        state.entries["a.json"] = SyncState.Entry(
            server: "http://127.0.0.1:1", space: "s/p", slot: "a.json", version: 3, sha256: "", inFlight: Array("{}".utf8), inFlightDevice: "qa-01-0badc0de")
        try state.save()
        let read = try SyncState(folder: root.path)
        #expect(read.entries["a.json"]?.inFlightDevice == "qa-01-0badc0de")
        #expect(read.entries["a.json"]?.inFlight == Array("{}".utf8))
    }

    /// A file that a folder sync remembers, synced alone, merges against the base that folder
    /// sync left: its coins counted from it (without it, the counter changed on both sides was
    /// a conflict, and a deleted value came back).
    @Test func aFileSyncedAloneKeepsItsFoldersBase() throws {
        let (root, server, phone, tablet) = try Self.twoSyncedDevices("sync-alone")
        defer { try? FileManager.default.removeItem(at: root) }
        let coins = Int(try phone.get(Self.blocks, "/gameSave/coins")) ?? 0
        try phone.set(Self.blocks, "/gameSave/coins", String(coins + 10))
        try tablet.set(Self.blocks, "/gameSave/coins", String(coins + 5))
        try tablet.sync()
        let alone = try CLI.run("sync", phone.file(Self.blocks), "--server", server.url, "--space", "games/player-42", "--slot", Self.blocks, "--device", "phone")
        #expect(alone.status == 0, "\(alone.outputText)\(alone.errors)")
        #expect(try phone.get(Self.blocks, "/gameSave/coins") == String(coins + 15))
        #expect(!FileManager.default.fileExists(atPath: phone.file("Library/Preferences/.savetool-sync")), "the folder's state, not one of its own")
        // The folder's sync goes on from there: nothing to push, nothing counted twice.
        try phone.sync()
        #expect(try phone.get(Self.blocks, "/gameSave/coins") == String(coins + 15))
        // Without --slot, the slot the folder's sync gave it: by its name alone it became a
        // second slot, which the next folder sync pulled in as a second copy.
        let slots = try Codecs.json.decode(try SyncAPI(server.url).request("GET", "/v1/spaces/games/player-42/slots").bytes).arrayValue?.count
        #expect(slots != nil && slots! > 0)
        try phone.set(Self.blocks, "/gameSave/coins", String(coins + 20))
        let noSlot = try CLI.run("sync", phone.file(Self.blocks), "--server", server.url, "--space", "games/player-42", "--device", "phone")
        #expect(noSlot.status == 0 && noSlot.outputText.contains("pushed"), "\(noSlot.outputText)\(noSlot.errors)")
        #expect(try Codecs.json.decode(try SyncAPI(server.url).request("GET", "/v1/spaces/games/player-42/slots").bytes).arrayValue?.count == slots)
        try tablet.sync()
        #expect(try tablet.get(Self.blocks, "/gameSave/coins") == String(coins + 20))
    }

    /// A file remembers one slot: synced as another, it says that it starts over.
    @Test func anotherSlotForAFileIsSaid() throws {
        let root = try Processes.temporaryDirectory("sync-slot")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let file = root.appendingPathComponent("current_tournament.json").path
        try FileManager.default.copyItem(atPath: CLI.tournament, toPath: file)
        #expect(try CLI.run("sync", file, "--server", server.url, "--space", "games/p1", "--slot", "a.json").status == 0)
        let other = try CLI.run("sync", file, "--server", server.url, "--space", "games/p1", "--slot", "b.json")
        #expect(other.status == 0, "\(other.errors)")
        #expect(other.errors.contains("last synced as a.json in games/p1 on \(server.url); as b.json in games/p1 on \(server.url) it starts over"), "\(other.errors)")
    }

    /// Where sync cannot remember what it synced, it pushes nothing: a push the server took
    /// but the device forgot would come back as a conflict with itself.
    @Test func nothingIsPushedThatCannotBeRemembered() throws {
        let root = try Processes.temporaryDirectory("sync-state")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store)
        let device = root.appendingPathComponent("device")
        try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.tournament, toPath: device.appendingPathComponent("current_tournament.json").path)
        try Data("not a folder".utf8).write(to: device.appendingPathComponent(".savetool-sync"))
        let result = try CLI.run("sync", device.appendingPathComponent("current_tournament.json").path, "--server", server.url, "--space", "games/p1")
        #expect(result.status == 73, "\(result.errors)")
        #expect(result.errors.contains(".savetool-sync: a file, expected a folder where sync can remember what it synced"), "\(result.errors)")
        #expect(try SyncAPI(server.url).get("games/p1", "current_tournament.json").status == 404, "nothing pushed")
    }

    /// A conflict: the device's file is left as it was, the exit code is 1, and the server
    /// keeps the push (parked) without serving it.
    @Test func aConflictLeavesTheFileAndParksThePush() throws {
        let (root, server, phone, tablet) = try Self.twoSyncedDevices("sync-conflict")
        defer { try? FileManager.default.removeItem(at: root) }
        // The player's name has no rule (ask): changed on both, it is a conflict.
        try phone.set(Self.kingdoms, "/player_name", #""Drita P""#)
        try tablet.set(Self.kingdoms, "/player_name", #""Drita T""#)
        try tablet.sync()
        let before = try Data(contentsOf: URL(fileURLWithPath: phone.file(Self.kingdoms)))
        let result = try phone.sync(expecting: 1)
        #expect(result.errors.contains("conflict with version 2 on the server; the file is left as it was"), "\(result.errors)")
        #expect(result.errors.contains(#"/player_name: here "Drita P", on the server "Drita T", before "Drita""#), "\(result.errors)")
        // A line for each conflicting place, under the file's line.
        #expect(result.errors.split(separator: "\n").contains { $0.hasPrefix(#"  /player_name: here "Drita P""#) }, "\(result.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: phone.file(Self.kingdoms))) == before)
        let api = SyncAPI(server.url)
        let head = try api.get("games/player-42", Self.kingdoms)
        #expect(head.version == 2)
        let history = try Codecs.json.decode(try api.request("GET", SyncAPI.slot("games/player-42", Self.kingdoms) + "/history").bytes).arrayValue ?? []
        #expect(history.map { $0["state"]?.stringValue ?? "" }.sorted() == ["parked", "version", "version"])

        // Synced again before the conflict is settled (an hourly job): the same answer, and the
        // push is kept once, not once per sync.
        let parkedName = history.first { $0["state"]?.stringValue == "parked" }?["parked"]?.stringValue
        // Its open conflict has no result: the local value only stood in for it.
        let conflicts = (history.first { $0["state"]?.stringValue == "parked" }?["decisions"]?.arrayValue ?? []).filter { $0["conflict"] == true }
        #expect(!conflicts.isEmpty && conflicts.allSatisfy { $0["result"] == nil && $0["local"] != nil }, "\(conflicts)")
        // The parked copy is read by its name, to settle by hand; it is no version to base a push on.
        let slot = SyncAPI.slot("games/player-42", Self.kingdoms)
        let parked = try api.request("GET", slot + "?version=" + (parkedName ?? "none"))
        #expect(parked.status == 200 && parked.bytes == Array(before), "\(parked.status) \(parked.text.prefix(200))")
        #expect(parked.header("ETag") == nil && parked.header("Save-Parked") == parkedName)
        #expect(try api.request("GET", slot + "?version=p1-zz").status == 400)
        #expect(try api.request("GET", slot + "?version=p1-ab").status == 404)
        for _ in 0..<2 {
            let again = try phone.sync(expecting: 1)
            #expect(again.errors.contains("conflict with version 2 on the server; the file is left as it was"), "\(again.errors)")
            #expect(parkedName.map { again.errors.contains("(the server keeps the push as \($0))") } == true, "\(again.errors)")
        }
        let after = try Codecs.json.decode(try api.request("GET", SyncAPI.slot("games/player-42", Self.kingdoms) + "/history").bytes).arrayValue ?? []
        #expect(after.map { $0["state"]?.stringValue ?? "" }.sorted() == ["parked", "version", "version"])
        // Once the head moves on, the same push is a new conflict, parked again.
        try tablet.set(Self.kingdoms, "/player_name", #""Drita T2""#)
        try tablet.sync()
        _ = try phone.sync(expecting: 1)
        let moved = try Codecs.json.decode(try api.request("GET", SyncAPI.slot("games/player-42", Self.kingdoms) + "/history").bytes).arrayValue ?? []
        #expect(moved.map { $0["state"]?.stringValue ?? "" }.sorted() == ["parked", "parked", "version", "version", "version"])

        // The player takes the other device's copy: written here once the server keeps this one.
        let taken = try CLI.run("sync", phone.root.path, "--server", phone.server, "--space", "games/player-42", "--device", "phone", "--take-server")
        #expect(taken.status == 0, "\(taken.errors)")
        #expect(taken.outputText.contains("\(phone.file(Self.kingdoms)): conflict settled by taking version 3 from the server; this copy is kept there as p"), "\(taken.outputText)")
        #expect(try phone.get(Self.kingdoms, "/player_name") == #""Drita T2""#)
        try phone.sync()
        #expect(try phone.sync().outputText.contains("\(phone.file(Self.kingdoms)): up to date (version 3)"))
    }
}
