import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOPosix
import SaveKit
import SaveStorage
import SaveSync

/// How `savetool serve` runs: where it listens, where versions go, who may do what, and its limits.
public struct SyncServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (the tests do); the port taken is handed to `onRunning`.
    public var port = 8787
    public var storage: any SaveStorage
    /// `nil`: no tokens, and the server must listen on a loopback address only.
    public var tokens: TokenList?
    /// The file `tokens` came from, read again while the server runs when it changes.
    public var tokensFile: String?
    public var kinds: [SaveKind]
    public var registry: CodecRegistry
    /// A larger body is refused with 413 before it is read.
    public var maxBody = 16 << 20
    /// A connection with nothing to read or write for this long is closed; longer than
    /// `bodyTimeout`, so that a body that stalls is answered 408 before its connection goes.
    public var idleTimeout: TimeAmount = .seconds(32)
    /// A request whose body has not all come in by then gets 408 (a slow client).
    public var bodyTimeout: Duration = .seconds(30)
    public var maxConnections = 512
    /// One line per request (method, space, slot, status, bytes, milliseconds, device).
    public var accessLog: @Sendable (String) -> Void = { _ in }
    /// Where the heads go once a day (`--backup-repo`), and how many days are kept.
    public var backups: DailyBackups.Repository?
    public var keepBackups = 7
    /// Versions kept per slot; older ones are thinned (each of the last `keepBackups` days'
    /// last version and parked pushes younger than 30 days stay). `nil` keeps every version.
    public var keepVersions: Int? = 100
    /// TLS in the server itself; `nil` serves plain HTTP (behind a terminating proxy).
    public var tls: ServerTLS?

    public init(storage: any SaveStorage, tokens: TokenList?, kinds: [SaveKind], registry: CodecRegistry) {
        (self.storage, self.tokens, self.kinds, self.registry) = (storage, tokens, kinds, registry)
    }

    /// Whether `host` can be reached only from this machine.
    public var isLoopback: Bool { ["127.0.0.1", "::1", "localhost"].contains(host) || host.hasPrefix("127.") }
}

/// The sync server: the HTTP API of the spec (server.md) over ``PushService`` and ``SlotStore``.
///
/// ```swift
/// let app = try SyncServer.buildApplication(configuration) { port in print("listening on \(port)") }
/// try await app.runService()
/// ```
public enum SyncServer {
    /// What a failure to start means for the person who started the server: NIO's bind error
    /// (`bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`) names neither the
    /// address nor what to do.
    public static func explainStartFailure(_ error: any Error, host: String, port: Int) -> any Error {
        let place = "\(host):\(port)"
        if error is SocketAddressError.UnknownHost {
            return SaveError(.usage, file: place, "no such host, expected an address or a name of this machine (127.0.0.1, 0.0.0.0, …)")
        }
        guard let failure = error as? IOError else { return error }
        switch failure.errnoCode {
        case EADDRINUSE: return SaveError(.busy, file: place, "in use by another process, expected a free port")
        case EACCES: return SaveError(.permissionDenied, file: place, "this user may not listen there (ports below 1024 need privileges), expected a port it may use")
        case EADDRNOTAVAIL: return SaveError(.usage, file: place, "not an address of this machine, expected one of its own (127.0.0.1, 0.0.0.0, …)")
        default: return SaveError(.io, file: place, "cannot listen there: \(failure)")
        }
    }

    public static func buildApplication(
        _ configuration: SyncServerConfiguration, onRunning: @escaping @Sendable (Int) -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        if configuration.tokens == nil, !configuration.isLoopback {
            throw SaveError(.usage, "listening on \(configuration.host) without tokens, expected a tokens file or a loopback address (127.0.0.1)")
        }
        let store = SlotStore(storage: configuration.storage)
        var service = try PushService(store: store, kinds: configuration.kinds, registry: configuration.registry)
        (service.keepVersions, service.keepDays) = (configuration.keepVersions, configuration.keepBackups)
        let backups = configuration.backups.map { DailyBackups(repository: $0, keep: configuration.keepBackups, store: store) }
        let routes = SyncRoutes(configuration: configuration, service: service, metrics: ServerMetrics(), backups: backups)
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: AccessLogMiddleware(log: configuration.accessLog, metrics: routes.metrics))
        routes.add(to: router)
        var logger = Logger(label: "savetool-serve")
        logger.logLevel = .critical  // the access log is the server's voice; NIO's own lines would hold no more
        let http = HTTPServerBuilder.http1(configuration: .init(idleTimeout: configuration.idleTimeout))
        return Application(
            router: router,
            server: try configuration.tls.map { try .tls(http, tlsConfiguration: try $0.configuration()) } ?? http,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "savetool",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: { channel in
                onRunning(channel.localAddress?.port ?? configuration.port)
                if let backups {
                    let log = configuration.accessLog
                    Task.detached { await backups.daily(log: log) }
                }
            },
            logger: logger)
    }
}
