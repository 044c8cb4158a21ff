import CSaveHTTP
import Foundation
import SaveKit

/// One HTTP request, ready to send.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// Sent in this order (a signature may cover them).
    public var headers: [(String, String)]
    public var body: Data
    /// Whether to send `body` (and a length) even when it is empty: a PUT of nothing does.
    public var sendsBody: Bool

    public init(method: String, url: String, headers: [(String, String)] = [], body: Data = Data(), sendsBody: Bool? = nil) {
        (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
        self.sendsBody = sendsBody ?? !body.isEmpty
    }
}

/// An HTTP answer, read whole.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) { (self.status, self.headers, self.body) = (status, headers, body) }

    /// A header's value, whatever the case of its name.
    public func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
}

/// HTTP/1.1 through libcurl, loaded the first time a request is made (see `csavehttp.h` for why
/// it is not linked); HTTP/1.1 is asked for because HTTP/2 is untested against the stores.
/// Connections are kept between requests in a few curl handles, one per request in flight: an
/// upload's part thread and the caller each take their own.
public final class HTTPConnections: @unchecked Sendable {
    private let idleTimeout: Int
    private let totalTimeout: Int
    /// PEM certificates trusted instead of the system's CAs (a private CA, a self-signed server).
    private let trustedCertificates: String?
    private let lock = NSLock()
    /// Handles not in use (curl handles may not serve two threads at once).
    private var idle: [UnsafeMutableRawPointer] = []

    /// Whole seconds; an infinite timeout is none (0 to curl).
    public init(idleTimeout: TimeInterval, totalTimeout: TimeInterval, trustedCertificates: String? = nil) {
        self.trustedCertificates = trustedCertificates
        func seconds(_ interval: TimeInterval) -> Int {
            guard interval.isFinite else { return 0 }
            return max(1, Int(min(interval, TimeInterval(Int32.max)).rounded(.up)))
        }
        self.idleTimeout = seconds(idleTimeout)
        self.totalTimeout = seconds(totalTimeout)
    }

    deinit { for handle in idle { savetool_http_close(handle) } }

    /// Sends the request; a failure to reach the store or to read its answer is an error,
    /// any HTTP answer a response.
    public func perform(_ request: HTTPRequest) -> Result<HTTPResponse, any Error> {
        var problem = [CChar](repeating: 0, count: 512)
        guard let handle = lock.withLock({ idle.popLast() }) ?? savetool_http_open(&problem, problem.count) else {
            return .failure(Unavailable(reason: Self.text(problem)))
        }
        defer { lock.withLock { idle.append(handle) } }
        let answer = Answer()
        let lines = request.headers.map { "\($0.0): \($0.1)" } + ["expect:"]  // no 100-continue round trip
        var status = 0
        // The callbacks reach `answer` through an unretained pointer: it lives through the call.
        let code = withExtendedLifetime(answer) {
            withCStrings(lines) { headers in
                request.body.withUnsafeBytes { body in
                    savetool_http_perform(
                        handle, request.method, request.url, headers, lines.count, body.baseAddress, body.count, request.sendsBody ? 1 : 0,
                        idleTimeout, idleTimeout, totalTimeout, trustedCertificates,
                        { context, data, length in Unmanaged<Answer>.fromOpaque(context!).takeUnretainedValue().header(data, length) },
                        { context, data, length in Unmanaged<Answer>.fromOpaque(context!).takeUnretainedValue().body(data, length) },
                        Unmanaged.passUnretained(answer).toOpaque(), &status, &problem, problem.count)
                }
            }
        }
        guard code == 0 else {
            if code == Self.badCAFile, let trustedCertificates {
                return .failure(SaveError(.badData, file: trustedCertificates, "cannot be used as trusted certificates (libcurl: \(Self.text(problem))), expected PEM certificates"))
            }
            if Self.untrustedCodes.contains(code) { return .failure(Untrusted(reason: Self.text(problem), withOwnCertificates: trustedCertificates != nil)) }
            if code == Self.timedOutCode { return .failure(TimedOut(reason: Self.text(problem))) }
            if Self.notConnectedCodes.contains(code) { return .failure(NotConnected(reason: Self.text(problem))) }
            return .failure(SaveError(.io, Self.text(problem)))
        }
        return .success(HTTPResponse(status: status, headers: answer.headers, body: answer.received))
    }

    /// The text of a C string buffer.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// libcurl could not be loaded: no use trying again.
    public struct Unavailable: Error {
        public var reason: String
    }

    /// No answer, or no byte of it, within the idle timeout: a server that accepts connections
    /// and says nothing (stopped, overloaded). Worth one more try, not many: each one waits
    /// the whole timeout.
    public struct TimedOut: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
        /// How many such tries a client makes before it gives up, whatever its other tries.
        public static let triesBeforeGivingUp = 2
    }

    /// No connection could be made (no such host, nothing listening): the request never left.
    public struct NotConnected: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The server's certificate is not trusted: no use trying again until someone changes what
    /// is trusted.
    public struct Untrusted: Error {
        public var reason: String
        /// Whether the certificates trusted were the caller's own, not the system's CAs.
        public var withOwnCertificates: Bool
    }

    /// libcurl's codes for a server certificate it refuses: PEER_FAILED_VERIFICATION 60,
    /// SSL_ISSUER_ERROR 83, SSL_PINNEDPUBKEYNOTMATCH 90; and SSL_CACERT_BADFILE 77, the system's
    /// CA file unreadable.
    private static let untrustedCodes: Set<Int32> = [60, 77, 83, 90]
    /// SSL_CACERT_BADFILE: with certificates of the caller's own, that file is at fault.
    private static let badCAFile: Int32 = 77
    /// OPERATION_TIMEDOUT.
    private static let timedOutCode: Int32 = 28
    /// COULDNT_RESOLVE_HOST 6, COULDNT_CONNECT 7.
    private static let notConnectedCodes: Set<Int32> = [6, 7]

    /// What comes back, gathered by curl's callbacks.
    private final class Answer {
        var headers: [String: String] = [:]
        var received = Data()

        func header(_ data: UnsafePointer<CChar>?, _ length: Int) -> Int {
            guard let data else { return length }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            // A status line starts a new set of headers (after an interim answer).
            if line.hasPrefix("HTTP/") { headers = [:] }
            if let colon = line.firstIndex(of: ":") {
                headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return length
        }

        func body(_ data: UnsafePointer<CChar>?, _ length: Int) -> Int {
            if let data { received.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length) }
            return length
        }
    }
}

/// Calls `body` with the strings as an array of C strings, alive for the call.
private func withCStrings<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer<CChar>($0) }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
