import Foundation
import SaveHTTP
import SaveKit

/// The subset of the S3 API a backup repository needs, over path-style URLs, signed with
/// ``SigV4``, synchronous (the repository is).
///
/// HTTP goes through libcurl (``HTTPConnections``), loaded only when a request is made, rather
/// than async-http-client or `URLSession`: requests here are few and large, one at a time, from
/// synchronous code. async-http-client brings swift-nio and BoringSSL to compile on every clean
/// build (minutes on two cores, for every test run in CI); `URLSession` links libcurl and two
/// dozen libraries into every command, a small `convert` included.
public final class S3Client: Sendable {
    public let environment: AWSEnvironment
    public let bucket: String
    /// How long one request may take before it counts as failed (and is tried again).
    public let timeout: TimeInterval
    /// Tries per request when the store does not answer or answers 5xx; then `busy` (exit 75).
    public let attempts: Int
    private let signer: SigV4
    private let connections: HTTPConnections
    /// Whether a store that went silent is not waited on again for a while (one command's run:
    /// its clean-up is left to the next run). A long-lived server keeps trying each request.
    public let givesUpOnSilence: Bool
    /// When the store last went silent.
    private let silence = Silence()

    public init(environment: AWSEnvironment, bucket: String, timeout: TimeInterval = 30, attempts: Int = 4, givesUpOnSilence: Bool = false) {
        self.givesUpOnSilence = givesUpOnSilence
        self.environment = environment
        self.bucket = bucket
        self.timeout = timeout
        self.attempts = attempts
        signer = SigV4(accessKey: environment.accessKey, secretKey: environment.secretKey, region: environment.region)
        connections = HTTPConnections(idleTimeout: timeout, totalTimeout: timeout * 4)
    }

    public typealias Response = HTTPResponse

    /// Sends one request, tried again with backoff while the store does not answer or fails on
    /// its side; a 4xx answer comes back as it is, for the caller to read.
    public func send(_ method: String, key: String? = nil, query: [(String, String)] = [], headers extra: [(String, String)] = [], body: Data = Data()) throws -> Response {
        let path = "/" + bucket + (key.map { "/" + $0 } ?? "")
        let place = "s3:/" + path
        // A store that just went silent on a request is not waited on again at once: a failed
        // run's clean-up (an upload to abort, a lock to give back) would wait a minute per step.
        // Those are left to the next run, which takes over a dead lock.
        if givesUpOnSilence, let problem = silence.recent(within: timeout) {
            throw SaveError(.busy, file: place, "the object store at \(environment.endpoint.absoluteString) did not answer (\(problem)) moments ago; not tried again yet")
        }
        var lastProblem = ""
        var tries = 0, timeouts = 0
        trying: for attempt in 1...attempts {
            tries = attempt
            if attempt > 1 { Thread.sleep(forTimeInterval: 0.2 * pow(2, Double(attempt - 2))) }
            let request = signed(method, path: path, query: query, headers: extra, body: body)
            switch connections.perform(request) {
            // 501 Not Implemented is the store's final word (an API it lacks), not a hiccup.
            case .success(let response) where (response.status >= 500 && response.status != 501) || response.status == 429:
                lastProblem = "answered \(response.status) \(Self.errorCode(response.body) ?? "")"
            case .success(let response):
                return response
            case .failure(let error as HTTPConnections.Unavailable):
                throw SaveError(.io, file: "s3://\(bucket)", "cannot talk to the object store: \(error.reason)")
            case .failure(let error as HTTPConnections.Untrusted):
                throw SaveError(.permissionDenied, file: "s3://\(bucket)", "the object store is not trusted: \(error.reason), expected a certificate from a trusted CA")
            case .failure(let error as HTTPConnections.TimedOut):
                // Each such try waits the whole timeout: a few are enough to tell a silent store.
                lastProblem = error.reason
                timeouts += 1
                if timeouts == HTTPConnections.TimedOut.triesBeforeGivingUp {
                    silence.began(error.reason)
                    break trying
                }
            case .failure(let error):
                lastProblem = "\(error)"
            }
        }
        throw SaveError(.busy, file: place, "the object store at \(environment.endpoint.absoluteString) did not answer (\(lastProblem)) after \(tries) tries")
    }

    private func signed(_ method: String, path: String, query: [(String, String)], headers extra: [(String, String)], body: Data) -> HTTPRequest {
        let timestamp = SigV4.timestamp(Date())
        let payloadHash = SigV4.sha256Hex(body)
        var host = environment.endpoint.host ?? ""
        if let port = environment.endpoint.port { host += ":\(port)" }
        // Every header the store sees is set and signed here (a compressed answer is refused
        // with `identity`).
        var headers = [
            ("host", host), ("x-amz-date", timestamp), ("x-amz-content-sha256", payloadHash),
            ("accept", "*/*"), ("accept-encoding", "identity"),
        ] + extra
        let sendsBody = !body.isEmpty || method == "PUT" || method == "POST"
        if sendsBody {
            headers.append(("content-length", String(body.count)))
            // Without a type of its own, a POST body would be taken for a form.
            if !extra.contains(where: { $0.0.lowercased() == "content-type" }) {
                headers.append(("content-type", method == "POST" ? "application/xml" : "application/octet-stream"))
            }
        }
        if let token = environment.sessionToken { headers.append(("x-amz-security-token", token)) }
        let authorization = signer.authorization(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, timestamp: timestamp)
        let encodedPath = SigV4.encodePath(path)
        let encodedQuery = query.map { SigV4.encode($0.0) + "=" + SigV4.encode($0.1) }.joined(separator: "&")
        let base = environment.endpoint.absoluteString.hasSuffix("/") ? String(environment.endpoint.absoluteString.dropLast()) : environment.endpoint.absoluteString
        return HTTPRequest(
            method: method, url: base + encodedPath + (encodedQuery.isEmpty ? "" : "?" + encodedQuery),
            headers: headers + [("authorization", authorization)], body: body, sendsBody: sendsBody)
    }

    /// The `<Code>` of an S3 error document.
    public static func errorCode(_ body: Data) -> String? { firstElement("Code", in: body) }

    /// The text of the first `<name>` element: the S3 answers read here are small and flat.
    static func firstElement(_ name: String, in body: Data) -> String? {
        elements(name, in: body).first
    }

    /// Every `<name>` element's text; `raw` leaves entities as they are (for an element holding
    /// others, whose own texts are unescaped when they are read, once).
    static func elements(_ name: String, in body: Data, raw: Bool = false) -> [String] {
        let text = String(decoding: body, as: UTF8.self)
        var found: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            let inner = String(rest[open.upperBound..<close.lowerBound])
            found.append(raw ? inner : unescape(inner))
            rest = rest[close.upperBound...]
        }
        return found
    }

    /// Text made safe to stand in an element of a request's XML body.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The error an answer means, naming the object: refused credentials are `permissionDenied`
    /// (exit 77), a missing bucket or object `notFound` (66), a failed condition `conflict`.
    public func failure(_ response: Response, key: String?) -> SaveError {
        let code = Self.errorCode(response.body) ?? "HTTP \(response.status)"
        let place = "s3://\(bucket)" + (key.map { "/" + $0 } ?? "")
        switch (response.status, code) {
        case (403, _), (_, "InvalidAccessKeyId"), (_, "SignatureDoesNotMatch"), (_, "AccessDenied"), (_, "ExpiredToken"), (_, "InvalidToken"),
            (_, "AuthorizationHeaderMalformed"):
            return SaveError(.permissionDenied, file: place, "the object store refused the credentials (\(code)), expected a key and secret it accepts")
        case (_, "NoSuchBucket"):
            return SaveError(.notFound, file: "s3://\(bucket)", "no such bucket (\(code)), expected an existing bucket the credentials may use")
        case (_, "NoSuchUpload"):
            // The object is not missing: the upload under way was given up (aborted elsewhere).
            return SaveError(.io, file: place, "the upload was aborted before it completed (\(code)); try again")
        case (404, _):
            return SaveError(.notFound, file: place, "no such object (\(code))")
        case (412, _), (409, _):
            return SaveError(.conflict, file: place, "exists already (\(code)), expected a new object")
        default:
            return SaveError(.io, file: place, "the object store answered \(response.status) (\(code))")
        }
    }
}

/// When an object store last went silent, and why.
private final class Silence: @unchecked Sendable {
    private let lock = NSLock()
    private var since: (time: ContinuousClock.Instant, problem: String)?

    func began(_ problem: String) { lock.withLock { since = (.now, problem) } }

    /// The problem, if the store went silent less than `seconds` ago.
    func recent(within seconds: TimeInterval) -> String? {
        lock.withLock {
            guard let since, ContinuousClock.now - since.time < .milliseconds(Int(seconds * 1000)) else { return nil }
            return since.problem
        }
    }
}
