import Foundation
import SaveHTTP
import SaveKit
import TestSupport
import Testing

/// `savetool serve --tls-cert`: HTTPS in the server itself, reached by libcurl (the client
/// `savetool sync` uses) and by `savetool sync --cacert`, with the test certificate of
/// `Fixtures/tls` (self-signed for 127.0.0.1).
@Suite("savetool serve over TLS", .serialized)
struct SyncTLSTests {
    static let folder = Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/tls")
    static let certificate = folder.appendingPathComponent("server-cert.pem").path
    static let key = folder.appendingPathComponent("server-key.pem").path

    @Test func pushesAndSyncsGoOverHTTPS() throws {
        let root = try Processes.temporaryDirectory("sync-tls")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let server = try SyncServerProcess(store: store, arguments: ["--tls-cert", Self.certificate, "--tls-key", Self.key])
        #expect(server.url.hasPrefix("https://127.0.0.1:"))

        let api = SyncAPI(server.url, device: "phone", trusting: Self.certificate)
        #expect(try api.request("GET", "/healthz").status == 200)
        let created = try api.push("kape/player-1", "tournament.json", SyncServerTests.save, base: nil)
        #expect(created.status == 201 || created.status == 200, "\(created.status) \(String(decoding: created.body, as: UTF8.self))")
        #expect(try api.get("kape/player-1", "tournament.json").bytes == SyncServerTests.save)

        // Without the certificate trusted, the handshake fails: no answer at all.
        let untrusting = SyncAPI(server.url)
        #expect(throws: HTTPConnections.Untrusted.self) { try untrusting.request("GET", "/healthz") }
        // Plain HTTP to the TLS port gets no HTTP answer either.
        let plain = SyncAPI(server.url.replacingOccurrences(of: "https://", with: "http://"))
        let answer = try? plain.request("GET", "/healthz")
        #expect(answer == nil || answer!.status >= 400, "\(answer?.status ?? 0)")

        // The client: --cacert trusts the server's own certificate.
        let device = root.appendingPathComponent("tablet")
        try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
        let file = device.appendingPathComponent("tournament.json").path
        try Data(SyncServerTests.save).write(to: URL(fileURLWithPath: file))
        let synced = try CLI.run("sync", file, "--server", server.url, "--space", "kape/player-2", "--cacert", Self.certificate)
        #expect(synced.status == 0, "\(synced.errors)")
        #expect(try api.get("kape/player-2", "tournament.json").status == 200)
        // Without it, the system's CAs do not know a self-signed certificate: refused at once
        // (not retried as an outage), with libcurl's reason and the option that helps.
        let refused = try CLI.run("sync", file, "--server", server.url, "--space", "kape/player-3")
        #expect(refused.status == 77)
        #expect(refused.errors.contains("self-signed") && refused.errors.contains("--cacert") && !refused.errors.contains("tried"), "\(refused.errors)")
        #expect(try api.get("kape/player-3", "tournament.json").status == 404)
        // A folder stops at the first such refusal: every other file would meet the same.
        try Data(SyncServerTests.save).write(to: device.appendingPathComponent("second.json"))
        let folder = try CLI.run("sync", device.path, "--server", server.url, "--space", "kape/player-4")
        #expect(folder.status == 77)
        #expect(folder.errors.components(separatedBy: "not trusted").count == 2, "one refusal: \(folder.errors)")
        // A --cacert that is not PEM is that file's fault (65), and one that is a folder cannot be read (66).
        let notPEM = root.appendingPathComponent("not.pem").path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: notPEM))
        let badFile = try CLI.run("sync", file, "--server", server.url, "--space", "kape/player-5", "--cacert", notPEM)
        #expect(badFile.status == 65 && badFile.errors.contains(notPEM), "\(badFile.status) \(badFile.errors)")
        let aFolder = try CLI.run("sync", file, "--server", server.url, "--space", "kape/player-5", "--cacert", root.path)
        #expect(aFolder.status == 66 && aFolder.errors.contains(root.path), "\(aFolder.status) \(aFolder.errors)")
        #expect(try api.get("kape/player-5", "tournament.json").status == 404)
    }

    @Test func certificatesAndKeysAreCheckedBeforeAnythingListens() throws {
        let root = try Processes.temporaryDirectory("sync-tls-bad")
        defer { try? FileManager.default.removeItem(at: root) }
        let (store, _) = try SyncStore.local.make(in: root)
        let other = Self.folder.appendingPathComponent("other-key.pem").path
        let notPEM = root.appendingPathComponent("cert.pem").path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: notPEM))
        let missing = root.appendingPathComponent("missing.pem").path
        let cases: [(arguments: [String], status: Int32, names: String)] = [
            (["--tls-cert", Self.certificate], 64, "--tls-key"),
            (["--tls-key", Self.key], 64, "--tls-cert"),
            (["--tls-cert", Self.certificate, "--tls-key", other], 65, other),
            (["--tls-cert", notPEM, "--tls-key", Self.key], 65, notPEM),
            (["--tls-cert", missing, "--tls-key", Self.key], 66, missing),
        ]
        for (arguments, status, names) in cases {
            let result = try Processes.run([CLI.executable, "serve", "--store", store, "--port", "0"] + arguments)
            #expect(result.status == status, "\(arguments): \(result.status) \(result.errors)")
            #expect(result.errors.contains(names), "\(arguments): \(result.errors)")
            #expect(!result.outputText.contains("listening"), "\(arguments)")
        }
    }
}
