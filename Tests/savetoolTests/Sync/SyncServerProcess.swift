import Foundation
import SaveHTTP
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `savetool serve`, started by a test on 127.0.0.1 (on a free port, or the port a
/// restarted server had), and stopped when the test lets go of it.
final class SyncServerProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    /// Where its access log goes.
    let logFile: String
    /// `https` when it was started with `--tls-cert`.
    let scheme: String
    var url: String { "\(scheme)://127.0.0.1:\(port)" }

    /// `limitBlocks`: the server runs under `ulimit -f` (512-byte blocks), so that writing a
    /// larger file fails as on a full disk.
    init(store: String, arguments: [String] = [], port: Int = 0, environment: [String: String]? = nil, limitBlocks: Int? = nil) throws {
        scheme = arguments.contains("--tls-cert") ? "https" : "http"
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let command = [CLI.executable, "serve", "--store", store, "--port", String(port)] + arguments
        if let limitBlocks {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -f \(limitBlocks) && exec \"$0\" \"$@\""] + command
        } else {
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
        }
        if let environment { process.environment = environment }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: logFile)
        try process.run()
        // The first line says where it listens.
        var line = Data()
        let deadline = Date().addingTimeInterval(30)
        let reader = stdout.fileHandleForReading
        while !line.contains(0x0A), Date() < deadline, process.isRunning {
            var pollable = pollfd(fd: reader.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&pollable, 1, 200) > 0 else { continue }
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let colon = text.lastIndex(of: ":"), let found = Int(text[text.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            throw StartFailure(description: "savetool serve did not start: \(text) \(log)")
        }
        self.port = found
    }

    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        unlink(logFile)
    }

    /// Kills it as a power cut would: no chance to finish anything.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// The server's resident memory, in KiB (from /proc).
    var residentKiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

/// Requests to a sync server through libcurl (the client `savetool sync` uses).
struct SyncAPI: Sendable {
    let base: String
    var token: String?
    var device: String?
    let connections: HTTPConnections

    init(_ base: String, token: String? = nil, device: String? = nil, trusting certificates: String? = nil) {
        (self.base, self.token, self.device) = (base, token, device)
        connections = HTTPConnections(idleTimeout: 30, totalTimeout: 120, trustedCertificates: certificates)
    }

    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> HTTPResponse {
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if let device { all.append(("Device-Id", device)) }
        let request = HTTPRequest(method: method, url: base + path, headers: all, body: Data(body), sendsBody: method == "PUT" || method == "POST")
        switch connections.perform(request) {
        case .success(let response): return response
        case .failure(let error): throw error
        }
    }

    static func slot(_ space: String, _ slot: String) -> String { "/v1/spaces/\(space)/slots/\(slot)" }

    func get(_ space: String, _ slot: String) throws -> HTTPResponse { try request("GET", Self.slot(space, slot)) }

    func push(_ space: String, _ slot: String, _ body: [UInt8], base: Int?) throws -> HTTPResponse {
        try request("PUT", Self.slot(space, slot), headers: [base.map { ("If-Match", "\"\($0)\"") } ?? ("If-None-Match", "*")], body: body)
    }
}

extension HTTPResponse {
    var version: Int? {
        guard let tag = header("ETag") else { return nil }
        return Int(tag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
    }

    var bytes: [UInt8] { Array(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
}
