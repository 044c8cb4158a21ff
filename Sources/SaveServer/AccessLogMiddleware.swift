import Foundation
import HTTPTypes
import Hummingbird

/// One line per request: method, space, slot, status (with the version answered), body bytes
/// in and out, milliseconds and device. Never a header's value but the device's, never a body: a token cannot reach the log.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let log: @Sendable (String) -> Void
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let read = BodyBytes()
        let response: Response
        do { response = try await BodyBytes.$current.withValue(read) { try await next(request, context) } } catch let error as HTTPError {
            response = Response(status: error.status)
        }
        let elapsed = ContinuousClock.now - started
        // Tenths of a millisecond by hand: `String(format:)` per request showed in profiles.
        let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
        // The bytes of the body as read whole, not as its Content-Length claims (a body that
        // stalled, or one refused by its length, counts none).
        let received = read.count
        let sent = response.body.contentLength ?? 0
        metrics.request(status: response.status.code, bytesIn: received, bytesOut: sent)
        let (space, slot) = Self.names(in: request.uri.path)
        let device = request.headers[HTTPField.Name("Device-Id")!].map { Self.printable($0.prefix(64)) } ?? "-"
        let version = response.headers[.eTag].map { " version=" + Self.printable($0.prefix(24)).replacingOccurrences(of: "\"", with: "") } ?? ""
        log("\(request.method) \(space) \(slot) \(response.status.code)\(version) in=\(received) out=\(sent) \(tenths / 10).\(tenths % 10)ms device=\(device)")
        return response
    }

    /// The space and slot a path names, as far as they are names (`-` otherwise).
    static func names(in path: String) -> (String, String) {
        guard path.hasPrefix("/v1/spaces/") else { return (printable(path.prefix(80)), "-") }
        let rest = path.dropFirst("/v1/spaces/".count)
        guard let range = rest.range(of: "/slots") else { return (printable(rest.prefix(80)), "-") }
        let slot = rest[range.upperBound...].drop { $0 == "/" }
        return (printable(rest[..<range.lowerBound].prefix(200)), slot.isEmpty ? "-" : printable(slot.prefix(300)))
    }

    /// Only printable ASCII reaches the log: a request cannot forge a line.
    static func printable(_ text: Substring) -> String {
        String(text.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7F ? Character($0) : "?" })
    }
}

/// The size of the request's body once the route has read it whole, for the access log and the
/// metrics.
final class BodyBytes: @unchecked Sendable {
    @TaskLocal static var current: BodyBytes?
    private let lock = NSLock()
    private var value = 0
    var count: Int {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
