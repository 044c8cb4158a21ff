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
        let version = response.headers[.eTag].map { " version=" + Self.printable($0.prefix(24), dropping: "\"") } ?? ""
        log("\(request.method) \(space) \(slot) \(response.status.code)\(version) in=\(received) out=\(sent) \(tenths / 10).\(tenths % 10)ms device=\(device)")
        return response
    }

    /// The space and slot a path names, as far as they are names (`-` otherwise): the space
    /// ends at the first segment `slots`, as the routes read it. By bytes and scalars:
    /// Foundation's `range(of:)` and a `Character` per letter showed in a profile.
    static func names(in path: String) -> (String, String) {
        let prefix = "/v1/spaces/"
        guard path.hasPrefix(prefix) else { return (printable(path.prefix(80)), "-") }
        let rest = path.dropFirst(prefix.count)
        let slots = "/slots".utf8
        let segment = rest.utf8.indices.first { start in
            let after = rest.utf8[start...].dropFirst(slots.count)
            return rest.utf8[start...].starts(with: slots) && (after.isEmpty || after.first == UInt8(ascii: "/"))
        }
        guard let start = segment else {
            return (printable(rest.prefix(80)), "-")
        }
        let after = rest.utf8.index(start, offsetBy: slots.count)
        let slot = rest[after...].drop { $0 == "/" }
        return (printable(rest[..<start].prefix(200)), slot.isEmpty ? "-" : printable(slot.prefix(300)))
    }

    /// Only printable ASCII reaches the log, each other character as `?` per scalar: a request
    /// cannot forge a line. `dropping` is left out.
    static func printable(_ text: Substring, dropping dropped: Unicode.Scalar? = nil) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars where scalar != dropped {
            bytes.append(scalar.value > 0x20 && scalar.value < 0x7F ? UInt8(scalar.value) : UInt8(ascii: "?"))
        }
        return String(decoding: bytes, as: UTF8.self)
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
