import Foundation
import SaveKit
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The subset of the S3 API a backup repository needs, over path-style URLs, signed with
/// ``SigV4``, synchronous (the repository is).
///
/// HTTP goes through Foundation's `URLSession` rather than async-http-client: requests here
/// are few and large, one at a time, from synchronous code, and `URLSession` costs the build
/// nothing where async-http-client brings swift-nio and BoringSSL to compile on every clean
/// build (minutes on two cores, for every test run in CI).
public final class S3Client: Sendable {
    public let environment: AWSEnvironment
    public let bucket: String
    /// How long one request may take before it counts as failed (and is tried again).
    public let timeout: TimeInterval
    /// Tries per request when the store does not answer or answers 5xx; then `busy` (exit 75).
    public let attempts: Int
    private let signer: SigV4
    private let session: URLSession

    public init(environment: AWSEnvironment, bucket: String, timeout: TimeInterval = 30, attempts: Int = 4) {
        self.environment = environment
        self.bucket = bucket
        self.timeout = timeout
        self.attempts = attempts
        signer = SigV4(accessKey: environment.accessKey, secretKey: environment.secretKey, region: environment.region)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 4
        session = URLSession(configuration: configuration)
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: Data
        public func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    }

    /// Sends one request, tried again with backoff while the store does not answer or fails on
    /// its side; a 4xx answer comes back as it is, for the caller to read.
    public func send(_ method: String, key: String? = nil, query: [(String, String)] = [], headers extra: [(String, String)] = [], body: Data = Data()) throws -> Response {
        let path = "/" + bucket + (key.map { "/" + $0 } ?? "")
        var lastProblem = ""
        for attempt in 1...attempts {
            if attempt > 1 { Thread.sleep(forTimeInterval: 0.2 * pow(2, Double(attempt - 2))) }
            let request = signed(method, path: path, query: query, headers: extra, body: body)
            switch perform(request) {
            case .success(let response) where response.status >= 500 || response.status == 429:
                lastProblem = "answered \(response.status) \(Self.errorCode(response.body) ?? "")"
            case .success(let response):
                return response
            case .failure(let error):
                lastProblem = error.localizedDescription
            }
        }
        throw SaveError(.busy, file: "s3://\(bucket)" + (key.map { "/" + $0 } ?? ""), "the object store at \(environment.endpoint.absoluteString) did not answer (\(lastProblem)) after \(attempts) tries")
    }

    private func signed(_ method: String, path: String, query: [(String, String)], headers extra: [(String, String)], body: Data) -> URLRequest {
        let timestamp = SigV4.timestamp(Date())
        let payloadHash = SigV4.sha256Hex(body)
        var host = environment.endpoint.host ?? ""
        if let port = environment.endpoint.port { host += ":\(port)" }
        // The headers URLSession would add on its own are set and signed here (a compressed
        // answer is refused with `identity`); `Connection`, hop-by-hop, is left to it unsigned,
        // since a server may never see it.
        var headers = [
            ("host", host), ("x-amz-date", timestamp), ("x-amz-content-sha256", payloadHash),
            ("accept", "*/*"), ("accept-encoding", "identity"), ("accept-language", "en"),
        ] + extra
        let sendsBody = !body.isEmpty || method == "PUT" || method == "POST"
        if sendsBody {
            headers.append(("content-length", String(body.count)))
            // URLSession would call a POST body a form, and a server may then read it as one.
            if !extra.contains(where: { $0.0.lowercased() == "content-type" }) {
                headers.append(("content-type", method == "POST" ? "application/xml" : "application/octet-stream"))
            }
        }
        if let token = environment.sessionToken { headers.append(("x-amz-security-token", token)) }
        let authorization = signer.authorization(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, timestamp: timestamp)
        let encodedPath = SigV4.encodePath(path)
        let encodedQuery = query.map { SigV4.encode($0.0) + "=" + SigV4.encode($0.1) }.joined(separator: "&")
        let base = environment.endpoint.absoluteString.hasSuffix("/") ? String(environment.endpoint.absoluteString.dropLast()) : environment.endpoint.absoluteString
        var request = URLRequest(url: URL(string: base + encodedPath + (encodedQuery.isEmpty ? "" : "?" + encodedQuery))!)
        request.httpMethod = method
        for (name, value) in headers where name != "host" { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(authorization, forHTTPHeaderField: "Authorization")
        // A large body (a part) is read from a stream: given as `httpBody`, URLSession would
        // copy it whole first, a second 5 MiB held per part in flight. The length is signed and
        // set above, so it does not go chunked.
        if sendsBody { if body.count > 1 << 20 { request.httpBodyStream = BodyStream(body) } else { request.httpBody = body } }
        return request
    }

    private func perform(_ request: URLRequest) -> Result<Response, any Error> {
        final class Outcome: @unchecked Sendable { var result: Result<Response, any Error>? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                outcome.result = .failure(error)
            } else if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (name, value) in http.allHeaderFields { headers["\(name)"] = "\(value)" }
                outcome.result = .success(Response(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                outcome.result = .failure(SaveError(.io, "the object store's answer is not HTTP"))
            }
            done.signal()
        }
        task.resume()
        done.wait()
        return outcome.result!
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
            return SaveError(.notFound, file: "s3://\(bucket)", "no such bucket (\(code))")
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

/// A request body read straight out of its `Data`: `InputStream(data:)` and `httpBody` would
/// each copy it whole first.
final class BodyStream: InputStream {
    private let body: Data
    private var offset = 0
    private var status: Stream.Status = .notOpen

    init(_ body: Data) {
        self.body = body
        super.init(data: Data())
    }

    override func open() { status = .open }
    override func close() { status = .closed }
    override var streamStatus: Stream.Status { status }
    override var hasBytesAvailable: Bool { offset < body.count }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        let count = min(length, body.count - offset)
        body.copyBytes(to: buffer, from: offset..<offset + count)
        offset += count
        if offset == body.count { status = .atEnd }
        return count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool { false }
}
